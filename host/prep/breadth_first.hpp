// A breadth-first order of a graph's vertices, for locality: consecutive vertices in it are graph
// neighbours, so work taken in this order (the approximate search's queries, the attraction over P's
// lists) reads data that the work just before it brought into the cache.
#pragma once
#include <cstddef>
#include <vector>

#include "orrery/types.hpp"

namespace orrery {

// Every vertex of [0, n) once: from `first_root`, each reached vertex's neighbours in the order
// for_each_neighbor(v, visit) passes them to visit(u); then from each vertex not yet reached, in
// index order. A neighbour outside [0, n) is a caller's bug and is not checked.
template <class ForEachNeighbor>
std::vector<index_t> breadth_first(index_t n, index_t first_root, const ForEachNeighbor& for_each_neighbor) {
  std::vector<index_t> order;
  order.reserve(static_cast<std::size_t>(n));
  std::vector<unsigned char> seen(static_cast<std::size_t>(n), 0);
  const auto visit = [&](index_t v) {
    if (!seen[static_cast<std::size_t>(v)]) seen[static_cast<std::size_t>(v)] = 1, order.push_back(v);
  };
  const auto spread_from = [&](index_t root) {  // root and everything reachable from it not yet seen
    std::size_t head = order.size();
    visit(root);
    for (; head < order.size(); ++head) for_each_neighbor(order[head], visit);
  };
  if (n > 0) spread_from(first_root);
  for (index_t v = 0; v < n; ++v)
    if (!seen[static_cast<std::size_t>(v)]) spread_from(v);
  return order;
}

}  // namespace orrery
