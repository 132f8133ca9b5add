// The importer's attention (onnx_importer.h), on the views of onnx_import_tokens.cpp: Q K^T
// (times scalars; Q and K from one sequence or two: cross-attention), an Add of a causal mask or of a bias (ScoreBias),
// Softmax over the keys, times V, and the output projection. Queries, keys and values all
// columns of projections of one token sequence, followed by an output projection, become one
// selfAttention layer; any other attention (queries over another sequence's keys and values,
// keys or values without a projection, heads read without an output projection) an attention
// layer between fullyConnected layers of the projections' columns.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "onnx/onnx_importer.h"

namespace dlt::onnx_detail {

namespace {

// A view reading one operand of an attention (Q, K^T or V) from a projection's columns:
// (heads..., rows, cols) with the matrix in the last two dimensions, transposed for K^T.
struct Operand {
  int64_t heads = 1, dim = 0, col = 0;
  int64_t step = 0;              // the columns from one head to the next; 0: dim (side by side)
  std::vector<int64_t> leading;  // the dimensions before the matrix (the heads among size-1 ones)
};
std::optional<Operand> operand(const Importer::View& v, int64_t seq, int64_t cols, bool transposed) {
  const size_t r = v.dims.size();
  if (r < 2) return std::nullopt;
  const size_t seq_axis = transposed ? r - 1 : r - 2, ch_axis = transposed ? r - 2 : r - 1;
  Operand o;
  o.dim = v.dims[ch_axis];
  if (v.dims[seq_axis] != seq || (seq > 1 && v.strides[seq_axis] != cols)) return std::nullopt;
  if (o.dim > 1 && v.strides[ch_axis] != 1) return std::nullopt;
  o.leading.assign(v.dims.begin(), v.dims.end() - 2);
  for (size_t i = 0; i + 2 < r; ++i) {
    if (v.dims[i] == 1) continue;
    if (o.heads > 1 || v.strides[i] < o.dim) return std::nullopt;
    o.heads = v.dims[i];
    if (v.strides[i] != o.dim) o.step = v.strides[i];  // heads apart (LeViT's Q, K, V per head)
  }
  o.col = v.offset;
  const int64_t step = o.step ? o.step : o.dim;
  if (o.col < 0 || o.col + (o.heads - 1) * step + o.dim > cols) return std::nullopt;
  return o;
}

// Strides of a (leading..., rows, cols) result whose heads dimension (the one leading
// dimension larger than 1) steps by head_stride.
std::vector<int64_t> result_strides(const std::vector<int64_t>& leading, int64_t head_stride, int64_t row_stride) {
  std::vector<int64_t> s;
  for (int64_t d : leading) s.push_back(d > 1 ? head_stride : 0);
  s.push_back(row_stride);
  s.push_back(1);
  return s;
}

}  // namespace

// Add of a constant to the scores: a (queries, keys) causal mask (0 on and below the diagonal,
// -inf or a float at least as low as -1e30 above it: no weight for the later keys; the same
// before or after the scale), or a bias of one value per head and pair of tokens, (heads,
// queries, keys) or (queries, keys) for every head (BEiT's relative position bias, gathered
// from its table): selfAttention's ScoreBias.
void Importer::scores_addend(const onnx::NodeProto& n, int vi, const View& v) {
  Source& s = sources_[static_cast<size_t>(v.source)];
  if (s.channel)
    fail(n,
         "adds a constant to attention scores across channels (Q^T K); dltrain's channelAttention reads no mask "
         "or bias there");
  const onnx::TensorProto& t = *constant(n.input(1 - vi));
  const std::vector<int64_t> d = dims_of(t);
  const int64_t rows = s.rows, cols = s.cols, heads = s.heads;
  // The scores in their own order: (.., heads, queries, keys) row-major, as Q K^T made them.
  const size_t r = v.dims.size();
  bool whole = r >= 2 && v.dims.back() == cols && v.dims[r - 2] == rows && v.offset == 0 &&
               (cols == 1 || v.strides[r - 1] == 1) && (rows == 1 || v.strides[r - 2] == cols);
  for (size_t i = 0; i + 2 < r; ++i) whole = whole && (v.dims[i] == 1 || v.strides[i] == rows * cols);
  const bool plane = d.size() >= 2 && d[d.size() - 1] == cols && d[d.size() - 2] == rows;
  bool causal = plane && whole && product(d) == rows * cols;
  const std::vector<float> m = plane && whole ? need_floats(n, 1 - vi, "scores' addend") : std::vector<float>{};
  if (causal)
    for (int64_t r = 0; r < rows && causal; ++r)
      for (int64_t c = 0; c < cols && causal; ++c) {
        const float x = m[static_cast<size_t>(r * cols + c)];
        causal = c <= r ? x == 0.f : x <= -1e30f;
      }
  if (causal) {
    s.causal = true;
    views_[define(n)] = v;
    return;
  }
  // A bias per head: the view's heads dimension (the one leading dimension larger than 1) must
  // be the constant's dimension in the same place from the end, every other one 1.
  // A mask (an entry of -inf or at most -1e30) other than the causal one is refused, not learnt.
  bool per_head =
      plane && whole && s.score_bias.empty() && (product(d) == rows * cols || product(d) == heads * rows * cols);
  for (float x : m) per_head = per_head && std::isfinite(x) && x > -1e30f;
  if (per_head && !(std::isfinite(v.scale) && v.scale != 0))
    fail(n, "adds a bias to attention scores scaled by " + std::to_string(v.scale) +
                "; dltrain reads a bias on "
                "scores scaled by a finite number other than 0");
  if (per_head && product(d) == heads * rows * cols && heads > 1) {
    const size_t k = d.size();
    for (size_t i = 0; i + 2 < r && per_head; ++i) {
      const int64_t dc = i + k >= r ? d[i + k - r] : 1;
      per_head = v.dims[i] > 1 ? dc == v.dims[i] && v.dims[i] == heads : dc == 1;
    }
    for (size_t i = 0; i + 2 < k && i + r < k; ++i) per_head = per_head && d[i] == 1;
  }
  if (per_head && !s.mix[0].empty())
    fail(n,
         "adds a bias per pair of tokens to attention scores mixed across the heads; dltrain reads such a bias "
         "before the heads' mix (and a causal mask or the mix's own bias after it)");
  if (!per_head)
    fail(n, "adds a " + dims_str(t) + " constant to attention scores " + ints_str(v.dims) +
                "; dltrain reads there a causal mask ((queries, keys): 0 on and below the diagonal, -inf above it) "
                "or a finite bias per head and pair of tokens ((heads, queries, keys) or (queries, keys))");
  std::vector<float> b(static_cast<size_t>(heads * rows * cols));
  for (size_t i = 0; i < b.size(); ++i) b[i] = m[m.size() == b.size() ? i : i % m.size()] / static_cast<float>(v.scale);
  s.score_bias = std::move(b);
  views_[define(n)] = v;
}

void Importer::view_softmax(const onnx::NodeProto& n, const View& v) {
  const Source& s = sources_[static_cast<size_t>(v.source)];
  const int64_t r = static_cast<int64_t>(v.dims.size());
  int64_t axis = attr_int(n, "axis", -1);
  if (axis < 0) axis += r;
  if (s.kind != Source::kScores || axis != r - 1 || v.dims.back() != s.cols || (s.cols > 1 && v.strides.back() != 1))
    fail(n, "is a Softmax of " + ints_str(v.dims) + " that is not over the keys of attention scores Q K^T");
  Source p = s;
  p.kind = Source::kProbs;
  if (s.mix[0].empty()) {
    p.scale = v.scale;        // the scores' own scale was put into the view
  } else if (v.scale != 1) {  // the mix took the scores' scale; a factor after it is another form
    fail(n,
         "is a Softmax of attention scores mixed across the heads and then scaled; dltrain reads the scale "
         "before the heads' mix");
  }
  sources_.push_back(p);
  View out = v;
  out.source = static_cast<int>(sources_.size() - 1);
  out.scale = 1;
  views_[define(n)] = out;
}

void Importer::view_matmul(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (n.input_size() < 2) fail(n, "has too few inputs");
  if (constant(n.input(1))) {  // a projection, or the attention's output projection
    std::vector<int64_t> d = dims_of(*constant(n.input(1)));
    if (d.size() != 2) fail(n, "multiplies tokens by a constant of rank " + std::to_string(d.size()) + ", expected 2");
    const bool trans_b = op == "Gemm" && attr_int(n, "transB", 0) != 0;
    if (op == "Gemm" && attr_int(n, "transA", 0) != 0) fail(n, "transA 1 is not supported");
    const float alpha = op == "Gemm" ? attr_float(n, "alpha", 1.f) : 1.f;
    const int64_t in = trans_b ? d[1] : d[0], k = trans_b ? d[0] : d[1];
    std::vector<float> w = need_floats(n, 1, "weight");
    if (trans_b) {  // as MatMul reads it: (in, k)
      std::vector<float> t(w.size());
      for (int64_t o = 0; o < k; ++o)
        for (int64_t i = 0; i < in; ++i) t[static_cast<size_t>(i * k + o)] = w[static_cast<size_t>(o * in + i)];
      w = std::move(t);
    }
    for (float& x : w) x *= alpha;
    std::vector<float> bias(static_cast<size_t>(k), 0.f);
    if (op == "Gemm" && n.input_size() > 2 && !n.input(2).empty()) {
      std::vector<float> b = need_floats(n, 2, "bias");
      if (b.size() == 1) b.assign(static_cast<size_t>(k), b[0]);
      if (static_cast<int64_t>(b.size()) != k)
        fail(n, "bias has " + std::to_string(b.size()) + " values for " + std::to_string(k));
      const float beta = attr_float(n, "beta", 1.f);
      for (size_t o = 0; o < b.size(); ++o) bias[o] = beta * b[o];
    }
    View v = view_of(n, 0);
    if (rotation_matmul(n, v, w, in, k)) return;
    const Source::Kind kind = sources_[static_cast<size_t>(v.source)].kind;
    if (kind == Source::kScores || kind == Source::kProbs) return head_mix(n, v, w, in, k);
    if (token_range(v)) {  // a projection of some of the tokens (PiT's class token): their tokenSlice
      const Value t = tokens_of(n, v);
      const int64_t rows = t.shape[0] * t.shape[1], cols = t.shape[2];
      v = View{tokens_source(t), {1, rows, cols}, {rows * cols, cols, 1}, 0, 1};
    }
    if (sources_[static_cast<size_t>(v.source)].kind == Source::kHeads) {
      if (self_attention(v.source) && !sources_[static_cast<size_t>(v.source)].channel)
        return attention(n, v, w, k, bias);
      v.source = attention_layer(n, v.source);  // the attention layer's output, projected by this MatMul
    }
    if (sources_[static_cast<size_t>(v.source)].kind == Source::kProjection) {
      tokens_of(n, v);  // a projection of a projection: the first one made a layer
      v.source = sources_[static_cast<size_t>(v.source)].materialized;
    }
    const Source& s = sources_[static_cast<size_t>(v.source)];
    const int64_t row = row_dim(v, s.rows, s.cols);
    if (s.kind != Source::kTokens || row < -1 || v.scale != 1 || s.cols != in)
      fail(n, "multiplies a " + ints_str(v.dims) + " value by a " + std::to_string(in) + "x" + std::to_string(k) +
                  " constant; dltrain reads it as a projection of each token of a (N, S, " + std::to_string(s.cols) +
                  ") sequence");
    Source p;
    p.kind = Source::kProjection;
    p.tokens = s.tokens;
    p.node = node_name(n);
    p.rows = s.rows;
    p.cols = k;
    p.weight = std::move(w);
    p.bias = std::move(bias);
    sources_.push_back(std::move(p));
    View out = v;
    out.source = static_cast<int>(sources_.size() - 1);
    out.dims.back() = k;
    for (size_t i = 0; i + 1 < out.dims.size(); ++i) out.strides[i] = static_cast<int64_t>(i) == row ? k : 0;
    views_[define(n)] = out;
    return;
  }
  if (op != "MatMul" || (!has_view(n, 0) && !has_view(n, 1)))
    fail(n, "multiplies two computed values that are not the operands of an attention (Q K^T or softmax times V)");
  View a = view_of(n, 0), b = view_of(n, 1);  // a token sequence or a flattened image: a view of it
  a.source = operand_source(a.source);
  b.source = operand_source(b.source);
  // V^T times the weights transposed (SHViT's v @ attn^T): (P V)^T, read as P V and transposed back.
  const std::string operands = ints_str(a.dims) + " by " + ints_str(b.dims);  // as the graph has them
  bool transposed_out = false;
  if (const Source::Kind ka = sources_[static_cast<size_t>(a.source)].kind,
      kb = sources_[static_cast<size_t>(b.source)].kind;
      kb == Source::kProbs && (ka == Source::kTokens || ka == Source::kProjection) &&
      !sources_[static_cast<size_t>(b.source)].channel && a.dims.size() >= 2 && b.dims.size() >= 2) {
    const View at = last_two_swapped(a);
    a = last_two_swapped(b);
    b = at;
    transposed_out = true;
  }
  const Source &sa = sources_[static_cast<size_t>(a.source)], &sb = sources_[static_cast<size_t>(b.source)];
  // An operand: the columns of a projection not yet made a layer, or of a token sequence.
  const bool proj_a = sa.kind == Source::kTokens || (sa.kind == Source::kProjection && sa.materialized < 0);
  const bool proj_b = sb.kind == Source::kTokens || (sb.kind == Source::kProjection && sb.materialized < 0);
  if (proj_a && proj_b) {  // the scores Q K^T (as many keys as queries or not: cross-attention)
    // The scores' source (rows x cols per head) and its view, the operands' leading dimensions first.
    auto scores = [&](const Operand& x, const Operand& y, int64_t rows, int64_t cols, bool channel) {
      Source s;
      s.kind = Source::kScores;
      s.channel = channel;
      s.unit = a.unit_stride != 0;
      s.tokens = sa.tokens;
      s.rows = rows;
      s.cols = cols;
      s.q = a.source;
      s.k = b.source;
      s.q_col = x.col;
      s.k_col = y.col;
      s.q_step = x.step;
      s.k_step = y.step;
      s.heads = x.heads;
      s.key_dim = x.dim;
      if (channel) s.value_dim = x.dim;
      sources_.push_back(s);
      View out;
      out.source = static_cast<int>(sources_.size() - 1);
      out.dims = x.leading;
      out.dims.push_back(rows);
      out.dims.push_back(cols);
      out.strides = result_strides(x.leading, rows * cols, cols);
      out.scale = a.scale * b.scale;
      views_[define(n)] = out;
    };
    const auto q = operand(a, sa.rows, sa.cols, false), k = operand(b, sb.rows, sb.cols, true);
    // ... or Q^T K over the same tokens (attention across channels: XCiT, DaViT): d x d per head
    const auto qt = operand(a, sa.rows, sa.cols, true), kc = operand(b, sb.rows, sb.cols, false);
    // Q and K L2-normalized over the tokens (XCiT's F.normalize): across channels, both or neither
    const bool unit = a.unit_stride || b.unit_stride;
    if (unit && !(a.unit_stride == sa.cols && b.unit_stride == sb.cols && !(q && k) && qt && kc))
      fail(n, "multiplies " + ints_str(a.dims) + " by " + ints_str(b.dims) +
                  " with an L2-normalized operand; dltrain reads normalized operands only as XCiT's attention across "
                  "channels: Q^T K with both Q and K divided by their norms over the tokens");
    if (!(q && k) && qt && kc && qt->leading == kc->leading && qt->heads == kc->heads && qt->dim == kc->dim &&
        sa.rows == sb.rows) {
      if (a.rotary >= 0 || b.rotary >= 0 || a.rot || b.rot)
        fail(n, "rotates the operands of attention across channels; dltrain reads a rotary embedding in Q K^T");
      return scores(*qt, *kc, qt->dim, qt->dim, true);
    }
    // One head of K for all of Q's (multi-query attention): its leading dimensions all 1.
    const bool shared = q && k && q->heads > 1 && k->heads == 1 && q->leading.size() == k->leading.size() &&
                        std::all_of(k->leading.begin(), k->leading.end(), [](int64_t d) { return d == 1; });
    if (!q || !k || (q->leading != k->leading && !shared) || (q->heads != k->heads && !shared) || q->dim != k->dim)
      fail(n, "multiplies " + ints_str(a.dims) + " by " + ints_str(b.dims) +
                  ", which dltrain does not read as the scores Q K^T of heads of projected tokens");
    const int rot = sa.rows == sb.rows ? scores_rotary(n, a, b, q->col, k->col, q->dim, q->step, sa.rows) : -1;
    if (sa.rows != sb.rows && (a.rotary >= 0 || b.rotary >= 0 || a.rot || b.rot))
      fail(n, "rotates the operands of cross-attention (" + std::to_string(sa.rows) + " queries, " +
                  std::to_string(sb.rows) + " keys); dltrain reads a rotary embedding in self-attention");
    scores(*q, *k, sa.rows, sb.rows, false);
    sources_.back().rotary = rot;
    sources_.back().k_shared = shared;
    return;
  }
  if (sa.kind == Source::kProbs && proj_b) {  // softmax times V (across channels: the weights times V^T)
    const bool channel = sa.channel;
    const auto v = operand(b, sb.rows, sb.cols, channel);
    std::vector<int64_t> lead(a.dims.begin(), a.dims.end() - 2);
    const bool probs_whole = a.dims.size() >= 2 && a.dims[a.dims.size() - 2] == sa.rows && a.dims.back() == sa.cols &&
                             a.scale == 1 && (sa.rows == 1 || a.strides[a.dims.size() - 2] == sa.cols);
    // the output's rows: the queries, or (across channels) the tokens V and Q share
    const int64_t rows = channel ? sources_[static_cast<size_t>(sa.q)].rows : sa.rows;
    // One head of V for all the weights' heads (multi-query attention): its leading dimensions all 1.
    const bool shared = v && !channel && sa.heads > 1 && v->heads == 1 && v->leading.size() == lead.size() &&
                        std::all_of(v->leading.begin(), v->leading.end(), [](int64_t d) { return d == 1; });
    if (!v || !probs_whole || b.scale != 1 || b.unit_stride || b.rot || b.rotary >= 0 ||
        (v->leading != lead && !shared) || (v->heads != sa.heads && !shared) ||
        (channel ? sb.rows != rows || v->dim != sa.cols : sb.rows != sa.cols))
      fail(n, "multiplies " + operands + ", which dltrain does not read as the " +
                  (channel          ? "weights across channels times the heads of V transposed"
                   : transposed_out ? "heads of V transposed times the attention weights transposed"
                                    : "attention weights times the heads of V"));
    Source s = sa;
    s.kind = Source::kHeads;
    s.v = b.source;
    s.v_col = v->col;
    s.v_step = v->step;
    s.v_shared = shared;
    s.rows = rows;
    s.value_dim = v->dim;
    s.cols = s.heads * s.value_dim;
    sources_.push_back(s);
    View out;  // (lead..., rows, value_dim); across channels its transpose O^T (lead..., d, tokens)
    out.source = static_cast<int>(sources_.size() - 1);
    out.dims = lead;
    out.dims.push_back(s.rows);
    out.dims.push_back(s.value_dim);
    out.strides = result_strides(lead, s.value_dim, s.cols);
    if (channel != transposed_out) out = last_two_swapped(out);
    views_[define(n)] = out;
    return;
  }
  fail(n, "multiplies two computed values that are not the operands of an attention (Q K^T or softmax times V)");
}

// Whether v reads all of its scores or probabilities source with the heads on its last axis
// (the other axes the queries and the keys in any order): CaiT's permute(0, 2, 3, 1).
bool Importer::heads_last(const View& v) const {
  const Source& s = sources_[static_cast<size_t>(v.source)];
  const size_t r = v.dims.size();
  if (r < 1 || v.offset != 0 || v.dims.back() != s.heads || (s.heads > 1 && v.strides.back() != s.rows * s.cols))
    return false;
  // every other axis larger than 1: the queries (stride cols) or the keys (stride 1), once each
  int64_t seen_rows = 0, seen_cols = 0;
  for (size_t i = 0; i + 1 < r; ++i) {
    if (v.dims[i] == 1) continue;
    if (v.dims[i] == s.rows && v.strides[i] == s.cols && !seen_rows)
      seen_rows = 1;
    else if (v.dims[i] == s.cols && v.strides[i] == 1 && !seen_cols)
      seen_cols = 1;
    else
      return false;
  }
  return (seen_rows || s.rows == 1) && (seen_cols || s.cols == 1);
}

// MatMul of attention scores or probabilities, the heads last, by an (in, out) constant: CaiT's
// talking heads, a Linear over the heads before the softmax (the scores, with their scale) or
// after it (the probabilities): the source's mix, its bias 0 until an Add gives it one.
void Importer::head_mix(const onnx::NodeProto& n, const View& v, const std::vector<float>& w, int64_t in, int64_t out,
                        const std::vector<float>* bias) {
  const Source& s = sources_[static_cast<size_t>(v.source)];
  const int m = s.kind == Source::kScores ? 0 : 1;
  const char* what = m == 0 ? "attention scores" : "attention weights";
  // A 1x1 Conv over the heads as channels (EfficientFormer V2): (1, heads, rows, cols) in Q K^T's order.
  const bool conv = n.op_type() == "Conv";
  if (conv && (s.channel || v.dims.size() != 4 || heads_axis(v) != 1 || in != s.heads || out != s.heads))
    fail(n, std::string("convolves ") + what + " " + ints_str(v.dims) + " with " + std::to_string(out) +
                " filters; dltrain reads there talking heads: a 1x1 Conv of the " + std::to_string(s.heads) +
                " heads of Q K^T (1, heads, queries, keys) into as many");
  if (!conv && (s.channel || !heads_last(v) || in != s.heads || out != s.heads))
    fail(n, std::string("multiplies ") + what + " " + ints_str(v.dims) + " by a " + std::to_string(in) + "x" +
                std::to_string(out) + " constant; dltrain reads there talking heads: the " + std::to_string(s.heads) +
                " heads of Q K^T on the last axis (permute(0, 2, 3, 1)) mixed by a " + std::to_string(s.heads) + "x" +
                std::to_string(s.heads) + " Linear");
  if (!s.mix[m].empty())
    fail(n, std::string("mixes the heads of ") + what +
                " a second time; dltrain reads one mix before the softmax "
                "and one after it");
  if (m == 0 && s.causal)
    fail(n, "mixes the heads of attention scores after a causal mask; dltrain reads the mask after the heads' mix");
  if (m == 1 && v.scale != 1)
    fail(n, "mixes the heads of attention weights scaled by " + std::to_string(v.scale) +
                "; dltrain reads the softmax's weights unscaled there");
  Source p = s;
  p.mix[m].assign(static_cast<size_t>(in * in), 0.f);
  for (int64_t o = 0; o < in; ++o)
    for (int64_t i = 0; i < in; ++i) p.mix[m][static_cast<size_t>(o * in + i)] = w[static_cast<size_t>(i * in + o)];
  p.mix_bias[m].assign(static_cast<size_t>(in), 0.f);
  if (bias) p.mix_bias[m] = *bias;
  if (m == 0) p.scale = v.scale;  // the scores' scale, applied before the mix
  sources_.push_back(std::move(p));
  View r = v;
  r.source = static_cast<int>(sources_.size() - 1);
  r.scale = 1;
  views_[define(n)] = r;
}

// A 1x1 Conv (heads -> heads, no group, stride or padding) of attention scores or weights
// (1, heads, queries, keys): EfficientFormer V2's talking heads, its bias the mix's.
void Importer::head_conv(const onnx::NodeProto& n, const View& v) {
  if (n.input_size() < 2 || !constant(n.input(1))) fail(n, "has a computed weight");
  const std::vector<int64_t> d = dims_of(*constant(n.input(1)));
  if (d.size() != 4 || d[2] != 1 || d[3] != 1 || attr_int(n, "group", 1) != 1 ||
      attr_ints(n, "strides", {1, 1}) != std::vector<int64_t>{1, 1} ||
      attr_ints(n, "pads", {0, 0, 0, 0}) != std::vector<int64_t>{0, 0, 0, 0} ||
      attr_ints(n, "dilations", {1, 1}) != std::vector<int64_t>{1, 1})
    fail(n, "convolves attention scores or weights with a " + ints_str(d) +
                " kernel; dltrain reads there talking heads: a 1x1 Conv without groups, stride or padding");
  const int64_t out = d[0], in = d[1];
  const std::vector<float> k = need_floats(n, 1, "weight");  // (out, in)
  std::vector<float> w(static_cast<size_t>(in * out));       // as MatMul reads it: (in, out)
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) w[static_cast<size_t>(i * out + o)] = k[static_cast<size_t>(o * in + i)];
  std::vector<float> b(static_cast<size_t>(out), 0.f);
  if (n.input_size() > 2 && !n.input(2).empty()) {
    b = need_floats(n, 2, "bias");
    if (static_cast<int64_t>(b.size()) != out) fail(n, "bias has " + std::to_string(b.size()) + " values");
  }
  head_mix(n, v, w, in, out, &b);
}

