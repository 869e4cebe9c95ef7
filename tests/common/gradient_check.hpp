// The one finite-difference gradient checker of the suite: central differences of f along each
// checked coordinate against the analytic gradient, every family's gradient (PE, PLSV, NeRV, HSSNE,
// the class model) through it.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace orrery::test {

struct FdOptions {
  double h = 1e-6;      // the central difference's half step
  double tol = 1e-6;    // |analytic - fd| <= tol * (1 + |fd|)
  size_t stride = 1;    // check coordinates 0, stride, 2 stride, ...
  std::string what;     // names the gradient in failures
};

// f(x) for x a copy of the point with one coordinate moved; grad the analytic gradient at x.
inline ::testing::AssertionResult gradient_matches(const std::function<double(const std::vector<double>&)>& f,
                                                   const std::vector<double>& x, const std::vector<double>& grad,
                                                   const FdOptions& o = {}) {
  if (grad.size() != x.size())
    return ::testing::AssertionFailure() << o.what << ": gradient has " << grad.size() << " entries for " << x.size()
                                         << " coordinates";
  size_t bad = 0, first = 0;
  double first_fd = 0.0;
  for (size_t q = 0; q < x.size(); q += o.stride) {
    std::vector<double> a = x, b = x;
    a[q] += o.h;
    b[q] -= o.h;
    const double fd = (f(a) - f(b)) / (2 * o.h);
    const bool ok = std::isfinite(grad[q]) && std::abs(grad[q] - fd) <= o.tol * (1 + std::abs(fd));
    if (!ok && bad++ == 0) first = q, first_fd = fd;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(12);
  os << o.what << ": " << bad << " coordinate(s) disagree with central differences (h " << o.h << "); first "
     << first << ": analytic " << grad[first] << ", finite difference " << first_fd;
  return ::testing::AssertionFailure() << os.str();
}

}  // namespace orrery::test
