// Test helpers: random tensors, host<->std::vector<double> conversion and tolerant
// comparisons that report where and by how much two results differ.
// compare() uses a normwise relative error: max|got - want| / max|want|, which stays
// meaningful for float32 sums with cancellation (outputs near zero).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/ops.h"
#include "tensor/tensor.h"
#include "util/rng.h"

namespace dlt::test {

using Vec = std::vector<double>;

// A host tensor of uniform values in [lo, hi).
Tensor random_tensor(const Shape& shape, Rng& rng, float lo = -1.f, float hi = 1.f);
// Uniform values in [lo, hi) as doubles that are exactly representable in float32.
Vec random_vec(int64_t n, Rng& rng, double lo = -1.0, double hi = 1.0);

// A square convolution of n images hw x hw x c into k filters f x f with padding f / 2 ("same"
// for odd f at stride 1), with random x, w (in [-0.3, 0.3)) and b (in [-0.2, 0.2)) on the host.
struct ConvProblem {
  ConvDesc d;
  Tensor x, w, b;
};
ConvProblem random_conv_problem(int64_t n, int64_t hw, int64_t c, int64_t k, int64_t f, int64_t stride, int64_t groups,
                                Rng& rng);

// A float32 tensor on `device` holding v (rounded to float).
Tensor to_tensor(const Vec& v, const Shape& shape, Device device = Device::cpu());
// The elements of t (copied to the host first when t lives on a GPU).
Vec to_vec(const Tensor& t);

struct Comparison {
  double max_abs = 0;  // max |got - want|
  double scale = 0;    // max |want|
  double rel = 0;      // max_abs / max(scale, 1e-30)
  int64_t worst = -1;  // index of the largest difference
  double got_at_worst = 0, want_at_worst = 0;
  bool size_mismatch = false;
  std::string str() const;  // "rel 3.1e-07 (max |diff| 1.2e-06 at 17: 0.5 vs 0.5000012)"
};
Comparison compare(const Vec& got, const Vec& want);
// Element-wise: the largest |got - want| / max(|want|, floor) over the elements, so that an error
// in a small entry is not hidden by a large one elsewhere; floor (absolute) keeps entries that
// are zero up to rounding (sums that cancel) from dividing by ~0.
struct ElementwiseError {
  double rel = 0;      // max |got - want| / max(|want|, floor)
  int64_t worst = -1;  // its index
  double got_at_worst = 0, want_at_worst = 0, floor = 0;
  std::string str() const;
};
ElementwiseError elementwise_error(const Vec& got, const Vec& want, double floor);
inline Comparison compare(const Tensor& got, const Vec& want) { return compare(to_vec(got), want); }

// Elementwise |got - want| <= atol + rtol * |want| for every element.
bool all_close(const Vec& got, const Vec& want, double rtol, double atol);

}  // namespace dlt::test