// An Add of a constant of one value per head to mixed scores or weights, the heads last: the
// mix's bias (the Linear's); false when v is not such a value (the caller reads the Add).
bool Importer::head_mix_bias(const onnx::NodeProto& n, int vi, const View& v) {
  Source& s = sources_[static_cast<size_t>(v.source)];
  const int m = s.kind == Source::kScores ? 0 : 1;
  if ((s.kind != Source::kScores && s.kind != Source::kProbs) || s.mix[m].empty() || !heads_last(v)) return false;
  const onnx::TensorProto* t = constant(n.input(1 - vi));
  if (!t) return false;
  const std::vector<int64_t> d = dims_of(*t);
  const bool one = product(d) == 1, per_head = !d.empty() && d.back() == s.heads && product(d) == s.heads;
  if (!one && !per_head) return false;
  std::vector<float> b = need_floats(n, 1 - vi, "the heads' mix bias");
  for (size_t g = 0; g < s.mix_bias[m].size(); ++g) s.mix_bias[m][g] += b[one ? 0 : g];
  views_[define(n)] = v;
  return true;
}

// The axis of v that steps through the heads of its scores or weights source, when v reads all
// of them in Q K^T's order ((.., heads, rows, cols), size-1 axes anywhere); -1 otherwise.
int Importer::heads_axis(const View& v) const {
  const Source& s = sources_[static_cast<size_t>(v.source)];
  const size_t r = v.dims.size();
  if (r < 2 || v.offset != 0 || v.dims[r - 1] != s.cols || v.dims[r - 2] != s.rows ||
      (s.cols > 1 && v.strides[r - 1] != 1) || (s.rows > 1 && v.strides[r - 2] != s.cols))
    return -1;
  int axis = -1;
  for (size_t i = 0; i + 2 < r; ++i) {
    if (v.dims[i] == 1) continue;
    if (axis >= 0 || v.dims[i] != s.heads || v.strides[i] != s.rows * s.cols) return -1;
    axis = static_cast<int>(i);
  }
  return axis >= 0 || s.heads == 1 ? std::max(axis, 0) : -1;
}

