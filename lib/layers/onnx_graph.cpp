// OnnxGraph's and OnnxNodeReader's helpers and the layout permutations (onnx_graph.h).
#include "layers/onnx_graph.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <limits>

#include "tensor/tensor.h"
#include "util/error.h"

namespace dlt {

OnnxValue OnnxGraph::flat(const OnnxValue& in) {
  if (in.flat) return in;
  if (flattened_.insert(in.name).second)
    add_node("Flatten", in.name + "_flatten", {in.name}, in.name + "_flat", {OnnxAttr("axis", int64_t{1})});
  return OnnxValue{in.name + "_flat", in.shape, true};
}

OnnxValue OnnxGraph::image(const std::string& layer, const OnnxValue& in) {
  if (!in.flat) return in;
  if (in.shape[0] * in.shape[1] != 1)
    throw ModelError(path() + ": layer '" + layer + "' reads a flattened image, which has no ONNX form here");
  const std::string p = layer + "_" + in.name;  // a layer may read several flat values
  add_ints(p + "_shape", {4}, {0, in.shape[2], 1, 1});
  add_node("Reshape", p + "_unflatten", {in.name, p + "_shape"}, p + "_image");
  return OnnxValue{p + "_image", in.shape, false};
}

std::string OnnxGraph::tokens_linear(const std::string& out, const std::string& x, const std::vector<float>& weights,
                                     int64_t k, int64_t c, const std::vector<float>& bias) {
  std::vector<float> t(weights.size());
  for (int64_t o = 0; o < k; ++o)
    for (int64_t i = 0; i < c; ++i) t[static_cast<size_t>(i * k + o)] = weights[static_cast<size_t>(o * c + i)];
  add_floats(out + "_W", {c, k}, t);
  add_floats(out + "_B", {k}, bias);
  add_node("MatMul", out + "_matmul", {x, out + "_W"}, out + "_product");
  add_node("Add", out, {out + "_product", out + "_B"}, out);
  return out;
}

std::string OnnxGraph::attention(const std::string& out, const std::string& q, const std::string& k,
                                 const std::string& v, int64_t heads, int64_t seq_q, int64_t seq_kv, int64_t key_dim,
                                 int64_t value_dim, float scale, bool causal, const std::vector<float>* bias,
                                 const std::vector<float>* mix, const OnnxRotary* rotary) {
  const std::string in[3] = {q, k, v};
  const char* part[3] = {"_q", "_k", "_v"};
  const int64_t seq[3] = {seq_q, seq_kv, seq_kv}, dim[3] = {key_dim, key_dim, value_dim};
  std::string head[3];
  for (size_t i = 0; i < 3; ++i) {
    const std::string p = out + part[i];
    add_ints(p + "_heads_shape", {4}, {0, seq[i], heads, dim[i]});
    add_node("Reshape", p + "_split", {in[i], p + "_heads_shape"}, p + "_heads");
    std::string x = p + "_heads";
    if (rotary && i < 2) x = rotate(p, x, *rotary, seq[i], dim[i]);
    const std::vector<int64_t> perm = i == 1 ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3};
    add_node("Transpose", p + "_transpose", {x}, p + "_t", {OnnxAttr("perm", perm)});
    head[i] = p + "_t";
  }
  add_node("MatMul", out + "_qk", {head[0], head[1]}, out + "_qk");
  add_floats(out + "_scale", {}, {scale});
  add_node("Mul", out + "_scaled", {out + "_qk", out + "_scale"}, out + "_scores");
  std::string scores = out + "_scores";
  if (bias) {
    add_floats(out + "_bias", {1, heads, seq_q, seq_kv}, *bias);
    add_node("Add", out + "_biased", {scores, out + "_bias"}, out + "_biased_scores");
    scores = out + "_biased_scores";
  }
  // Mix m of the talking heads on x (N, H, Sq, Skv): Linear over the heads axis. The weights'
  // bias of one value per head and pair (the packed mix's size tells) is an Add after it.
  auto head_mix = [&](int m, const std::string& x) {
    const std::string p = out + (m == 0 ? "_score_mix" : "_prob_mix");
    const size_t at = static_cast<size_t>(m * (heads * heads + heads));
    const int64_t plane = seq_q * seq_kv;
    const bool pairs =
        m == 1 && static_cast<int64_t>(mix->size()) == 2 * heads * heads + heads + heads * plane && plane > 1;
    std::vector<float> wt(static_cast<size_t>(heads * heads));
    for (int64_t g = 0; g < heads; ++g)
      for (int64_t h = 0; h < heads; ++h) wt[static_cast<size_t>(h * heads + g)] = (*mix)[at + g * heads + h];
    add_floats(p + "_weights", {heads, heads}, wt);
    const auto bias_from = mix->begin() + static_cast<std::ptrdiff_t>(at + heads * heads);
    const std::vector<float> bias(bias_from, bias_from + (pairs ? heads * plane : heads));
    add_node("Transpose", p + "_heads_last", {x}, p + "_in", {OnnxAttr("perm", std::vector<int64_t>{0, 2, 3, 1})});
    add_node("MatMul", p + "_matmul", {p + "_in", p + "_weights"}, p + "_product");
    if (pairs) {
      add_node("Transpose", p + "_heads_back", {p + "_product"}, p + "_mixed",
               {OnnxAttr("perm", std::vector<int64_t>{0, 3, 1, 2})});
      add_floats(p + "_bias", {1, heads, seq_q, seq_kv}, bias);
      add_node("Add", p + "_add", {p + "_mixed", p + "_bias"}, p);
      return p;
    }
    add_floats(p + "_bias", {heads}, bias);
    add_node("Add", p + "_add", {p + "_product", p + "_bias"}, p + "_out");
    add_node("Transpose", p + "_heads_back", {p + "_out"}, p, {OnnxAttr("perm", std::vector<int64_t>{0, 3, 1, 2})});
    return p;
  };
  if (mix) scores = head_mix(0, scores);
  if (causal) {
    std::vector<float> mask(static_cast<size_t>(seq_q * seq_kv), 0.f);
    for (int64_t r = 0; r < seq_q; ++r)
      for (int64_t c = r + 1; c < seq_kv; ++c)
        mask[static_cast<size_t>(r * seq_kv + c)] = std::numeric_limits<float>::lowest();
    add_floats(out + "_mask", {seq_q, seq_kv}, mask);
    add_node("Add", out + "_masked", {scores, out + "_mask"}, out + "_masked_scores");
    scores = out + "_masked_scores";
  }
  add_node("Softmax", out + "_softmax", {scores}, out + "_probs", {OnnxAttr("axis", int64_t{-1})});
  const std::string probs = mix ? head_mix(1, out + "_probs") : out + "_probs";
  add_node("MatMul", out + "_pv", {probs, head[2]}, out + "_pv");
  add_node("Transpose", out + "_merge", {out + "_pv"}, out + "_pv_t",
           {OnnxAttr("perm", std::vector<int64_t>{0, 2, 1, 3})});
  add_ints(out + "_merged_shape", {3}, {0, seq_q, heads * value_dim});
  add_node("Reshape", out + "_merged", {out + "_pv_t", out + "_merged_shape"}, out);
  return out;
}

