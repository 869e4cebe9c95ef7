// Methods whose ranks each own a contiguous block of rows (PE's objects, PLSV's documents): a
// rank's rows of a whole matrix, and every rank's rows gathered into the whole matrix on every rank.
// A checkpoint holds the whole matrix, so it resumes under any number of ranks.
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

#include "orrery/comm.hpp"
#include "orrery/types.hpp"

namespace orrery {

// Rows [b.begin, b.end) of M (a PeBlock or a PlsvBlock).
template <class Block>
MatrixD rows_of(const MatrixD& M, Block b) {
  MatrixD out(b.end - b.begin, M.cols);
  std::copy(M.data.begin() + b.begin * M.cols, M.data.begin() + b.end * M.cols, out.data.begin());
  return out;
}

// Every rank's rows (rank r's are block_of(r), in rank order) as one N-row matrix on every rank;
// one collective, issued by every rank.
template <class BlockOf>
MatrixD gather_rows(Comm& comm, const MatrixD& mine, index_t N, const BlockOf& block_of) {
  if (comm.size() == 1) return mine;
  std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) {
    const auto b = block_of(r);
    counts[static_cast<std::size_t>(r)] = static_cast<std::size_t>((b.end - b.begin) * mine.cols);
  }
  MatrixD all(N, mine.cols);
  comm.allgatherv(mine.data.data(), mine.data.size(), all.data.data(), counts);
  return all;
}

}  // namespace orrery