namespace {

// Whether constant dims d, aligned from the end with a view of rank r whose heads are on axis
// `heads`, varies along that axis only (its size there `count`, 1 elsewhere).
bool per_head_dims(const std::vector<int64_t>& d, size_t r, int heads, int64_t count) {
  if (d.size() > r) return false;
  for (size_t i = 0; i < d.size(); ++i) {
    const size_t at = r - d.size() + i;
    if (d[i] != (static_cast<int>(at) == heads ? count : 1) && d[i] != 1) return false;
  }
  return product(d) == count;
}

// The head mix bias b (heads values) as one value per head and pair of `plane` tokens.
std::vector<float> per_pair(const std::vector<float>& b, int64_t plane) {
  std::vector<float> out;
  for (float x : b) out.insert(out.end(), static_cast<size_t>(plane), x);
  return out;
}

}  // namespace

// Mul of attention weights by one factor per head (ConViT's 1 - sigmoid(gate)): the weights'
// mix, diagonal where there was none, its rows scaled (and its bias) where there was one.
void Importer::probs_scale(const onnx::NodeProto& n, int vi, const std::vector<float>& c) {
  const View v = views_.at(n.input(vi));
  const Source& s = sources_[static_cast<size_t>(v.source)];
  const int axis = heads_axis(v);
  if (axis < 0 || v.scale != 1 || !per_head_dims(dims_of(*constant(n.input(1 - vi))), v.dims.size(), axis, s.heads) ||
      static_cast<int64_t>(c.size()) != s.heads)
    fail(n, "multiplies attention weights " + ints_str(v.dims) + " by a " + dims_str(*constant(n.input(1 - vi))) +
                " constant; dltrain reads there one factor per head ((" + std::to_string(s.heads) +
                ", 1, 1): ConViT's gate)");
  const int64_t h = s.heads;
  Source p = s;
  if (p.mix[1].empty()) {
    p.mix[1].assign(static_cast<size_t>(h * h), 0.f);
    for (int64_t g = 0; g < h; ++g) p.mix[1][static_cast<size_t>(g * h + g)] = 1.f;
    p.mix_bias[1].assign(static_cast<size_t>(h), 0.f);
  }
  const int64_t per = static_cast<int64_t>(p.mix_bias[1].size()) / h;  // 1 or plane
  for (int64_t g = 0; g < h; ++g) {
    for (int64_t i = 0; i < h; ++i) p.mix[1][static_cast<size_t>(g * h + i)] *= c[static_cast<size_t>(g)];
    for (int64_t e = 0; e < per; ++e) p.mix_bias[1][static_cast<size_t>(g * per + e)] *= c[static_cast<size_t>(g)];
  }
  sources_.push_back(std::move(p));
  View r = v;
  r.source = static_cast<int>(sources_.size() - 1);
  views_[define(n)] = r;
}

