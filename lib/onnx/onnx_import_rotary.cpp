// The importer's rotary position embedding (onnx_importer.h), on the views of
// onnx_import_tokens.cpp: an attention operand x (the heads of a projection's columns) turned
// into x * cos + rot(x) * sin, the tables constants of (tokens, head channels), rot(x) the pairs
// of each head's channels rotated by a quarter turn:
// - interleaved (timm's rot, EVA-02's): rot(x)[2i] = -x[2i + 1], rot(x)[2i + 1] = x[2i], written as
//   Slices of step 2, a Neg, Unsqueezes, a Concat on the new last axis and a Reshape merging it;
// - half (rotate_half, LLaMA's): rot(x) = cat(-x[d / 2:], x[:d / 2]), Slices, a Neg and a Concat;
// - either as a MatMul by the (d, d) signed permutation (dltrain's export).
// The tokens before the rotated ones (EVA-02's class token) may be joined in front by a Concat.
// Q K^T then reads both operands rotated alike, and the attention becomes selfAttention with
// RotaryEmbedding and the tables as its RotaryCos and RotarySin states.
#include <algorithm>
#include <cmath>
#include <string>

#include "onnx/onnx_importer.h"

namespace dlt::onnx_detail {

namespace {

// The same strides along every axis of more than one element in either view (a size-1 axis's
// stride reads nothing: exporters leave any value there).
bool same_strides(const Importer::View& a, const Importer::View& b) {
  if (a.dims.size() != b.dims.size()) return false;
  for (size_t i = 0; i < a.dims.size(); ++i)
    if ((a.dims[i] > 1 || b.dims[i] > 1) && a.strides[i] != b.strides[i]) return false;
  return true;
}

bool same_view(const Importer::View& a, const Importer::View& b) {
  return a.source == b.source && a.dims == b.dims && same_strides(a, b) && a.offset == b.offset && a.scale == b.scale &&
         a.unit_stride == b.unit_stride && a.rotary == b.rotary;
}

// Two table entries a pair shares (the same value, as the exporters spread one to both).
bool pair_equal(float a, float b) { return std::fabs(a - b) <= 1e-6f * std::max(1.f, std::fabs(a)); }

}  // namespace

// Concat of -x[..., 1::2] and x[..., ::2] (each unsqueezed to (..., d / 2, 1)) on the last axis, or
// of -x[..., d/2:] and x[..., :d/2]: rot(x); false when the inputs are not such halves of one view.
bool Importer::rotation_pairs(const onnx::NodeProto& n) {
  if (n.input_size() != 2 || !has_view(n, 0) || !has_view(n, 1)) return false;
  const View &a = views_.at(n.input(0)), &b = views_.at(n.input(1));
  const int64_t r = static_cast<int64_t>(a.dims.size());
  int64_t axis = attr_int(n, "axis", 0);
  if (axis < 0) axis += r;
  if (r < 2 || axis != r - 1 || a.source != b.source || a.dims != b.dims || !same_strides(a, b) || a.rot || b.rot ||
      a.rotary >= 0 || b.rotary >= 0 || a.unit_stride || b.unit_stride)
    return false;
  View out = b;
  if (a.dims.back() == 1) {  // interleaved: the odd channels negated, then the even ones
    const int64_t st = b.strides[static_cast<size_t>(r - 2)];
    if (st < 2 || st % 2 != 0 || a.offset != b.offset + st / 2) return false;
    out.dims.back() = 2;
    out.strides.back() = st / 2;
    out.rot = 1;
  } else {  // half: the second half negated, then the first
    const int64_t half = a.dims.back(), st = b.strides.back();
    if (half > 1 && st < 1) return false;
    if (a.offset != b.offset + half * st) return false;
    out.dims.back() = 2 * half;
    out.rot = 2;
  }
  if (a.scale != -b.scale)
    fail(n,
         "joins the two parts of each pair of an attention operand's channels swapped but not negated; dltrain "
         "reads there a rotary embedding's rot(x), the second of each pair negated before the first");
  views_[define(n)] = out;
  return true;
}

// MatMul of a head view (not tokens) by the (d, d) signed permutation of rot (x R = rot(x)):
// rot(x); false for any other constant (the caller reads a projection).
bool Importer::rotation_matmul(const onnx::NodeProto& n, const View& v, const std::vector<float>& w, int64_t in,
                               int64_t out) {
  const int64_t d = in;
  if (in != out || d < 2 || d % 2 != 0 || v.dims.empty() || v.dims.back() != d || reads_as_tokens(v) || v.rot ||
      v.rotary >= 0 || v.unit_stride)
    return false;
  for (const bool half : {false, true}) {
    const int64_t pairs = d / 2, apart = half ? pairs : 1, step = half ? 1 : 2;
    std::vector<float> want(static_cast<size_t>(d * d), 0.f);
    for (int64_t i = 0; i < pairs; ++i) {
      const int64_t a = i * step, b = a + apart;
      want[static_cast<size_t>(b * d + a)] = -1.f;
      want[static_cast<size_t>(a * d + b)] = 1.f;
    }
    if (w != want) continue;
    View o = v;
    o.rot = half ? 2 : 1;
    views_[define(n)] = o;
    return true;
  }
  return false;
}

// Mul of a head view (rot(x) or x) by a constant varying along its tokens and its last axis (a
// head's channels), and along its heads too for a table per head (RoPE-Mixed's): one term of a
// rotary embedding, pending until the Add of its partner; false for any other constant (the
// caller reads a scale).
bool Importer::rotary_term(const onnx::NodeProto& n, int vi) {
  const View& v = views_.at(n.input(vi));
  const onnx::TensorProto* t = constant(n.input(1 - vi));
  if (!t || v.rotary >= 0 || v.unit_stride || reads_as_tokens(v)) return false;
  const Source& s = sources_[static_cast<size_t>(v.source)];
  if (s.kind != Source::kProjection && s.kind != Source::kTokens) return false;
  const std::vector<int64_t> d = dims_of(*t);
  const size_t r = v.dims.size();
  if (r < 2 || d.empty() || d.size() > r || product(d) <= 1) return false;
  const int64_t dim = v.dims.back();
  if (dim < 2 || dim % 2 != 0 || v.strides.back() != 1) return false;
  int tok = -1, heads = -1;  // the view's tokens axis, its heads axis (the other one of more than one)
  for (size_t i = 0; i + 1 < r; ++i)
    if (v.dims[i] > 1 && v.strides[i] == s.cols)
      tok = static_cast<int>(i);
    else if (v.dims[i] > 1)
      heads = static_cast<int>(i);
  if (tok < 0) return false;
  const std::string what = "multiplies a " + ints_str(v.dims) + " attention operand by a " + dims_str(*t) +
                           " constant; dltrain reads there a rotary embedding's table of one value per token and "
                           "channel of a head, (" +
                           std::to_string(v.dims[static_cast<size_t>(tok)]) + ", " + std::to_string(dim) +
                           "), the same for every head or one per head";
  // The constant's strides, aligned from the end with the view (0 where it repeats).
  std::vector<int64_t> cs(r, 0);
  int64_t stride = 1;
  bool tokens_seen = false, channels_seen = false, per_head = false;
  for (size_t i = d.size(); i-- > 0;) {
    const size_t at = r - d.size() + i;
    if (d[i] != 1) {
      if (d[i] != v.dims[at] || (static_cast<int>(at) != tok && at != r - 1 && static_cast<int>(at) != heads))
        fail(n, what);
      cs[at] = stride;
      tokens_seen = tokens_seen || static_cast<int>(at) == tok;
      channels_seen = channels_seen || at == r - 1;
      per_head = per_head || static_cast<int>(at) == heads;
    }
    stride *= d[i];
  }
  if (!tokens_seen || !channels_seen) fail(n, what);
  const std::vector<float> c = need_floats(n, 1 - vi, "rotary table");
  RotaryTerm term{v, tok, per_head ? v.dims[static_cast<size_t>(heads)] : 1, {}};
  const int64_t tokens = v.dims[static_cast<size_t>(tok)];
  term.table.resize(static_cast<size_t>(term.tables * tokens * dim));
  for (int64_t h = 0; h < term.tables; ++h)
    for (int64_t k = 0; k < tokens; ++k)
      for (int64_t ch = 0; ch < dim; ++ch)
        term.table[static_cast<size_t>((h * tokens + k) * dim + ch)] = c[static_cast<size_t>(
            (per_head ? h * cs[static_cast<size_t>(heads)] : 0) + k * cs[static_cast<size_t>(tok)] + ch * cs[r - 1])];
  rotary_terms_[define(n)] = std::move(term);
  return true;
}

// Add of x * C and rot(x) * S: x rotated pair by pair, cos C and sin S, each the same for both
// channels of a pair (one table, or one per head when either is).
void Importer::rotary_sum(const onnx::NodeProto& n) {
  const RotaryTerm &a = rotary_terms_.at(n.input(0)), &b = rotary_terms_.at(n.input(1));
  const RotaryTerm& plain = a.v.rot ? b : a;
  const RotaryTerm& rot = a.v.rot ? a : b;
  View base = rot.v;
  base.rot = 0;
  if (plain.v.rot || !rot.v.rot || !same_view(base, plain.v) || plain.tokens_axis != rot.tokens_axis)
    fail(n,
         "adds two products of attention operands by tables; dltrain reads there a rotary embedding, x * cos + "
         "rot(x) * sin of the same x");
  const bool half = rot.v.rot == 2;
  const int64_t dim = base.dims.back(), pairs = dim / 2, tokens = base.dims[static_cast<size_t>(plain.tokens_axis)],
                tables = std::max(plain.tables, rot.tables);
  Rotary r;
  r.half = half;
  r.dim = dim;
  r.tables = tables;
  const Source& s = sources_[static_cast<size_t>(base.source)];
  r.first_row = base.offset / s.cols;
  r.col = base.offset % s.cols;
  r.cos.resize(static_cast<size_t>(tables * tokens * pairs));
  r.sin.resize(r.cos.size());
  // Entry (h, t, ch) of a term's table (the same for every head where it has one).
  auto at = [&](const RotaryTerm& x, int64_t h, int64_t t, int64_t ch) {
    return x.table[static_cast<size_t>(((x.tables > 1 ? h : 0) * tokens + t) * dim + ch)];
  };
  for (int64_t h = 0; h < tables; ++h)
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t i = 0; i < pairs; ++i) {
        const int64_t ca = half ? i : 2 * i, cb = half ? i + pairs : 2 * i + 1;
        if (!pair_equal(at(plain, h, t, ca), at(plain, h, t, cb)) || !pair_equal(at(rot, h, t, ca), at(rot, h, t, cb)))
          fail(n, "rotates channels " + std::to_string(ca) + " and " + std::to_string(cb) + " of token " +
                      std::to_string(t) + (tables > 1 ? " of head " + std::to_string(h) : std::string()) +
                      " by different angles (their cos or sin differ); dltrain reads a rotary embedding whose pairs "
                      "share one angle");
        r.cos[static_cast<size_t>((h * tokens + t) * pairs + i)] = at(plain, h, t, ca);
        r.sin[static_cast<size_t>((h * tokens + t) * pairs + i)] = at(rot, h, t, ca);
      }
  rotaries_.push_back(std::move(r));
  base.rotary = static_cast<int>(rotaries_.size() - 1);
  views_[define(n)] = base;
}