std::string OnnxGraph::rotate(const std::string& p, const std::string& x, const OnnxRotary& r, int64_t seq,
                              int64_t dim) {
  const int64_t pairs = dim / 2, apart = r.half ? pairs : 1, step = r.half ? 1 : 2, tokens = seq - r.prefix,
                tables = r.heads;
  if (r.prefix < 0 || tokens < 1 || tables < 1 || static_cast<int64_t>(r.cos.size()) != tables * tokens * pairs ||
      r.sin.size() != r.cos.size())
    throw ModelError(path() + ": " + p + ": rotary tables do not match " + std::to_string(seq) + " tokens");
  std::vector<float> rot(static_cast<size_t>(dim * dim), 0.f), c(static_cast<size_t>(tables * tokens * dim)),
      s(c.size());
  for (int64_t i = 0; i < pairs; ++i) {  // rot(x)_a = -x_b, rot(x)_b = x_a as x R
    const int64_t a = i * step, b = a + apart;
    rot[static_cast<size_t>(b * dim + a)] = -1.f;
    rot[static_cast<size_t>(a * dim + b)] = 1.f;
    for (int64_t h = 0; h < tables; ++h)  // (tokens, tables, dim): against the heads' axis of x (N, S, H, d)
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t ch : {a, b}) {
          const size_t from = static_cast<size_t>((h * tokens + t) * pairs + i),
                       to = static_cast<size_t>((t * tables + h) * dim + ch);
          c[to] = r.cos[from];
          s[to] = r.sin[from];
        }
  }
  std::string in = x;
  if (r.prefix > 0) {  // the tokens from the prefix on, rotated, joined behind the others
    add_ints(p + "_rot_axis", {1}, {1});
    add_ints(p + "_rot_zero", {1}, {0});
    add_ints(p + "_rot_first", {1}, {r.prefix});
    add_ints(p + "_rot_end", {1}, {seq});
    add_node("Slice", p + "_prefix", {x, p + "_rot_zero", p + "_rot_first", p + "_rot_axis"}, p + "_prefix");
    add_node("Slice", p + "_rest", {x, p + "_rot_first", p + "_rot_end", p + "_rot_axis"}, p + "_rest");
    in = p + "_rest";
  }
  add_floats(p + "_rot", {dim, dim}, rot);
  add_floats(p + "_cos", {tokens, tables, dim}, c);
  add_floats(p + "_sin", {tokens, tables, dim}, s);
  add_node("MatMul", p + "_rotate", {in, p + "_rot"}, p + "_rotated");
  add_node("Mul", p + "_times_cos", {in, p + "_cos"}, p + "_x_cos");
  add_node("Mul", p + "_times_sin", {p + "_rotated", p + "_sin"}, p + "_rot_sin");
  add_node("Add", p + "_rope", {p + "_x_cos", p + "_rot_sin"}, p + "_rope");
  if (r.prefix == 0) return p + "_rope";
  add_node("Concat", p + "_joined", {p + "_prefix", p + "_rope"}, p + "_joined", {OnnxAttr("axis", int64_t{1})});
  return p + "_joined";
}