// Add of a constant to attention weights in Q K^T's order: one value per head, or per head and
// pair of tokens ((heads, rows, cols), or (rows, cols) for every head: ConViT's gated positional
// weights): the weights' mix bias (an identity mix where there was none).
void Importer::probs_addend(const onnx::NodeProto& n, int vi, const View& v) {
  Source s = sources_[static_cast<size_t>(v.source)];  // a new source: the weights before it may be read too
  const std::vector<int64_t> d = dims_of(*constant(n.input(1 - vi)));
  const int axis = heads_axis(v);
  const int64_t h = s.heads, plane = s.rows * s.cols;
  const size_t r = v.dims.size();
  const bool head = axis >= 0 && per_head_dims(d, r, axis, h);
  // (.., heads, rows, cols) or (rows, cols) from the end, the heads where the view has them
  bool pair = axis >= 0 && d.size() >= 2 && d.size() <= r && d[d.size() - 1] == s.cols && d[d.size() - 2] == s.rows &&
              (product(d) == plane || product(d) == h * plane);
  for (size_t i = 0; pair && i + 2 < d.size(); ++i) {
    const size_t at = r - d.size() + i;
    pair = d[i] == 1 || (static_cast<int>(at) == axis && d[i] == h);
  }
  if (axis < 0 || v.scale != 1 || (!head && !pair))
    fail(n, "adds a " + dims_str(*constant(n.input(1 - vi))) + " constant to attention weights " + ints_str(v.dims) +
                "; dltrain reads there one value per head or per head and pair of tokens ((" + std::to_string(h) +
                ", " + std::to_string(s.rows) + ", " + std::to_string(s.cols) + "): ConViT's positional weights)");
  const std::vector<float> b = need_floats(n, 1 - vi, "the attention weights' bias");
  if (s.mix[1].empty()) {
    s.mix[1].assign(static_cast<size_t>(h * h), 0.f);
    for (int64_t g = 0; g < h; ++g) s.mix[1][static_cast<size_t>(g * h + g)] = 1.f;
    s.mix_bias[1].assign(static_cast<size_t>(h), 0.f);
  }
  std::vector<float>& to = s.mix_bias[1];
  if (pair && static_cast<int64_t>(to.size()) == h) to = per_pair(to, plane);
  const int64_t per = static_cast<int64_t>(to.size()) / h;
  for (int64_t g = 0; g < h; ++g)
    for (int64_t e = 0; e < per; ++e) {
      const int64_t from = head ? g : static_cast<int64_t>(b.size()) == plane ? e : g * plane + e;
      to[static_cast<size_t>(g * per + e)] += b[static_cast<size_t>(from)];
    }
  sources_.push_back(std::move(s));
  View out = v;
  out.source = static_cast<int>(sources_.size() - 1);
  views_[define(n)] = out;
}

