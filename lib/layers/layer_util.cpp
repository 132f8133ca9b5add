#include "layers/layer_util.h"

#include <cmath>

#include "util/error.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace dlt {

std::array<int64_t, 2> same_padding(int64_t in, int64_t kernel, int64_t stride) {
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + kernel - in, 0);
  return {total / 2, total - total / 2};
}

std::array<int64_t, 4> parse_padding(const LayerSpec& spec, int64_t in_h, int64_t in_w, int64_t k_h, int64_t k_w,
                                     int64_t s_h, int64_t s_w) {
  const SpecValue* v = spec.get("Padding");
  if (!v) return {0, 0, 0, 0};
  if (!v->is_list && v->items.size() == 1 && iequals(v->items[0], "same")) {
    const auto h = same_padding(in_h, k_h, s_h), w = same_padding(in_w, k_w, s_w);
    return {h[0], h[1], w[0], w[1]};
  }
  std::vector<int64_t> p;
  for (const auto& t : v->items) {
    int64_t x = 0;
    if (!parse_int(t, &x) || x < 0)
      throw ConfigError(spec.where() +
                        "option Padding must be 'same', a number >= 0, [vertical horizontal] or [t b l r], got '" +
                        v->str() + "'");
    p.push_back(x);
  }
  if (p.size() == 1) return {p[0], p[0], p[0], p[0]};
  if (p.size() == 2) return {p[0], p[0], p[1], p[1]};
  if (p.size() == 4) return {p[0], p[1], p[2], p[3]};
  throw ConfigError(spec.where() + "option Padding must have 1, 2 or 4 values, got '" + v->str() + "'");
}

Init parse_initializer(const LayerSpec& spec, const std::string& key, const std::string& def) {
  std::string s = spec.get_choice(key, def, {"glorot", "he", "narrow-normal", "zeros", "ones"});
  if (s == "glorot") return Init::kGlorot;
  if (s == "he") return Init::kHe;
  if (s == "narrow-normal") return Init::kNarrowNormal;
  if (s == "ones") return Init::kOnes;
  return Init::kZeros;
}

std::vector<Param> weights_and_bias(Param w, Param b, const Shape& weight_shape, int64_t k, int64_t fan_in,
                                    int64_t fan_out) {
  w.name = "Weights";
  w.shape = weight_shape;
  b.name = "Bias";
  b.shape = Shape{k};
  w.fan_in = b.fan_in = fan_in;
  w.fan_out = b.fan_out = fan_out;
  return {w, b};
}

Param make_param(const LayerSpec& spec, const std::string& name, const Shape& shape, Init init,
                 float default_l2_factor) {
  Param p;
  p.name = name;
  p.shape = shape;
  p.init = init;
  double lr = spec.get_double(name + "LearnRateFactor", 1.0);
  double l2 = spec.get_double(name + "L2Factor", default_l2_factor);
  if (lr < 0)
    throw ConfigError(spec.where() + "option " + name + "LearnRateFactor must be >= 0 (0 freezes " + name + ")");
  if (l2 < 0) throw ConfigError(spec.where() + "option " + name + "L2Factor must be >= 0");
  p.learn_rate_factor = static_cast<float>(lr);
  p.l2_factor = static_cast<float>(l2);
  return p;
}

int64_t num_heads_option(const LayerSpec& spec) {
  const int64_t heads = spec.get_int("NumHeads", 0, 1);
  if (heads == 0) throw ConfigError(spec.where() + "option NumHeads is required (e.g. NumHeads: 4)");
  return heads;
}

double scale_option(const LayerSpec& spec, const std::string& alike) {
  const SpecValue* s = spec.get("Scale");
  if (s && !s->is_list && s->items.size() == 1 && s->items[0] == "auto") return 0;
  const double scale = spec.get_double("Scale", 0.0);
  if (s && (static_cast<float>(scale) == 0.f || !std::isfinite(static_cast<float>(scale))))
    throw ConfigError(spec.where() + "option Scale must be auto or a finite non-zero number, got " + s->items.at(0) +
                      " (0 would weigh every " + alike + " alike)");
  return scale;
}

Tensor& grad_or_scratch(Tensor* dx, const Tensor& x, Tensor& scratch) {
  if (dx) return *dx;
  if (!scratch.defined() || scratch.numel() != x.numel()) scratch = Tensor(x.shape(), x.device());
  return scratch;
}

void shape_error(const LayerSpec& spec, const std::string& what) {
  throw ShapeError(spec.loc.prefix() + spec.name + ": " + what);
}

void expect_inputs(const LayerSpec& spec, const std::vector<Shape>& inputs, size_t n) {
  if (inputs.size() != n)
    shape_error(spec, "takes " + std::to_string(n) + " input(s) but is given " + std::to_string(inputs.size()));
}

uint64_t dropout_stream(const std::string& layer_name, uint64_t iteration) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : layer_name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h ^ (iteration * 0x9e3779b97f4a7c15ULL);
}

void set_list(LayerSpec& spec, const std::string& key, const std::vector<int64_t>& v) {
  SpecValue sv;
  sv.is_list = true;
  for (int64_t x : v) sv.items.push_back(std::to_string(x));
  spec.options[key] = sv;
}

}  // namespace dlt
