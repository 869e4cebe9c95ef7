// Rank rows of the quality measures on the GPU: one thread per point runs the same selection and
// counting as the CPU (include/orrery/math/select.hpp) over the same double-precision distances
// (include/orrery/math/distance.hpp), in two passes over all points: pass 1 keeps the kmax nearest
// in each space, pass 2 counts the ranks beyond them. Per-thread heaps and keys live in global
// scratch (N x kmax); points are read from global memory, where they stay cached across threads.
// Integers come back (O(N kmax), once); the measures are summed on the host exactly as for the CPU.
#include <algorithm>
#include <vector>

#include "check.cuh"
#include "engines.cuh"
#include "orrery/error.hpp"
#include "orrery/math/launch.hpp"
#include "orrery/math/select.hpp"
#include "orrery/quality.hpp"

namespace orrery::cuda {
namespace {

constexpr int kThreads = 128;  // the most threads a block of rows takes (math::row_launch)

// Xq: the query rows (X itself but under inner_product: X with its last coordinate 0).
__device__ double input_distance(const double* X, const double* Xq, int dx, long long N, bool distance_matrix,
                                 long long i, long long l) {
  if (distance_matrix) {
    const double v = X[i * N + l];
    return v * v;
  }
  return math::squared_distance(Xq + i * dx, X + l * dx, dx);
}

struct Scratch {
  double *hd_in, *hd_out, *kd_in, *kd_out;
  long long *v, *ki_in, *ki_out, *diff_in, *diff_out;
  int *tag_in, *tag_out;
};

// Thread t makes row t, of point queries[t] (of point t when queries is null).
__global__ void rank_rows_kernel(const double* X, const double* Xq, int dx, const double* Y, int dy, long long N,
                                 int kmax, bool distance_matrix, const long long* queries, long long rows, Scratch s,
                                 long long* n_out, long long* rho_out, long long* r_in) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= rows) return;
  const long long i = queries ? queries[t] : t;
  const long long off = t * kmax;
  double *hd_in = s.hd_in + off, *hd_out = s.hd_out + off;
  long long *v = s.v + off, *n = n_out + off;
  int size_in = 0, size_out = 0;
  for (long long l = 0; l < N; ++l) {
    if (l == i) continue;
    math::heap_offer(input_distance(X, Xq, dx, N, distance_matrix, i, l), l, hd_in, v, size_in, kmax);
    math::heap_offer(math::squared_distance(Y + i * dy, Y + l * dy, dy), l, hd_out, n, size_out, kmax);
  }
  math::heap_sort_ascending(hd_in, v, kmax);
  math::heap_sort_ascending(hd_out, n, kmax);

  // Ranks known from the other list; the rest become keys to count in pass 2.
  double *kd_in = s.kd_in + off, *kd_out = s.kd_out + off;
  long long *ki_in = s.ki_in + off, *ki_out = s.ki_out + off;
  int *tag_in = s.tag_in + off, *tag_out = s.tag_out + off;
  long long *rho = rho_out + off, *r = r_in + off;
  int m_in = 0, m_out = 0;
  for (int l = 0; l < kmax; ++l) {
    int p = -1;
    for (int q = 0; q < kmax && p < 0; ++q)
      if (v[q] == n[l]) p = q;
    if (p >= 0) {
      rho[l] = p + 1;
    } else {
      kd_in[m_in] = input_distance(X, Xq, dx, N, distance_matrix, i, n[l]);
      ki_in[m_in] = n[l];
      tag_in[m_in++] = l;
    }
    p = -1;
    for (int q = 0; q < kmax && p < 0; ++q)
      if (n[q] == v[l]) p = q;
    if (p >= 0) {
      r[l] = p + 1;
    } else {
      kd_out[m_out] = math::squared_distance(Y + i * dy, Y + v[l] * dy, dy);
      ki_out[m_out] = v[l];
      tag_out[m_out++] = l;
    }
  }
  if (m_in == 0 && m_out == 0) return;
  math::sort_keys(kd_in, ki_in, tag_in, m_in);
  math::sort_keys(kd_out, ki_out, tag_out, m_out);
  long long *diff_in = s.diff_in + t * (kmax + 1), *diff_out = s.diff_out + t * (kmax + 1);
  for (int q = 0; q <= kmax; ++q) diff_in[q] = diff_out[q] = 0;
  const double far_in = m_in ? kd_in[m_in - 1] : -1.0, far_out = m_out ? kd_out[m_out - 1] : -1.0;
  for (long long l = 0; l < N; ++l) {
    if (l == i) continue;
    if (m_in) {
      const double d = input_distance(X, Xq, dx, N, distance_matrix, i, l);
      if (d <= far_in) ++diff_in[math::first_key_after(d, l, kd_in, ki_in, m_in)];
    }
    if (m_out) {
      const double d = math::squared_distance(Y + i * dy, Y + l * dy, dy);
      if (d <= far_out) ++diff_out[math::first_key_after(d, l, kd_out, ki_out, m_out)];
    }
  }
  long long run = 0;
  for (int q = 0; q < m_in; ++q) rho[tag_in[q]] = 1 + (run += diff_in[q]);
  run = 0;
  for (int q = 0; q < m_out; ++q) r[tag_out[q]] = 1 + (run += diff_out[q]);
}

}  // namespace