// ReduceSum of attention weights over the keys, its Unsqueeze back, and the Div of the weights by
// it (ConViT's attn /= attn.sum(-1)): read where every row of the weights already sums to 1 (a
// softmax, mixed by a mix whose row and bias sums are 1), so it changes nothing; refused otherwise.
bool Importer::view_row_sum(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op == "ReduceSum" && has_view(n, 0)) {
    const View& v = views_.at(n.input(0));
    if (sources_[static_cast<size_t>(v.source)].kind != Source::kProbs) return false;
    std::vector<int64_t> axes = attr_ints(n, "axes", {});
    if (n.input_size() > 1 && !n.input(1).empty())
      axes = ints_of(need_const(n, 1, "axes"), path_ + ": node '" + node_name(n) + "'");
    const int64_t r = static_cast<int64_t>(v.dims.size());
    if (axes.size() != 1 || (axes[0] != -1 && axes[0] != r - 1) || heads_axis(v) < 0)
      fail(n, "sums attention weights " + ints_str(v.dims) + " over axes " + ints_str(axes) +
                  "; dltrain reads only the sum of each row (over the keys, axes [-1])");
    row_sums_[define(n)] = {n.input(0), attr_int(n, "keepdims", 1) != 0};
    return true;
  }
  if (op == "Unsqueeze" && n.input_size() > 0 && row_sums_.count(n.input(0))) {
    const auto sum = row_sums_.at(n.input(0));
    std::vector<int64_t> axes = attr_ints(n, "axes", {});
    if (n.input_size() > 1 && !n.input(1).empty())
      axes = ints_of(need_const(n, 1, "axes"), path_ + ": node '" + node_name(n) + "'");
    const int64_t r = static_cast<int64_t>(views_.at(sum.first).dims.size());
    if (sum.second || axes.size() != 1 || (axes[0] != -1 && axes[0] != r - 1))
      fail(n, "unsqueezes the sums of attention weights' rows on axes " + ints_str(axes) +
                  "; dltrain reads only their last axis back (keepdim)");
    row_sums_[define(n)] = {sum.first, true};
    return true;
  }
  if (op == "Div" && n.input_size() == 2 && row_sums_.count(n.input(1))) {
    const auto sum = row_sums_.at(n.input(1));
    if (sum.first != n.input(0) || !sum.second)
      fail(n,
           "divides a value by the sums of attention weights' rows; dltrain reads only the weights divided by "
           "their own rows' sums (keepdim)");
    const View v = views_.at(n.input(0));
    const Source& s = sources_[static_cast<size_t>(v.source)];
    // each row's sum: sum_h W[g, h] (the softmax rows sum to 1) plus the bias over the keys
    const int64_t h = s.heads, per = s.mix_bias[1].empty() ? 0 : static_cast<int64_t>(s.mix_bias[1].size()) / h;
    double worst = 0;
    for (int64_t g = 0; g < h && !s.mix[1].empty(); ++g)
      for (int64_t i = 0; i < s.rows; ++i) {
        double sum = 0;
        for (int64_t j = 0; j < h; ++j) sum += s.mix[1][static_cast<size_t>(g * h + j)];
        for (int64_t j = 0; j < s.cols; ++j)
          sum += per == 1 ? s.mix_bias[1][static_cast<size_t>(g)]
                          : s.mix_bias[1][static_cast<size_t>(g * per + i * s.cols + j)];
        worst = std::max(worst, std::fabs(sum - 1));
      }
    if (v.scale != 1 || worst > 1e-4)
      fail(n, "divides attention weights by their rows' sums, which are not 1 (off by " + std::to_string(worst) +
                  "); dltrain reads that division only where every row already sums to 1");
    views_[define(n)] = v;
    return true;
  }
  return false;
}

