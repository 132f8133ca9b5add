// Random tensors, conversions and tolerant comparisons for the tests (see tensor_utils.h).
#include "support/tensor_utils.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace dlt::test {

Tensor random_tensor(const Shape& shape, Rng& rng, float lo, float hi) {
  Tensor t(shape);
  float* p = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(rng.uniform(lo, hi));
  return t;
}

ConvProblem random_conv_problem(int64_t n, int64_t hw, int64_t c, int64_t k, int64_t f, int64_t stride, int64_t groups,
                                Rng& rng) {
  ConvProblem p;
  ConvDesc& d = p.d;
  d.n = n, d.h = d.w = hw, d.c = c, d.k = k, d.kh = d.kw = f;
  d.stride_h = d.stride_w = stride;
  d.pad_t = d.pad_b = d.pad_l = d.pad_r = f / 2;
  d.groups = groups;
  p.x = random_tensor(Shape{d.n, d.h, d.w, d.c}, rng);
  p.w = random_tensor(Shape{d.k, d.kh, d.kw, d.group_c()}, rng, -0.3f, 0.3f);
  p.b = random_tensor(Shape{d.k}, rng, -0.2f, 0.2f);
  return p;
}

Vec random_vec(int64_t n, Rng& rng, double lo, double hi) {
  Vec v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<float>(rng.uniform(lo, hi));
  return v;
}

Tensor to_tensor(const Vec& v, const Shape& shape, Device device) {
  Tensor host(shape);
  for (int64_t i = 0; i < host.numel(); ++i) host.data()[i] = static_cast<float>(v[i]);
  return device.is_cpu() ? host : host.to(device);
}

Vec to_vec(const Tensor& t) {
  Tensor host = t.device().is_cpu() ? t : t.to(Device::cpu());
  Vec v(static_cast<size_t>(host.numel()));
  for (int64_t i = 0; i < host.numel(); ++i) v[i] = host.data()[i];
  return v;
}

Comparison compare(const Vec& got, const Vec& want) {
  Comparison c;
  if (got.size() != want.size()) {
    c.size_mismatch = true;
    c.rel = INFINITY;
    return c;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    double d = std::fabs(got[i] - want[i]);
    if (std::isnan(got[i]) || std::isnan(want[i])) d = INFINITY;
    c.scale = std::max(c.scale, std::fabs(want[i]));
    if (d > c.max_abs || c.worst < 0) {
      c.max_abs = std::max(c.max_abs, d);
      if (d >= c.max_abs) {
        c.worst = static_cast<int64_t>(i);
        c.got_at_worst = got[i];
        c.want_at_worst = want[i];
      }
    }
  }
  c.rel = c.max_abs / std::max(c.scale, 1e-30);
  return c;
}

std::string Comparison::str() const {
  std::ostringstream os;
  if (size_mismatch) return "sizes differ";
  os << "rel " << rel << " (max |diff| " << max_abs << " at " << worst << ": got " << got_at_worst << " want "
     << want_at_worst << "; max |want| " << scale << ")";
  return os.str();
}

ElementwiseError elementwise_error(const Vec& got, const Vec& want, double floor) {
  ElementwiseError e;
  e.floor = floor;
  if (got.size() != want.size()) {
    e.rel = INFINITY;
    return e;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    double r = std::fabs(got[i] - want[i]) / std::max(std::fabs(want[i]), floor);
    if (std::isnan(got[i]) || std::isnan(want[i])) r = INFINITY;
    if (r > e.rel || e.worst < 0) {
      e.rel = std::max(e.rel, r);
      e.worst = static_cast<int64_t>(i);
      e.got_at_worst = got[i];
      e.want_at_worst = want[i];
    }
  }
  return e;
}

std::string ElementwiseError::str() const {
  std::ostringstream os;
  os << "element-wise rel " << rel << " (at " << worst << ": got " << got_at_worst << " want " << want_at_worst
     << "; floor " << floor << ")";
  return os.str();
}

bool all_close(const Vec& got, const Vec& want, double rtol, double atol) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]))) return false;
  return true;
}

}  // namespace dlt::test