std::string OnnxGraph::channel_attention(const std::string& out, const std::string& q, const std::string& k,
                                         const std::string& v, int64_t heads, int64_t seq, int64_t dim, float scale,
                                         const std::vector<float>* temperature) {
  const std::string in[3] = {q, k, v};
  const char* part[3] = {"_q", "_k", "_v"};
  std::string head[3];
  for (size_t i = 0; i < 3; ++i) {
    const std::string p = out + part[i];
    add_ints(p + "_heads_shape", {4}, {0, seq, heads, dim});
    add_node("Reshape", p + "_split", {in[i], p + "_heads_shape"}, p + "_heads");
    const bool key_first = i == 1 && !temperature;
    const std::vector<int64_t> perm = key_first ? std::vector<int64_t>{0, 2, 1, 3} : std::vector<int64_t>{0, 2, 3, 1};
    add_node("Transpose", p + "_transpose", {p + "_heads"}, p + "_t", {OnnxAttr("perm", perm)});
    head[i] = p + "_t";
    if (!temperature || i == 2) continue;
    // F.normalize over the tokens: x / max(|x|, eps)
    add_node("ReduceL2", p + "_norm", {head[i]}, p + "_norm",
             {OnnxAttr("axes", std::vector<int64_t>{-1}), OnnxAttr("keepdims", int64_t{1})});
    add_floats(p + "_eps", {}, {1e-12f});
    add_node("Clip", p + "_clip", {p + "_norm", p + "_eps"}, p + "_clipped");
    add_node("Div", p + "_unit", {head[i], p + "_clipped"}, p + "_unit");
    head[i] = p + "_unit";
    if (i == 1) {
      add_node("Transpose", p + "_unit_t", {head[i]}, p + "_unit_t",
               {OnnxAttr("perm", std::vector<int64_t>{0, 1, 3, 2})});
      head[i] = p + "_unit_t";
    }
  }
  add_node("MatMul", out + "_qk", {head[0], head[1]}, out + "_qk");
  add_floats(out + "_scale", {}, {scale});
  add_node("Mul", out + "_scaled", {out + "_qk", out + "_scale"}, out + "_scores");
  std::string scores = out + "_scores";
  if (temperature) {
    add_floats(out + "_temperature", {heads, 1, 1}, *temperature);
    add_node("Mul", out + "_tempered", {scores, out + "_temperature"}, out + "_tempered_scores");
    scores = out + "_tempered_scores";
  }
  add_node("Softmax", out + "_softmax", {scores}, out + "_probs", {OnnxAttr("axis", int64_t{-1})});
  add_node("MatMul", out + "_pv", {out + "_probs", head[2]}, out + "_pv");
  add_node("Transpose", out + "_merge", {out + "_pv"}, out + "_pv_t",
           {OnnxAttr("perm", std::vector<int64_t>{0, 3, 1, 2})});
  add_ints(out + "_merged_shape", {3}, {0, seq, heads * dim});
  add_node("Reshape", out + "_merged", {out + "_pv_t", out + "_merged_shape"}, out);
  return out;
}