// TalkingHeads and the four mixes (identity and 0 for one the graph has not) on an attention
// layer's spec.
void Importer::talking_heads(LayerSpec& spec, const Source& a) {
  if (a.mix[0].empty() && a.mix[1].empty()) return;
  spec.set("TalkingHeads", "true");
  const int64_t h = a.heads;
  const char* names[2][2] = {{"ScoreMixWeights", "ScoreMixBias"}, {"ProbabilityMixWeights", "ProbabilityMixBias"}};
  for (int m = 0; m < 2; ++m) {
    std::vector<float> w = a.mix[m], b = a.mix_bias[m];
    if (w.empty()) {
      w.assign(static_cast<size_t>(h * h), 0.f);
      for (int64_t i = 0; i < h; ++i) w[static_cast<size_t>(i * h + i)] = 1.f;
      b.assign(static_cast<size_t>(h), 0.f);
    }
    const bool pairs = static_cast<int64_t>(b.size()) != h;  // the weights' bias per pair of tokens
    if (pairs) spec.set("ProbabilityMixBiasPerPair", "true");
    add_param(spec.name, names[m][0], Shape{h, h}, std::move(w));
    const Shape bias_shape = pairs ? Shape{h, a.rows, sources_[static_cast<size_t>(a.k)].rows} : Shape{h};
    add_param(spec.name, names[m][1], bias_shape, std::move(b));
  }
}

// Columns [col, col + count) of a (c, cols) projection as `count` rows of fullyConnected weights
// (times f); in `heads` blocks `step` columns apart when step is not 0.
void projection_rows(const std::vector<float>& w, const std::vector<float>& b, int64_t c, int64_t cols, int64_t col,
                     int64_t count, float f, std::vector<float>& weights, std::vector<float>& bias, int64_t heads,
                     int64_t step) {
  weights.assign(static_cast<size_t>(count * c), 0.f);
  bias.assign(static_cast<size_t>(count), 0.f);
  const int64_t per = count / heads, st = step ? step : per;
  for (int64_t o = 0; o < count; ++o) {
    const int64_t from = col + o / per * st + o % per;
    for (int64_t i = 0; i < c; ++i)
      weights[static_cast<size_t>(o * c + i)] = f * w[static_cast<size_t>(i * cols + from)];
    bias[static_cast<size_t>(o)] = f * b[static_cast<size_t>(from)];
  }
}