// Concat on the tokens axis of the tokens before the rotated ones and the rotated ones (EVA-02's
// class token in front): the whole operand, rotated from its first rotated token on.
bool Importer::rotary_concat(const onnx::NodeProto& n) {
  if (n.input_size() != 2 || !has_view(n, 0) || !has_view(n, 1)) return false;
  const View &p = views_.at(n.input(0)), &q = views_.at(n.input(1));
  if (q.rotary < 0 && p.rotary < 0) return false;
  const int64_t r = static_cast<int64_t>(q.dims.size());
  int64_t axis = attr_int(n, "axis", 0);
  if (axis < 0) axis += r;
  const Source& s = sources_[static_cast<size_t>(q.source)];
  bool ok = p.rotary < 0 && !p.rot && !q.rot && p.source == q.source && p.scale == q.scale && same_strides(p, q) &&
            p.dims.size() == q.dims.size() && axis >= 0 && axis < r && q.strides[static_cast<size_t>(axis)] == s.cols &&
            !p.unit_stride && !q.unit_stride;
  for (int64_t i = 0; ok && i < r; ++i)
    if (i != axis) ok = p.dims[static_cast<size_t>(i)] == q.dims[static_cast<size_t>(i)];
  if (!ok || p.offset + p.dims[static_cast<size_t>(axis)] * s.cols != q.offset)
    fail(n,
         "joins rotated attention operands to other values; dltrain reads there the tokens before the rotated "
         "ones (a class token) joined in front of them on the tokens axis");
  View out = p;
  out.dims[static_cast<size_t>(axis)] += q.dims[static_cast<size_t>(axis)];
  out.rotary = q.rotary;
  views_[define(n)] = out;
  return true;
}

