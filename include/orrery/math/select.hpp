// Neighbor selection and rank counting for one query, shared by the CPU row loops and the CUDA
// thread-per-row kernels. Order: (distance, index) lexicographic — nearer first, ties by index.
//
// A bounded max-heap keeps the k best seen so far (the worst at the root), so each further
// candidate costs one comparison unless it is better than the current worst. Ranks beyond the
// kept set are counted: rank(j) = 1 + #{l : (d_l, l) before (d_j, j)}, via a binary search of each
// l among the sorted keys whose ranks are wanted (O(log m) per l, no sorting of the row).
#pragma once
#include "orrery/math/distance.hpp"
#include "orrery/math/hd.hpp"

namespace orrery::math {

// Swaps entries a and b of the parallel (distance, index) arrays.
template <class T, class I>
ORRERY_HD void swap_entries(T* hd, I* hi, int a, int b) {
  const T td = hd[a];
  hd[a] = hd[b];
  hd[b] = td;
  const I ti = hi[a];
  hi[a] = hi[b];
  hi[b] = ti;
}

template <class T, class I>
ORRERY_HD void heap_sift_down(T* hd, I* hi, int size, int pos) {
  while (true) {
    const int l = 2 * pos + 1, r = l + 1;
    int worst = pos;
    if (l < size && neighbor_before(hd[worst], hi[worst], hd[l], hi[l])) worst = l;
    if (r < size && neighbor_before(hd[worst], hi[worst], hd[r], hi[r])) worst = r;
    if (worst == pos) return;
    swap_entries(hd, hi, pos, worst);
    pos = worst;
  }
}

// Offers (d, j) to a max-heap of capacity k holding `size` entries.
template <class T, class I>
ORRERY_HD void heap_offer(T d, I j, T* hd, I* hi, int& size, int k) {
  if (size < k) {
    int pos = size++;
    hd[pos] = d;
    hi[pos] = j;
    while (pos > 0) {  // sift up
      const int parent = (pos - 1) / 2;
      if (!neighbor_before(hd[parent], hi[parent], hd[pos], hi[pos])) break;
      swap_entries(hd, hi, pos, parent);
      pos = parent;
    }
  } else if (neighbor_before(d, j, hd[0], hi[0])) {
    hd[0] = d;
    hi[0] = j;
    heap_sift_down(hd, hi, size, 0);
  }
}

// Turns the heap into ascending order (nearest first), in place.
template <class T, class I>
ORRERY_HD void heap_sort_ascending(T* hd, I* hi, int size) {
  for (int end = size - 1; end > 0; --end) {
    swap_entries(hd, hi, 0, end);
    heap_sift_down(hd, hi, end, 0);
  }
}

// The k nearest to row q of the row-major X (d columns) among `count` candidate rows cand[0..count)
// (q not among them, count >= k), by the exact squared distance and the neighbor order, sorted
// into hd / hi: the re-rank of the candidates a GEMM search kept. The same distances and order as a
// scan of all rows, so the result is that scan's whenever the candidates hold its k nearest.
template <class T, class I>
ORRERY_HD void nearest_candidates(const T* X, int d, I q, const I* cand, int count, int k, T* hd, I* hi) {
  int size = 0;
  for (int c = 0; c < count; ++c)
    heap_offer(squared_distance(X + q * d, X + cand[c] * d, d), cand[c], hd, hi, size, k);
  heap_sort_ascending(hd, hi, k);
}

// Sorts m keys ascending by insertion (m is a neighborhood size), carrying a tag along.
template <class T, class I>
ORRERY_HD void sort_keys(T* kd, I* ki, int* tag, int m) {
  for (int a = 1; a < m; ++a) {
    const T d = kd[a];
    const I i = ki[a];
    const int t = tag[a];
    int b = a - 1;
    while (b >= 0 && neighbor_before(d, i, kd[b], ki[b])) {
      kd[b + 1] = kd[b];
      ki[b + 1] = ki[b];
      tag[b + 1] = tag[b];
      --b;
    }
    kd[b + 1] = d;
    ki[b + 1] = i;
    tag[b + 1] = t;
  }
}

// Index of the first sorted key that (d, l) comes before; m when none. The caller adds 1 to
// diff[result]; after the row, rank(key q) = 1 + sum_{p <= q} diff[p].
template <class T, class I>
ORRERY_HD int first_key_after(T d, I l, const T* kd, const I* ki, int m) {
  int lo = 0, hi = m;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (neighbor_before(d, l, kd[mid], ki[mid])) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

}  // namespace orrery::math
