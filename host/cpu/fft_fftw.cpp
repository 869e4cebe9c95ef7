// RealRows and ComplexColumns on FFTW 3 (double precision). Plans are made once per shape and row
// count with FFTW_ESTIMATE, which picks the algorithm from the sizes alone (FFTW_MEASURE would time
// candidates and could pick differently from run to run, changing the bits) and leaves the sample
// arrays alone; the new-array execute functions are thread-safe.
#include <fftw3.h>

#include <map>
#include <mutex>
#include <string>

#include "cpu/fft.hpp"
#include "orrery/error.hpp"

namespace orrery::cpu {
namespace {

std::mutex& planner_mutex() {  // the FFTW planner is not thread-safe
  static std::mutex m;
  return m;
}

// Forward and inverse plans per row count.
struct Plans {
  std::map<int, std::pair<fftw_plan, fftw_plan>> by_count;
  std::pair<fftw_plan, fftw_plan> at(int count) const {
    const auto it = by_count.find(count);
    if (it == by_count.end()) internal_error("FFT: no plan for " + std::to_string(count) + " lines");
    return it->second;
  }
  ~Plans() {
    std::lock_guard<std::mutex> lock(planner_mutex());
    for (auto& [count, p] : by_count) {
      if (p.first) fftw_destroy_plan(p.first);
      if (p.second) fftw_destroy_plan(p.second);
    }
  }
};

fftw_complex* fc(Complex* p) { return reinterpret_cast<fftw_complex*>(p); }

}  // namespace

struct RealRows::Impl : Plans {};
struct ComplexColumns::Impl : Plans {};

RealRows::RealRows(int n, long out_stride, const std::vector<int>& counts, int, double* in, Complex* out)
    : impl_(std::make_unique<Impl>()) {
  if (n % 2 != 0) internal_error("RealRows: the length must be even");
  const int flags = FFTW_ESTIMATE | FFTW_DESTROY_INPUT;
  const int odist = static_cast<int>(out_stride);
  std::lock_guard<std::mutex> lock(planner_mutex());
  for (int c : counts) {
    if (c <= 0 || impl_->by_count.count(c)) continue;
    auto& p = impl_->by_count[c];
    p.first = fftw_plan_many_dft_r2c(1, &n, c, in, nullptr, 1, n, fc(out), nullptr, 1, odist, flags);
    p.second = fftw_plan_many_dft_c2r(1, &n, c, fc(out), nullptr, 1, odist, in, nullptr, 1, n, flags);
    if (!p.first || !p.second) internal_error("RealRows: FFTW could not plan the transform");
  }
}

RealRows::~RealRows() = default;

void RealRows::forward(int, int count, double* in, Complex* out) const {
  fftw_execute_dft_r2c(impl_->at(count).first, in, fc(out));
}

void RealRows::inverse(int, int count, Complex* in, double* out) const {
  fftw_execute_dft_c2r(impl_->at(count).second, fc(in), out);
}

const char* RealRows::library() { return "fftw3"; }

ComplexColumns::ComplexColumns(int n, long stride, const std::vector<int>& counts, int, Complex* sample)
    : impl_(std::make_unique<Impl>()) {
  const int s = static_cast<int>(stride);
  if (static_cast<long>(s) != stride) internal_error("ComplexColumns: stride beyond int");
  std::lock_guard<std::mutex> lock(planner_mutex());
  for (int c : counts) {
    if (c <= 0 || impl_->by_count.count(c)) continue;
    auto& p = impl_->by_count[c];
    p.first = fftw_plan_many_dft(1, &n, c, fc(sample), nullptr, s, 1, fc(sample), nullptr, s, 1, FFTW_FORWARD,
                                 FFTW_ESTIMATE);
    p.second = fftw_plan_many_dft(1, &n, c, fc(sample), nullptr, s, 1, fc(sample), nullptr, s, 1, FFTW_BACKWARD,
                                  FFTW_ESTIMATE);
    if (!p.first || !p.second) internal_error("ComplexColumns: FFTW could not plan the transform");
  }
}

ComplexColumns::~ComplexColumns() = default;

void ComplexColumns::forward(int, int count, Complex* data) const {
  fftw_execute_dft(impl_->at(count).first, fc(data), fc(data));
}

void ComplexColumns::inverse(int, int count, Complex* data) const {
  fftw_execute_dft(impl_->at(count).second, fc(data), fc(data));
}

}  // namespace orrery::cpu