// The source an attention operand reads: a projection already made a layer is read as that
// layer's tokens (the same rows and columns).
int Importer::operand_source(int source) const {
  const Source& s = sources_[static_cast<size_t>(source)];
  return s.kind == Source::kProjection && s.materialized >= 0 ? s.materialized : source;
}

// Queries, keys and values all columns of pending projections of one token sequence: the chain
// with its output projection is one selfAttention layer. Otherwise (cross-attention, keys or
// values without a projection, heads read without one) it is an attention layer between
// fullyConnected projections (attention_layer).
bool Importer::self_attention(int heads) const {
  const Source& a = sources_[static_cast<size_t>(heads)];
  const Source *q = &sources_[static_cast<size_t>(a.q)], *k = &sources_[static_cast<size_t>(a.k)],
               *v = &sources_[static_cast<size_t>(a.v)];
  for (const Source* p : {q, k, v})
    if (p->kind != Source::kProjection || p->materialized >= 0) return false;
  if (a.k_shared || a.v_shared) return false;  // multi-query: the attention layer on K and V repeated
  return q->tokens.name == k->tokens.name && q->tokens.name == v->tokens.name;
}

// Columns [col, col + count) of an operand's source as a token sequence: a whole token sequence
// as it is; a projection's columns as a fullyConnected layer (the whole projection as its own
// layer, named after its MatMul; a part of it, as a joint QKV projection's, as a layer of those
// columns named after the MatMul and the role).
Value Importer::operand_tokens(const onnx::NodeProto& n, int source, int64_t col, int64_t count, const char* role,
                               int64_t heads, int64_t step) {
  const Source p = sources_[static_cast<size_t>(source)];
  const int64_t per = count / heads;
  if (step == per) step = 0;
  const bool whole = col == 0 && count == p.cols && step == 0;
  if (p.kind == Source::kTokens && !whole && p.tokens.channels_last) {
    // Some channels of a flattened image (LeViT's Q, K and V of each head side by side, after
    // the projection's BatchNorm): a channelSlice per run of channels, concatenated.
    std::vector<std::string> parts;
    const int64_t runs = step ? heads : 1, width = step ? per : count;
    for (int64_t h = 0; h < runs; ++h) {
      onnx::NodeProto named;
      named.set_name(node_name(n) + "_" + role + (runs > 1 ? "_head" + std::to_string(h + 1) : std::string()));
      LayerSpec& spec = add_layer("channelSlice", unique_name(named), {p.tokens.name});
      spec.set("StartChannel", std::to_string(col + h * step + 1));
      spec.set("NumChannels", std::to_string(width));
      parts.push_back(spec.name);
    }
    last_layer_op_ = "Slice";
    if (parts.size() == 1) return tokens_like(p.tokens, parts[0], count);
    onnx::NodeProto named;
    named.set_name(node_name(n) + "_" + role);
    LayerSpec& cat = add_layer("depthConcatenation", unique_name(named), parts);
    cat.set("NumInputs", std::to_string(parts.size()));
    return tokens_like(p.tokens, cat.name, count);
  }
  if (p.kind == Source::kTokens) {
    if (!whole)
      fail(n, std::string("reads channels [") + std::to_string(col) + ", " + std::to_string(col + count) +
                  ") of a sequence of " + std::to_string(p.cols) + " channels" +
                  (step ? " (heads " + std::to_string(step) + " apart)" : std::string()) + " as the attention's " +
                  role +
                  "; dltrain reads there a whole token sequence, channels of a flattened image or columns of a "
                  "MatMul projection");
    return p.tokens;
  }
  if (whole) {  // a projection's columns in order
    View all;
    all.source = source;
    all.dims = {1, p.rows, p.cols};
    all.strides = {p.rows * p.cols, p.cols, 1};
    return tokens_of(n, all);
  }
  const int64_t c = p.tokens.shape[2];
  std::vector<float> w, b;
  projection_rows(p.weight, p.bias, c, p.cols, col, count, 1.f, w, b, heads, step);
  onnx::NodeProto matmul;  // named after the projection's MatMul
  matmul.set_name(p.node + "_" + role);
  LayerSpec& spec = add_layer("fullyConnected", unique_name(matmul), {p.tokens.name});
  spec.set("OutputSize", std::to_string(count));
  spec.set("OperationDimension", "channel");
  const std::string name = spec.name;
  last_layer_op_ = "MatMul";
  add_param(name, "Weights", Shape{count, c}, std::move(w));
  add_param(name, "Bias", Shape{count}, std::move(b));
  return tokens_like(p.tokens, name, count);
}