// The rotary embedding of the scores Q K^T (-1: none): Q and K both rotated, alike (the same
// tables and layout, each from the same token on, over the whole heads of key_dim channels side
// by side) up to the last token of `rows`.
int Importer::scores_rotary(const onnx::NodeProto& n, const View& q, const View& k, int64_t q_col, int64_t k_col,
                            int64_t key_dim, int64_t q_step, int64_t rows) {
  if (q.rotary < 0 && k.rotary < 0 && !q.rot && !k.rot) return -1;
  const std::string what = "multiplies " + ints_str(q.dims) + " by " + ints_str(k.dims) + " ";
  if (q.rot || k.rot)
    fail(n, what +
                "with rot(x) of an operand not yet added to its cos product; dltrain reads a rotary embedding "
                "as x * cos + rot(x) * sin");
  if (q.rotary < 0 || k.rotary < 0)
    fail(n, what + "with only one of Q and K rotated; dltrain reads a rotary embedding of both");
  const Rotary &a = rotaries_[static_cast<size_t>(q.rotary)], &b = rotaries_[static_cast<size_t>(k.rotary)];
  const int64_t tokens = static_cast<int64_t>(a.cos.size()) / (a.tables * (a.dim / 2));
  if (a.half != b.half || a.dim != b.dim || a.tables != b.tables || a.cos != b.cos || a.sin != b.sin ||
      a.first_row != b.first_row)
    fail(n, what + "with Q and K rotated by different tables; dltrain reads one rotary embedding of both");
  if (a.dim != key_dim || (q_step != 0 && q_step != key_dim) || a.col != q_col || b.col != k_col ||
      a.first_row + tokens != rows)
    fail(n, what + "with a rotary embedding of " + std::to_string(a.dim) + " channels over tokens [" +
                std::to_string(a.first_row) + ", " + std::to_string(a.first_row + tokens) +
                "); dltrain reads one over each head's " + std::to_string(key_dim) + " channels up to the last of " +
                std::to_string(rows) + " tokens");
  return q.rotary;
}

// selfAttention's RotaryEmbedding options and its tables (the states) for a's rotary embedding.
void Importer::rotary_options(LayerSpec& spec, const Source& a) {
  if (a.rotary < 0) return;
  const Rotary& r = rotaries_[static_cast<size_t>(a.rotary)];
  spec.set("RotaryEmbedding", r.half ? "half" : "interleaved");
  if (r.first_row > 0) spec.set("RotaryPrefixTokens", std::to_string(r.first_row));
  const int64_t pairs = r.dim / 2, tokens = static_cast<int64_t>(r.cos.size()) / (r.tables * pairs);
  if (r.tables > 1) spec.set("RotaryPerHead", "true");
  const Shape shape = r.tables > 1 ? Shape{r.tables, tokens, pairs} : Shape{tokens, pairs};
  add_state(spec.name, "RotaryCos", shape, r.cos);
  add_state(spec.name, "RotarySin", shape, r.sin);
}

}  // namespace dlt::onnx_detail
