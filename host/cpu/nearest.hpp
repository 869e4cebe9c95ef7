// Selection of the k nearest entries of one distance row under the neighbour order (distance,
// then index; the row's own point excluded), shared by exact_knn and the quality measures.
#pragma once
#include <algorithm>
#include <vector>

#include "orrery/math/distance.hpp"
#include "orrery/types.hpp"

namespace orrery {

// A bounded max-heap: most of the row is rejected by one comparison with the worst kept entry.
// `heap` is scratch; `out` receives the k nearest, nearest first.
inline void select_nearest(const std::vector<double>& dist, index_t self, int k, std::vector<index_t>& heap,
                           std::vector<index_t>& out) {
  const index_t N = static_cast<index_t>(dist.size());
  const auto before = [&](index_t a, index_t b) { return math::neighbour_before(dist[a], a, dist[b], b); };
  heap.clear();
  for (index_t l = 0; l < N; ++l) {
    if (l == self) continue;
    if (static_cast<int>(heap.size()) < k) {
      heap.push_back(l);
      std::push_heap(heap.begin(), heap.end(), before);
    } else if (before(l, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), before);
      heap.back() = l;
      std::push_heap(heap.begin(), heap.end(), before);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), before);
  out.assign(heap.begin(), heap.end());
}

}  // namespace orrery
