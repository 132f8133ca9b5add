#include "layers/layer.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "util/error.h"

namespace dlt {

namespace {

void fill_host(std::vector<float>& v, Init init, int64_t fan_in, int64_t fan_out, Rng& rng) {
  switch (init) {
    case Init::kZeros:
      std::fill(v.begin(), v.end(), 0.f);
      break;
    case Init::kOnes:
      std::fill(v.begin(), v.end(), 1.f);
      break;
    case Init::kGlorot: {  // uniform(-a, a), a = sqrt(6 / (fan_in + fan_out))
      double a = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
      for (float& x : v) x = static_cast<float>(rng.uniform(-a, a));
      break;
    }
    case Init::kHe: {  // normal(0, sqrt(2 / fan_in))
      double s = std::sqrt(2.0 / static_cast<double>(fan_in));
      for (float& x : v) x = static_cast<float>(s * rng.normal());
      break;
    }
    case Init::kNarrowNormal:  // normal(0, 0.01)
      for (float& x : v) x = static_cast<float>(0.01 * rng.normal());
      break;
    case Init::kIdentity:  // a (fan_out, fan_in) identity matrix
      std::fill(v.begin(), v.end(), 0.f);
      for (int64_t i = 0; i < std::min(fan_in, fan_out); ++i) v[static_cast<size_t>(i * fan_in + i)] = 1.f;
      break;
  }
}

}  // namespace

void Layer::init_params(Rng& rng) {
  for (Param& p : params_) {
    std::vector<float> host(static_cast<size_t>(p.shape.numel()));
    fill_host(host, p.init, p.fan_in, p.fan_out, rng);
    Tensor h(p.shape);
    std::copy(host.begin(), host.end(), h.data());
    p.value.copy_from(h);
  }
  for (State& s : states_) {
    Tensor h(s.shape);
    std::fill(h.data(), h.data() + h.numel(), s.init_value);
    s.value.copy_from(h);
  }
}

OnnxValue Layer::to_onnx(OnnxGraph& g, const std::vector<OnnxValue>&, const Shape&) const {
  throw ModelError(g.path() + ": layer '" + name() + "' (" + type() + ") has no ONNX export");
}

}  // namespace dlt