// The attention of a kHeads source as an attention layer (MATLAB's attentionLayer) on its
// queries, keys and values (operand_tokens); returns the kTokens source of its output.
int Importer::attention_layer(const onnx::NodeProto& n, int heads) {
  if (sources_[static_cast<size_t>(heads)].materialized >= 0) return sources_[static_cast<size_t>(heads)].materialized;
  const Source a = sources_[static_cast<size_t>(heads)];
  const int64_t key = a.heads * a.key_dim, value = a.heads * a.value_dim;
  const Value q = operand_tokens(n, a.q, a.q_col, key, "query", a.heads, a.q_step);
  // Multi-query attention: the one head of K (or V) repeated for every head along the channels.
  auto repeated = [&](int source, int64_t col, int64_t dim, const char* role) {
    const Value one = operand_tokens(n, source, col, dim, role, 1, 0);
    onnx::NodeProto named;
    named.set_name(node_name(n) + "_" + role + "_heads");
    const std::vector<std::string> copies(static_cast<size_t>(a.heads), one.name);
    LayerSpec& cat = add_layer(one.channels_last ? "depthConcatenation" : "concatenation", unique_name(named), copies);
    cat.set("NumInputs", std::to_string(a.heads));
    if (!one.channels_last) cat.set("Dim", "2");
    last_layer_op_ = "Concat";
    return tokens_like(one, cat.name, a.heads * dim);
  };
  const Value k = a.k_shared ? repeated(a.k, a.k_col, a.key_dim, "key")
                             : operand_tokens(n, a.k, a.k_col, key, "key", a.heads, a.k_step);
  const Value v = a.v_shared ? repeated(a.v, a.v_col, a.value_dim, "value")
                             : operand_tokens(n, a.v, a.v_col, value, "value", a.heads, a.v_step);
  onnx::NodeProto named;
  named.set_name(node_name(n) + "_attention");
  if (!a.temperature.empty() && !a.unit)
    fail(n,
         "multiplies attention scores across channels by a factor per head without normalizing Q and K; "
         "dltrain reads such a temperature only with XCiT's L2-normalized queries and keys");
  LayerSpec& s = add_layer(a.channel ? "channelAttention" : "attention", unique_name(named), {q.name, k.name, v.name});
  s.set("NumHeads", std::to_string(a.heads));
  if (a.causal) s.set("AttentionMask", "causal");
  if (a.unit) s.set("NormalizeQueryKey", "true");
  const double want = a.unit ? 1.0 : 1.0 / std::sqrt(static_cast<double>(a.key_dim));
  if (std::fabs(a.scale / want - 1) >= 1e-6) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", a.scale);
    s.set("Scale", buf);
  }
  if (!a.score_bias.empty()) {  // the scores' bias at the softmax: the final scale times the stored one
    s.set("ScoreBias", "true");
    std::vector<float> b = a.score_bias;
    for (float& x : b) x = static_cast<float>(x * a.scale);
    add_param(s.name, "ScoreBias", Shape{a.heads, a.rows, sources_[static_cast<size_t>(a.k)].rows}, std::move(b));
  }
  if (a.unit) {
    std::vector<float> t = a.temperature;
    if (t.empty()) t.assign(static_cast<size_t>(a.heads), 1.f);
    add_param(s.name, "Temperature", Shape{a.heads}, std::move(t));
  }
  if (a.rotary >= 0)
    fail(n,
         "reads a rotary embedding's attention without an output projection of its heads or with Q, K and V "
         "not all columns of projections of one token sequence; dltrain reads it as one selfAttention layer");
  if (a.channel && (!a.mix[0].empty() || !a.mix[1].empty()))
    fail(n, "mixes the heads of attention across channels; dltrain's channelAttention has no talking heads");
  talking_heads(s, a);
  last_layer_op_ = "Softmax";
  const Value y = tokens_like(q, s.name, value);
  const int made = tokens_source(y);
  sources_[static_cast<size_t>(heads)].materialized = made;
  return made;
}

// The output projection of the heads: the whole chain becomes one selfAttention layer.
void Importer::attention(const onnx::NodeProto& n, const View& heads, const std::vector<float>& w, int64_t out,
                         const std::vector<float>& out_bias) {
  const Source a = sources_[static_cast<size_t>(heads.source)];
  const int64_t row = row_dim(heads, a.rows, a.cols);
  if (row < -1 || heads.scale != 1 || static_cast<int64_t>(w.size()) != a.cols * out)
    fail(n, "projects a " + ints_str(heads.dims) + " value; dltrain reads the attention's output projection of the " +
                std::to_string(a.rows) + " tokens with their " + std::to_string(a.heads) + " heads side by side (" +
                std::to_string(a.cols) + " channels)");
  const Source &q = sources_[static_cast<size_t>(a.q)], &k = sources_[static_cast<size_t>(a.k)],
               &v = sources_[static_cast<size_t>(a.v)];
  const Value& x = q.tokens;
  const int64_t c = x.shape[2], key = a.heads * a.key_dim, value = a.heads * a.value_dim;
  auto take = [&](const Source& p, int64_t col, int64_t count, int64_t step, float f, std::vector<float>& wt,
                  std::vector<float>& b) {
    projection_rows(p.weight, p.bias, c, p.cols, col, count, f, wt, b, a.heads, step);
  };
  // dltrain scales the scores by 1 / sqrt(key_dim); another scale goes into the queries.
  const double want = 1.0 / std::sqrt(static_cast<double>(a.key_dim));
  const float f = std::fabs(a.scale / want - 1) < 1e-6 ? 1.f : static_cast<float>(a.scale / want);
  std::vector<float> qw, qb, kw, kb, vw, vb;
  take(q, a.q_col, key, a.q_step, f, qw, qb);
  take(k, a.k_col, key, a.k_step, 1.f, kw, kb);
  take(v, a.v_col, value, a.v_step, 1.f, vw, vb);
  std::vector<float> ow(static_cast<size_t>(out * value));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < value; ++i) ow[static_cast<size_t>(o * value + i)] = w[static_cast<size_t>(i * out + o)];
  LayerSpec& s = add_layer("selfAttention", unique_name(n), {x.name});
  s.set("NumHeads", std::to_string(a.heads));
  s.set("NumKeyChannels", std::to_string(key));
  s.set("NumValueChannels", std::to_string(value));
  s.set("OutputSize", std::to_string(out));
  if (a.causal) s.set("AttentionMask", "causal");
  if (!a.score_bias.empty()) s.set("ScoreBias", "true");
  const std::string name = s.name;
  last_layer_op_ = n.op_type();
  add_param(name, "QueryWeights", Shape{key, c}, std::move(qw));
  add_param(name, "KeyWeights", Shape{key, c}, std::move(kw));
  add_param(name, "ValueWeights", Shape{value, c}, std::move(vw));
  add_param(name, "OutputWeights", Shape{out, value}, std::move(ow));
  add_param(name, "QueryBias", Shape{key}, std::move(qb));
  add_param(name, "KeyBias", Shape{key}, std::move(kb));
  add_param(name, "ValueBias", Shape{value}, std::move(vb));
  attention_bias_[name] = m_.params.size();
  add_param(name, "OutputBias", Shape{out}, out_bias);
  if (!a.score_bias.empty()) {  // the scores' bias at the softmax: the final scale times the stored one
    std::vector<float> b = a.score_bias;
    for (float& x : b) x = static_cast<float>(x * a.scale);
    add_param(name, "ScoreBias", Shape{a.heads, a.rows, a.rows}, std::move(b));
  }
  talking_heads(s, a);
  rotary_options(s, a);
  const Value y = tokens_like(x, name, out);
  View r = heads;
  r.source = tokens_source(y);
  r.dims.back() = out;
  for (size_t i = 0; i + 1 < r.dims.size(); ++i) r.strides[i] = static_cast<int64_t>(i) == row ? out : 0;
  views_[define(n)] = r;
}

}  // namespace dlt::onnx_detail
