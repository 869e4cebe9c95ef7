// Splitting per-item work over a run's ranks where every item's result is its own (no sum across
// items): each rank computes its part of [0, n), then every rank gathers the others' parts, so
// every rank holds the whole array with the bits one process computes. Used by the NeRV engine,
// whose conjugate-gradient vectors stay whole on every rank and whose evaluations are split.
#pragma once
#include <cstddef>
#include <vector>

#include "orrery/comm.hpp"
#include "orrery/engines.hpp"

namespace orrery::cpu {

// Item offsets of every rank's part: R + 1 values, the first 0, the last n. Without a communicator
// (or with one rank) one part, [0, n).
struct SplitParts {
  Comm* comm = nullptr;  // null: one process
  std::vector<long long> bounds;

  long long begin() const { return bounds[static_cast<std::size_t>(comm ? comm->rank() : 0)]; }
  long long end() const { return bounds[static_cast<std::size_t>(comm ? comm->rank() : 0) + 1]; }
  bool split() const { return comm != nullptr; }

  // [0, n) in contiguous parts of near-equal size (hssne_rank_block's).
  static SplitParts even(Comm* comm, long long n) {
    SplitParts s;
    s.comm = comm && comm->size() > 1 ? comm : nullptr;
    const int ranks = s.comm ? s.comm->size() : 1;
    for (int r = 0; r < ranks; ++r) s.bounds.push_back(hssne_rank_block(n, r, ranks).first);
    s.bounds.push_back(n);
    return s;
  }
  // `blocks` fixed blocks, rank r taking a contiguous run of them (even over the blocks), the parts
  // in items: block b is [item(b), item(b + 1)).
  template <class ItemOf>
  static SplitParts of_blocks(Comm* comm, long long blocks, const ItemOf& item) {
    return even(comm, blocks).in_items(item);
  }
  // The same split with every bound b mapped to item(b): one split of blocks seen in another unit
  // (the blocks' rows, or their windows' values).
  template <class ItemOf>
  SplitParts in_items(const ItemOf& item) const {
    SplitParts s = *this;
    for (long long& v : s.bounds) v = item(v);
    return s;
  }

  // Every rank's part of data (`width` values an item, from item 0) replaced by its owner's. A
  // collective; nothing to do in one process.
  template <class T>
  void gather(T* data, std::size_t width) const {
    if (!comm) return;
    const std::size_t ranks = bounds.size() - 1, me = static_cast<std::size_t>(comm->rank());
    std::vector<std::size_t> counts(ranks);
    for (std::size_t r = 0; r < ranks; ++r) counts[r] = static_cast<std::size_t>(bounds[r + 1] - bounds[r]) * width;
    const std::vector<T> mine(data + static_cast<std::size_t>(bounds[me]) * width,
                              data + static_cast<std::size_t>(bounds[me + 1]) * width);
    comm->allgatherv(mine.data(), mine.size(), data + static_cast<std::size_t>(bounds[0]) * width, counts);
  }
};

}  // namespace orrery::cpu