std::string OnnxGraph::pixel_tokens(const std::string& layer, const OnnxValue& in) {
  if (in.tokens) return in.name;
  if (in.flat) {  // a vector (N, C): one token (N, 1, C), the same memory
    const std::string t = in.name + "_token";
    if (pixel_tokens_.insert(t).second) {
      add_ints(t + "_axes", {1}, {1});
      add_node("Unsqueeze", t, {in.name, t + "_axes"}, t);
    }
    return t;
  }
  const OnnxValue x = image(layer, in);
  const int64_t s = x.shape[0] * x.shape[1], c = x.shape[2];
  const std::string t = x.name + "_pixels";
  if (pixel_tokens_.insert(x.name).second) {
    add_node("Transpose", t + "_channels_last", {x.name}, t + "_hwc",
             {OnnxAttr("perm", std::vector<int64_t>{0, 2, 3, 1})});
    add_ints(t + "_shape", {3}, {-1, s, c});
    add_node("Reshape", t, {t + "_hwc", t + "_shape"}, t);
  }
  return t;
}

void OnnxGraph::batch_expand(const std::string& out, const std::string& value, const std::string& like,
                             const std::vector<int64_t>& dims) {
  add_node("Shape", out + "_shape", {like}, out + "_input_shape");
  add_ints(out + "_zero", {1}, {0});
  add_ints(out + "_one", {1}, {1});
  add_node("Slice", out + "_batch", {out + "_input_shape", out + "_zero", out + "_one", out + "_zero"}, out + "_n");
  add_ints(out + "_dims", {static_cast<int64_t>(dims.size())}, dims);
  add_node("Concat", out + "_expand_dims", {out + "_n", out + "_dims"}, out + "_expand_shape",
           {OnnxAttr("axis", int64_t{0})});
  add_node("Expand", out, {value, out + "_expand_shape"}, out);
}

OnnxValue OnnxGraph::tokens_image(const std::string& out, const std::string& tokens, const Shape& shape) {
  add_ints(out + "_image_shape", {4}, {-1, shape[0], shape[1], shape[2]});
  add_node("Reshape", out + "_pixels", {tokens, out + "_image_shape"}, out + "_hwc");
  add_node("Transpose", out, {out + "_hwc"}, out, {OnnxAttr("perm", std::vector<int64_t>{0, 3, 1, 2})});
  return OnnxValue{out, shape, false};
}

std::vector<float> OnnxNodeReader::bias_or_zeros(int i, int64_t k) {
  std::vector<float> b(static_cast<size_t>(k), 0.f);
  if (has_input(i)) b = floats(i, "bias");
  if (static_cast<int64_t>(b.size()) != k)
    fail("bias has " + std::to_string(b.size()) + " values for " + std::to_string(k) + " filters");
  return b;
}

