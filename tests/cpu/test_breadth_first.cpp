// prep/breadth_first.hpp: the order the approximate search's queries and the t-SNE engine's
// renumbering of P follow.
#include <gtest/gtest.h>

#include <vector>

#include "prep/breadth_first.hpp"

namespace orrery {
namespace {

std::vector<index_t> order_of(const std::vector<std::vector<index_t>>& lists, index_t root) {
  return breadth_first(static_cast<index_t>(lists.size()), root, [&](index_t v, const auto& visit) {
    for (index_t u : lists[static_cast<size_t>(v)]) visit(u);
  });
}

TEST(BreadthFirst, LevelsInListOrderThenUnreachedInIndexOrder) {
  // 0 - {3, 1}, 3 - {5, 0}, 1 - {4}, 4 - {}, 5 - {1}; 2 and 6 form a second component (6 -> 2).
  const std::vector<std::vector<index_t>> lists = {{3, 1}, {4}, {}, {5, 0}, {}, {1}, {2}};
  EXPECT_EQ(order_of(lists, 0), (std::vector<index_t>{0, 3, 1, 5, 4, 2, 6}));
  // from another root; 6 is reached only from itself, after 2 (its index comes later)
  EXPECT_EQ(order_of(lists, 5), (std::vector<index_t>{5, 1, 4, 0, 3, 2, 6}));
  EXPECT_EQ(order_of(lists, 6), (std::vector<index_t>{6, 2, 0, 3, 1, 5, 4}));
}

TEST(BreadthFirst, EveryVertexOnceEvenWithRepeatsAndSelfLoops) {
  const std::vector<std::vector<index_t>> lists = {{0, 1, 1, 2}, {2, 0}, {1, 2}, {3}};
  const std::vector<index_t> order = order_of(lists, 2);
  EXPECT_EQ(order, (std::vector<index_t>{2, 1, 0, 3}));
  EXPECT_TRUE(order_of({}, 0).empty());
}

}  // namespace
}  // namespace orrery