RankRows rank_rows(const MatrixD& X, const MatrixD& Y, int kmax, RankInput input,
                  const std::vector<index_t>& queries, int device) {
  ORRERY_CUDA_CHECK(cudaSetDevice(device));
  const bool distance_matrix = input == RankInput::distance_matrix;
  const long long N = Y.rows, R = queries.empty() ? N : static_cast<long long>(queries.size());
  const size_t nk = static_cast<size_t>(R) * kmax, nk1 = static_cast<size_t>(R) * (kmax + 1);
  DeviceBuffer<double> x, xq, y, hd_in(nk), hd_out(nk), kd_in(nk), kd_out(nk);
  DeviceBuffer<long long> v(nk), ki_in(nk), ki_out(nk), diff_in(nk1), diff_out(nk1), n(nk), rho(nk), r(nk), q;
  DeviceBuffer<int> tag_in(nk), tag_out(nk);
  x.upload(X.data.data(), X.data.size());
  if (input == RankInput::inner_product) {  // the queries [x_i, 0] (orrery/inner_product.hpp)
    MatrixD Q = X;
    for (index_t i = 0; i < Q.rows; ++i) Q(i, Q.cols - 1) = 0.0;
    xq.upload(Q.data.data(), Q.data.size());
  }
  y.upload(Y.data.data(), Y.data.size());
  const std::vector<long long> q_host(queries.begin(), queries.end());
  q.upload(q_host.data(), q_host.size());
  Scratch s{hd_in.get(), hd_out.get(), kd_in.get(), kd_out.get(),  v.get(),       ki_in.get(),
            ki_out.get(), diff_in.get(), diff_out.get(), tag_in.get(), tag_out.get()};
  // Each thread's row is a long, independent loop over all N points: blocks small enough that the
  // rows reach every multiprocessor (4096 query rows are 128 one-warp blocks, not 32 of 128
  // threads); the same rows, the same results.
  int multiprocessors = 0;
  ORRERY_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  const math::RowLaunch shape = math::row_launch(R, multiprocessors, kThreads);
  if (shape.blocks > 0) {
    rank_rows_kernel<<<static_cast<unsigned>(shape.blocks), shape.threads>>>(
        x.get(), input == RankInput::inner_product ? xq.get() : x.get(), static_cast<int>(X.cols), y.get(),
        static_cast<int>(Y.cols), N, kmax, distance_matrix, queries.empty() ? nullptr : q.get(), R, s, n.get(),
        rho.get(), r.get());
    ORRERY_CUDA_LAUNCHED("rank_rows_kernel");
  }
  RankRows rows;
  rows.num_points = N;
  rows.kmax = kmax;
  rows.queries = queries;
  rows.map_neighbors.resize(nk);
  rows.input_rank_of_map_nb.resize(nk);
  rows.map_rank_of_input_nb.resize(nk);
  std::vector<long long> tmp(nk);
  n.download(tmp.data(), nk);
  std::copy(tmp.begin(), tmp.end(), rows.map_neighbors.begin());
  rho.download(tmp.data(), nk);
  std::copy(tmp.begin(), tmp.end(), rows.input_rank_of_map_nb.begin());
  r.download(tmp.data(), nk);
  std::copy(tmp.begin(), tmp.end(), rows.map_rank_of_input_nb.begin());
  return rows;
}

}  // namespace orrery::cuda