std::vector<int64_t> OnnxNodeReader::axes(int i, int input_from, std::vector<int64_t> def) {
  if (opset() >= input_from) return has_input(i) ? ints(i, "axes") : def;
  return attr_ints("axes", std::move(def));
}

void OnnxNodeReader::need_image(const OnnxValue& v) const {
  if (v.flat && v.shape[0] * v.shape[1] > 1) fail("its input is flattened (N, C*H*W); it needs an image (N, C, H, W)");
}

std::array<int64_t, 4> OnnxNodeReader::pads(const Shape& in, int64_t eh, int64_t ew, int64_t sh, int64_t sw) const {
  for (int64_t v : {eh, ew, sh, sw})
    if (v < 1 || v > kOnnxMaxWindow)
      fail("the kernel is " + std::to_string(eh) + "x" + std::to_string(ew) + " with strides " + std::to_string(sh) +
           ", " + std::to_string(sw) + " (each must be in 1.." + std::to_string(kOnnxMaxWindow) + ")");
  std::string ap = attr_string("auto_pad", "NOTSET");
  if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    auto total = [](int64_t x, int64_t k, int64_t s) {
      return std::max<int64_t>(((x + s - 1) / s - 1) * s + k - x, 0);
    };
    int64_t th = total(in[0], eh, sh), tw = total(in[1], ew, sw);
    bool upper = ap == "SAME_UPPER";
    return {upper ? th / 2 : th - th / 2, upper ? tw / 2 : tw - tw / 2, upper ? th - th / 2 : th / 2,
            upper ? tw - tw / 2 : tw / 2};
  }
  if (ap == "VALID") return {0, 0, 0, 0};
  auto p = attr_ints("pads", {0, 0, 0, 0});
  if (p.size() != 4) fail("pads has " + std::to_string(p.size()) + " values, expected 4 (2-D only)");
  return {p[0], p[1], p[2], p[3]};
}

std::vector<float> oihw_to_ohwi(const std::vector<float>& w, int64_t k, int64_t c, int64_t kh, int64_t kw) {
  std::vector<float> out(w.size());
  for (int64_t o = 0; o < k; ++o)
    for (int64_t i = 0; i < c; ++i)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x) out[((o * kh + y) * kw + x) * c + i] = w[((o * c + i) * kh + y) * kw + x];
  return out;
}

std::vector<float> ohwi_to_oihw(const std::vector<float>& w, int64_t k, int64_t c, int64_t kh, int64_t kw) {
  std::vector<float> out(w.size());
  for (int64_t o = 0; o < k; ++o)
    for (int64_t i = 0; i < c; ++i)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x) out[((o * c + i) * kh + y) * kw + x] = w[((o * kh + y) * kw + x) * c + i];
  return out;
}

std::vector<float> chw_cols_to_hwc(const std::vector<float>& w, int64_t k, int64_t h, int64_t wd, int64_t c) {
  std::vector<float> out(w.size());
  const int64_t n = h * wd * c;
  for (int64_t o = 0; o < k; ++o)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < h * wd; ++p) out[o * n + p * c + ch] = w[o * n + ch * h * wd + p];
  return out;
}

std::vector<float> hwc_cols_to_chw(const std::vector<float>& w, int64_t k, int64_t h, int64_t wd, int64_t c) {
  std::vector<float> out(w.size());
  const int64_t n = h * wd * c;
  for (int64_t o = 0; o < k; ++o)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < h * wd; ++p) out[o * n + ch * h * wd + p] = w[o * n + p * c + ch];
  return out;
}

std::vector<float> hwc_to_chw(const std::vector<float>& x, int64_t h, int64_t w, int64_t c) {
  return hwc_cols_to_chw(x, 1, h, w, c);
}

std::vector<float> chw_to_hwc(const std::vector<float>& x, int64_t h, int64_t w, int64_t c) {
  return chw_cols_to_hwc(x, 1, h, w, c);
}

std::vector<float> host_values(const Tensor& t) {
  Tensor host = t.to(Device::cpu());
  return std::vector<float>(host.data(), host.data() + host.numel());
}

std::string onnx_number(float v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

}  // namespace dlt
