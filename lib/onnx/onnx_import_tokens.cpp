// The importer's token sequences and attention (onnx_importer.h):
// - a patch convolution reshaped to (N, C, H*W) and transposed to (N, H*W, C): patchEmbedding
//   (row-major patch order); the class token Concat: embeddingConcatenation; the Add of a
//   (1, S, C) constant: positionEmbedding; a Gather of the first or last token: indexing1d;
// - MatMul of tokens by a constant: a projection, pending until read; read as tokens it becomes
//   a fullyConnected layer (OperationDimension channel);
// - the values between projections and an attention: every intermediate value is a strided
//   view of its source (PyTorch's view rules), so that the heads and the Q / K / V columns are
//   read from the strides and offsets rather than from one exporter's node order; a value that
//   is not such a view is refused. The attention itself: onnx_import_attention.cpp.
// The graph must be exported with one image: exporters bake the batch into the heads' Reshape
// targets.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "onnx/onnx_importer.h"

namespace dlt::onnx_detail {

namespace {

constexpr size_t kMaxViewRank = 16;  // attention graphs use 5 at most

// The strides that read `to` from the same elements as (dims, strides), as PyTorch's view()
// computes them; nullopt when `to` is not a view of them (a copy would be needed).
std::optional<std::vector<int64_t>> view_strides(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                                                 const std::vector<int64_t>& to) {
  std::vector<int64_t> out(to.size(), 0);
  if (dims.empty()) return to.empty() || product(to) == 1 ? std::optional(out) : std::nullopt;
  int64_t view_d = static_cast<int64_t>(to.size()) - 1;
  int64_t chunk_stride = strides.back(), tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    tensor_numel *= dims[static_cast<size_t>(d)];
    const bool chunk_ends = d == 0 || (dims[static_cast<size_t>(d - 1)] != 1 &&
                                       strides[static_cast<size_t>(d - 1)] != tensor_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || to[static_cast<size_t>(view_d)] == 1)) {
      out[static_cast<size_t>(view_d)] = view_numel * chunk_stride;
      view_numel *= to[static_cast<size_t>(view_d)];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = strides[static_cast<size_t>(d - 1)];
      tensor_numel = view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

// The graph operators read on tokens and views here (the layers' own: onnx_import.cpp's reads_tokens).
bool view_op(const std::string& op) {
  for (const char* o :
       {"Transpose", "Reshape", "Squeeze", "Unsqueeze", "MatMul", "Gather", "Shape", "Concat", "Slice", "Split"})
    if (op == o) return true;
  return false;
}

}  // namespace

// The product of d, INT64_MAX when it overflows (a constant's claimed sizes are the file's).
int64_t product(const std::vector<int64_t>& d) {
  int64_t p = 1;
  for (int64_t x : d)
    if (__builtin_mul_overflow(p, x, &p)) return std::numeric_limits<int64_t>::max();
  return p;
}

// The row dimension of a view that reads a rows x cols matrix row by row, with any size-1
// dimensions around: the last dimension is the columns (stride 1), the only other dimension
// larger than 1 the rows (stride cols). -1: there is none (one row); -2: not such a view.
int64_t row_dim(const Importer::View& v, int64_t rows, int64_t cols) {
  const auto& d = v.dims;
  if (d.empty() || d.back() != cols || (cols > 1 && v.strides.back() != 1) || v.offset != 0) return -2;
  int64_t found = -1;
  for (size_t i = 0; i + 1 < d.size(); ++i) {
    if (d[i] == 1) continue;
    if (found >= 0 || d[i] != rows || v.strides[i] != cols) return -2;
    found = static_cast<int64_t>(i);
  }
  return found < 0 && rows != 1 ? -2 : found;
}

int Importer::tokens_source(const Value& v) {
  Source s;
  s.kind = Source::kTokens;
  s.tokens = v;
  s.rows = v.shape[0] * v.shape[1];
  s.cols = v.shape[2];
  sources_.push_back(s);
  return static_cast<int>(sources_.size() - 1);
}

// A layer's output over the tokens of `like`: a token sequence (S, 1, channels), or a
// channels-last image flattened to its pixels (H, W, channels), which a flat Partition tags.
Value Importer::tokens_like(const Value& like, const std::string& name, int64_t channels) const {
  Value out{name, Shape{like.shape[0], like.shape[1], channels}, false};
  out.tokens = like.tokens;
  out.channels_last = like.channels_last;
  return out;
}

bool Importer::flat_image(const std::string& value) const {
  auto it = partitions_.find(value);
  return it != partitions_.end() && it->second.flat && values_.count(value);
}

// Input i as a view: a view already, or a token sequence (1, S, C), or a channels-last image
// flattened to (1, H*W, C) (PVT's attention over its pixels: the image stays the layers' input).
Importer::View Importer::view_of(const onnx::NodeProto& n, int i) {
  if (auto it = views_.find(n.input(i)); it != views_.end()) return it->second;
  const bool flat = flat_image(n.input(i));
  const Value v = value(n, i, false, false, flat);
  if (!v.tokens && !flat) fail(n, "input '" + n.input(i) + "' is not a token sequence (N, S, C)");
  const int64_t s = v.shape[0] * v.shape[1];
  View out;
  out.source = tokens_source(v);
  out.dims = {1, s, v.shape[2]};
  out.strides = {s * v.shape[2], v.shape[2], 1};
  return out;
}

bool Importer::reads_as_tokens(const View& v) const {
  const Source& s = sources_[static_cast<size_t>(v.source)];
  if (v.unit_stride || v.rot || v.rotary >= 0) return false;
  if (token_range(v)) return true;
  return (s.kind == Source::kTokens || s.kind == Source::kProjection || s.kind == Source::kHeads) &&
         v.dims.size() == 3 && v.dims[0] == 1 && row_dim(v, s.rows, s.cols) >= -1 && v.scale == 1;
}

std::optional<std::pair<int64_t, int64_t>> Importer::token_range(const View& v) const {
  const Source& s = sources_[static_cast<size_t>(v.source)];
  if (s.kind != Source::kTokens || v.scale != 1 || v.unit_stride || v.dims.size() != 3 || v.dims[0] != 1 ||
      v.dims[2] != s.cols || (s.cols > 1 && v.strides[2] != 1) || (v.dims[1] > 1 && v.strides[1] != s.cols) ||
      s.cols < 1 || v.offset % s.cols != 0)
    return std::nullopt;
  const int64_t first = v.offset / s.cols, count = v.dims[1];
  if (first < 0 || first + count > s.rows || (first == 0 && count == s.rows)) return std::nullopt;
  return std::make_pair(first, count);
}

Value Importer::token_slice(const onnx::NodeProto& n, const Value& tokens, int64_t first, int64_t count,
                            int64_t image_h, int64_t image_w) {
  const auto key = std::make_tuple(tokens.name, first, count, image_h);
  if (auto it = token_slices_.find(key); it != token_slices_.end()) return it->second;
  onnx::NodeProto named;  // named after the node that reads the tokens (the Slice has no layer)
  named.set_name(node_name(n) + "_tokens");
  LayerSpec& spec = add_layer("tokenSlice", unique_name(named), {tokens.name});
  spec.set("StartToken", std::to_string(first + 1));
  spec.set("NumTokens", std::to_string(count));
  if (image_h) set_list(spec, "ImageSize", {image_h, image_w});
  last_layer_op_ = "Slice";
  Value out{spec.name, image_h ? Shape{image_h, image_w, tokens.shape[2]} : Shape{count, 1, tokens.shape[2]}, false};
  out.tokens = image_h == 0;
  token_slices_[key] = out;
  return out;
}

// A view read as a token sequence: the (1, S, C) of its source in order, nothing scaled. A
// pending projection read so becomes its fullyConnected layer.
Value Importer::tokens_of(const onnx::NodeProto& n, const View& v) {
  if (const auto r = token_range(v))
    return token_slice(n, sources_[static_cast<size_t>(v.source)].tokens, r->first, r->second);
  if (sources_[static_cast<size_t>(v.source)].kind == Source::kHeads && reads_as_tokens(v)) {
    View out = v;  // the heads read without an output projection: an attention layer
    out.source = attention_layer(n, v.source);
    return tokens_of(n, out);
  }
  if (const auto c = projection_columns(v)) {  // some columns of a pending projection (SwiGLU's halves)
    const auto key = std::make_tuple(v.source, c->first, c->second);
    if (auto it = column_layers_.find(key); it != column_layers_.end()) return it->second;
    const std::string role = "columns" + std::to_string(c->first + 1) + "_" + std::to_string(c->first + c->second);
    return column_layers_[key] = operand_tokens(n, v.source, c->first, c->second, role.c_str());
  }
  Source& s = sources_[static_cast<size_t>(v.source)];
  if (!reads_as_tokens(v))
    fail(n, "reads a " + ints_str(v.dims) +
                " value inside an attention; dltrain reads the attention's reshapes and transposes only between "
                "MatMul projections of one token sequence, the scores Q K^T, Softmax over the keys, their product "
                "with V and the output projection");
  if (s.kind == Source::kTokens) return s.tokens;
  if (s.materialized < 0) {
    const int64_t c = s.tokens.shape[2], k = s.cols;
    onnx::NodeProto matmul;  // named after the MatMul, not after the node that reads it
    matmul.set_name(s.node);
    LayerSpec& spec = add_layer("fullyConnected", unique_name(matmul), {s.tokens.name});
    spec.set("OutputSize", std::to_string(k));
    spec.set("OperationDimension", "channel");
    std::vector<float> w(static_cast<size_t>(k * c));
    for (int64_t o = 0; o < k; ++o)
      for (int64_t i = 0; i < c; ++i) w[static_cast<size_t>(o * c + i)] = s.weight[static_cast<size_t>(i * k + o)];
    const std::string name = spec.name;
    last_layer_op_ = "MatMul";
    add_param(name, "Weights", Shape{k, c}, std::move(w));
    add_param(name, "Bias", Shape{k}, s.bias);
    const int made = tokens_source(tokens_like(s.tokens, name, k));
    sources_[static_cast<size_t>(v.source)].materialized = made;
  }
  return sources_[static_cast<size_t>(sources_[static_cast<size_t>(v.source)].materialized)].tokens;
}

// Columns [first, first + count) of a projection not yet made a layer, every token in order
// (a Split of its output: SwiGLU's two halves), other than all of them.
std::optional<std::pair<int64_t, int64_t>> Importer::projection_columns(const View& v) const {
  const Source& s = sources_[static_cast<size_t>(v.source)];
  if (s.kind != Source::kProjection || s.materialized >= 0 || v.scale != 1 || v.unit_stride || v.rot || v.rotary >= 0 ||
      v.dims.size() != 3 || v.dims[0] != 1 || v.dims[1] != s.rows || (s.rows > 1 && v.strides[1] != s.cols))
    return std::nullopt;
  const int64_t count = v.dims[2], first = v.offset;
  if (count >= s.cols || (count > 1 && v.strides[2] != 1) || first < 0 || first + count > s.cols) return std::nullopt;
  return std::make_pair(first, count);
}

// A 1-D AveragePool / MaxPool over the tokens (1, C, S) (NextViT's spatial reduction, dltrain's
// averagePooling1d and maxPooling1d): of an image flattened to (1, C, H*W) (its pixels in row
// order), or of a token sequence transposed (0, 2, 1); its output a token sequence transposed,
// which a BatchNormalization (per channel) keeps so and a Transpose (0, 2, 1) makes tokens again.
bool Importer::pool1d_node(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (n.input_size() < 1) return false;
  const std::string& x = n.input(0);
  const bool pool = (op == "AveragePool" || op == "MaxPool") && attr_ints(n, "kernel_shape", {}).size() == 1;
  if (!pool && !transposed_tokens_.count(x) && !(op == "BatchNormalization" && views_.count(x))) return false;
  // The token sequence x holds transposed (0, 2, 1): a pooling's output, or a view of all the
  // tokens of a sequence transposed (dltrain's export of these layers on tokens).
  auto transposed = [&]() -> std::optional<Value> {
    if (auto tt = transposed_tokens_.find(x); tt != transposed_tokens_.end()) return tt->second;
    auto vw = views_.find(x);
    if (vw == views_.end() || vw->second.dims.size() != 3) return std::nullopt;
    const View t = last_two_swapped(vw->second);  // the tokens the transpose read
    if (!reads_as_tokens(t)) return std::nullopt;
    return tokens_of(n, t);
  };
  if (!pool && op != "BatchNormalization") {
    const Value tok = transposed_tokens_.at(x);
    const int64_t s = tok.shape[0], c = tok.shape[2];
    if (op == "Shape") {
      set_ints(n, shape_slice({exported_batch_ == 1 ? 1 : kBatchDim, c, s}, attr_int(n, "start", 0),
                              attr_int(n, "end", INT64_MAX)));
      return true;
    }
    if (op == "Transpose" && attr_ints(n, "perm", {}) == std::vector<int64_t>{0, 2, 1}) {
      set_out(n, tok);
      return true;
    }
    return false;  // value() names the form for the rest
  }
  if (op == "BatchNormalization") {  // per channel: the layer on the tokens
    const std::optional<Value> tok = transposed();
    const LayerType* bn = layer_type_for_onnx(op);
    if (!tok || !bn) return false;
    Value as_read = *tok;  // BatchNormalization's reader sees (N, C, S, 1); the layer takes the tokens
    as_read.tokens = false;
    values_[x] = as_read;
    read_layer(*bn, n);
    values_.erase(x);
    Value out = values_.at(n.output(0));
    values_.erase(n.output(0));
    out.shape = tok->shape;
    out.tokens = true;
    out.flat = false;
    transposed_tokens_[n.output(0)] = out;
    return true;
  }
  // The tokens pooled: a token sequence, or an image's pixels.
  std::optional<Value> in = transposed();
  if (!in) {
    if (auto fi = flat_images_.find(x); fi != flat_images_.end() && !column_major_.count(x))
      in = fi->second;
    else if (auto fl = flat_nchw_.find(x); fl != flat_nchw_.end())
      in = fl->second;
    else
      fail(n,
           "pools along one axis a value that is neither an image flattened to (1, C, H*W) nor a whole token "
           "sequence transposed (0, 2, 1); dltrain reads 1-D pooling only over tokens (averagePooling1d, "
           "maxPooling1d)");
  }
  const bool avg = op == "AveragePool";
  const int64_t k = attr_ints(n, "kernel_shape", {})[0];
  const std::vector<int64_t> st = attr_ints(n, "strides", {1});
  const std::vector<int64_t> p = attr_ints(n, "pads", {0, 0});
  const int64_t s = in->shape[0] * in->shape[1], c = in->shape[2];
  // (the kernel and stride at most kMaxInputValues and the pads below the kernel: no overflow below)
  if (st.size() != 1 || p.size() != 2 || k < 1 || k > kMaxInputValues || st[0] < 1 || st[0] > kMaxInputValues ||
      p[0] < 0 || p[1] < 0 || p[0] >= k || p[1] >= k || s + p[0] + p[1] < k)
    fail(n, "pools " + std::to_string(s) + " tokens with kernel " + std::to_string(k) + ", strides " + ints_str(st) +
                " and pads " + ints_str(p) + "; dltrain reads one stride and pads smaller than the kernel");
  if (attr_string(n, "auto_pad", "NOTSET") != "NOTSET") fail(n, "auto_pad is not supported (export explicit pads)");
  for (int64_t d : attr_ints(n, "dilations", {1}))
    if (d != 1) fail(n, "dilated pooling is not supported");
  if (attr_int(n, "ceil_mode", 0) != 0 && (s + p[0] + p[1] - k) % st[0] != 0)
    fail(n,
         "ceil_mode 1 changes the output size, which dltrain's 1-D pooling cannot reproduce (export with "
         "ceil_mode=False)");
  if (n.output_size() > 1 && !n.output(1).empty()) fail(n, "a 1-D MaxPool's Indices output is not supported");
  const int64_t out = (s + p[0] + p[1] - k) / st[0] + 1;
  LayerSpec& spec = add_layer(avg ? "averagePooling1d" : "maxPooling1d", unique_name(n), {in->name});
  spec.set("PoolSize", std::to_string(k));
  spec.set("Stride", std::to_string(st[0]));
  if (p[0] || p[1]) set_list(spec, "Padding", {p[0], p[1]});
  if (avg && (p[0] || p[1]) && attr_int(n, "count_include_pad", 0) == 0) spec.set("PaddingValue", "mean");
  last_layer_op_ = op;
  Value tok{spec.name, Shape{out, 1, c}, false};
  tok.tokens = true;
  transposed_tokens_[define(n)] = tok;
  return true;
}

// An NCHW image reshaped into heads, (1, heads, d, H*W) (MobileNetV4's and EfficientFormer V2's
// Q, K or V: a 1x1 Conv's output, channel h d + j of head h): a view of its pixels as tokens (the
// image, channels-last, is the attention's source, as PVT's flattened map).
bool Importer::image_heads(const onnx::NodeProto& n) {
  if (n.input_size() < 2 || !constant(n.input(1))) return false;
  const auto it = values_.find(n.input(0));
  if (it == values_.end() || partitions_.count(n.input(0)) || patch_grids_.count(n.input(0))) return false;
  const Value& v = it->second;
  if (v.flat || v.channels_last || v.tokens || padded(v) || v.indices) return false;
  std::vector<int64_t> t = ints_ahead(n.input(1));
  const int64_t h = v.shape[0], w = v.shape[1], c = v.shape[2];
  if (t.size() != 4 || !one_image(t[0]) || (t[1] == -1) + (t[2] == -1) + (t[3] == -1) > 1) return false;
  for (int i = 1; i < 4; ++i)  // -1: the size the others leave (each of them at most the image's)
    if (t[static_cast<size_t>(i)] < -1 || t[static_cast<size_t>(i)] == 0 || t[static_cast<size_t>(i)] > c * h * w)
      return false;
  for (int i = 1; i < 4; ++i)
    if (t[static_cast<size_t>(i)] == -1) {
      int64_t rest = 1;
      for (int j = 1; j < 4; ++j)
        if (j != i && __builtin_mul_overflow(rest, t[static_cast<size_t>(j)], &rest)) return false;
      if (rest <= 0 || (c * h * w) % rest != 0) return false;
      t[static_cast<size_t>(i)] = c * h * w / rest;
    }
  if (t[1] < 1 || t[2] < 1 || !times_is(t[1], t[2], c) || t[3] != h * w) return false;
  Value im = v;
  im.channels_last = true;  // the pixels in row order: the tokens
  View out;
  out.source = tokens_source(im);
  out.dims = {1, t[1], t[2], h * w};
  out.strides = {h * w * c, t[2], 1, c};
  views_[define(n)] = out;
  return true;
}

// A MatMul of two computed values reading an NCHW image flattened to (1, C, H*W) (SHViT's K and
// V: flatten(2) without a transpose): that image's pixels as tokens, viewed channels first.
void Importer::flat_operands(const onnx::NodeProto& n) {
  if (n.op_type() != "MatMul" || n.input_size() != 2 || constant(n.input(0)) || constant(n.input(1))) return;
  for (int i = 0; i < 2; ++i) {
    const auto fi = flat_images_.find(n.input(i));
    if (fi == flat_images_.end() || column_major_.count(n.input(i)) || views_.count(n.input(i))) continue;
    Value im = fi->second;
    im.channels_last = true;
    const int64_t s = im.shape[0] * im.shape[1], c = im.shape[2];
    View v;
    v.source = tokens_source(im);
    v.dims = {1, c, s};
    v.strides = {s * c, 1, c};
    views_[n.input(i)] = v;
  }
}

// A view (1, C, H, W) of tokens that are the pixels of an H x W image, channel c of pixel
// (y, x) being channel c of token y W + x: that NCHW image (an attention's output transposed
// and reshaped back into its map: NextViT's (0, 2, 1) of (1, N, C), EfficientFormer V2's (0, 1,
// 3, 2) of (1, heads, N, d), then a Reshape (1, C, H, W)).
std::optional<Value> Importer::view_image(const onnx::NodeProto& n, const View& v) {
  const Source& s = sources_[static_cast<size_t>(v.source)];
  const Value& t = s.tokens;
  if (v.dims.size() != 4 || v.dims[0] != 1 || !t.channels_last || v.dims[2] != t.shape[0] || v.dims[3] != t.shape[1] ||
      s.rows != t.shape[0] * t.shape[1])
    return std::nullopt;
  const int64_t w = v.dims[3];
  if ((w > 1 && v.strides[3] != s.cols) || (v.dims[2] > 1 && v.strides[2] != w * s.cols)) return std::nullopt;
  View tok = v;
  tok.dims = {1, s.rows, v.dims[1]};
  tok.strides = {s.rows * s.cols, s.cols, v.strides[1]};
  if (!reads_as_tokens(tok)) return std::nullopt;
  Value im = tokens_of(n, tok);
  if (im.shape[0] != v.dims[2] || im.shape[1] != v.dims[3]) return std::nullopt;
  im.channels_last = false;
  im.tokens = false;
  return im;
}

bool Importer::token_node(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (all_constant(n)) return float_fold(n);
  auto is_tokens = [&](int i) {
    auto it = n.input_size() > i ? values_.find(n.input(i)) : values_.end();
    return it != values_.end() && it->second.tokens;
  };
  if (op == "Transpose" && n.input_size() > 0 && flat_images_.count(n.input(0))) {
    image_to_tokens(n);
    return true;
  }
  if (op == "Reshape" && image_heads(n)) return true;
  // A patch grid transposed (0, 1, 3, 2) and reshaped to (N, C, W*H): tokens column by column.
  if (op == "Transpose" && n.input_size() > 0 && values_.count(n.input(0)) &&
      attr_ints(n, "perm", {}) == std::vector<int64_t>{0, 1, 3, 2}) {
    const Value& v = values_.at(n.input(0));
    if (!v.flat && !v.channels_last && !v.tokens && !padded(v) && !v.indices) {
      const std::string& out = define(n);
      swapped_images_[out] = v;
      swap_error_[out] = path_ + ": node '" + node_name(n) +
                         "' (Transpose): transposes an image with perm [0, 1, 3, 2]; supported: (0, 2, 3, 1) of an "
                         "image to channels-last, (0, 3, 1, 2) back, ShuffleNet's (0, 2, 1, 3, 4), and (0, 1, 3, 2) "
                         "of a patch grid right before its Reshape to (N, C, W*H) (tokens column by column)";
      return true;
    }
  }
  if (op == "Reshape" && n.input_size() > 1 && swapped_images_.count(n.input(0))) {
    const Value v = swapped_images_.at(n.input(0));
    const auto t = ints_of(need_const(n, 1, "shape"), path_ + ": node '" + node_name(n) + "'");
    const int64_t c = v.shape[2], s = v.shape[0] * v.shape[1];
    if (t.size() != 3 || (t[1] != c && !(t[1] == 0)) || (t[2] != s && t[2] != -1))
      fail(n, "reshapes a transposed image to " + ints_str(t) + "; dltrain reads only (N, " + std::to_string(c) + ", " +
                  std::to_string(s) + "): its patches as tokens, column by column");
    const std::string& out = define(n);
    flat_images_[out] = v;
    column_major_.insert(out);
    return true;
  }
  // A rotary embedding's parts (onnx_import_rotary.cpp).
  if (op != "Add")  // a rotary embedding's term read by anything but the Add of its partner: value() refuses it
    for (int i = 0; i < n.input_size(); ++i)
      if (rotary_terms_.count(n.input(i))) value(n, i);
  if (op == "Concat" && (rotation_pairs(n) || rotary_concat(n))) return true;
  if (op == "Add" && n.input_size() == 2 && rotary_terms_.count(n.input(0)) && rotary_terms_.count(n.input(1))) {
    rotary_sum(n);
    return true;
  }
  // Concat of token sequences (a flattened image's pixels are tokens to it): the class token
  // (DeiT: and the distillation token) in front of the sequence (PiT: of a feature map's
  // pixels), or computed sequences joined (PiT's projected class token and its pooled map).
  if (op == "Concat" && n.input_size() >= 2) {
    // An attention's output viewed as the NCHW map of its pixels (SHViT's, joined with the
    // channels it left out) is that image to the Concat.
    for (int i = 0; i < n.input_size(); ++i)
      if (has_view(n, i) && !values_.count(n.input(i)))
        if (const std::optional<Value> im = view_image(n, views_.at(n.input(i)))) {
          values_[n.input(i)] = *im;
          views_.erase(n.input(i));
        }
    const int last = n.input_size() - 1;
    bool leading = true, computed = true, any = false;
    for (int i = 0; i <= last; ++i) {
      if (i < last) leading = leading && constant(n.input(i));
      computed = computed && !constant(n.input(i));
      any = any || is_tokens(i) || has_view(n, i) || flat_image(n.input(i));
    }
    if (leading && (is_tokens(last) || flat_image(n.input(last)))) {
      class_token(n);
      return true;
    }
    if (any && computed) {
      token_concat(n);
      return true;
    }
    if (any)
      fail(n,
           "concatenates token sequences with constants after the first computed one; dltrain reads constant "
           "tokens (a class token) only in front of the sequence");
  }
  if (view_norm(n) || view_row_sum(n)) return true;
  const bool view0 = has_view(n, 0), view1 = has_view(n, 1);
  if (!view0 && !view1 && !is_tokens(0) && !is_tokens(1)) return false;
  if (op == "Neg" && view0) {  // rot(x)'s negated half: the view times -1
    View out = views_.at(n.input(0));
    out.scale = -out.scale;
    views_[define(n)] = out;
    return true;
  }
  if (op == "Cast" && view0 && attr_int(n, "to", 0) == onnx::TensorProto::FLOAT) {
    views_[define(n)] = views_.at(n.input(0));
    return true;
  }
  if (op == "Shape") {
    const View v = view_of(n, 0);
    set_ints(n, shape_slice(v.dims, attr_int(n, "start", 0), attr_int(n, "end", INT64_MAX)));
    return true;
  }
  if (op == "Add" && n.input_size() == 2 && (constant(n.input(0)) || constant(n.input(1)))) {
    const int vi = constant(n.input(0)) ? 1 : 0;
    if (has_view(n, vi)) {
      view_add(n, vi);
      return true;
    }
    position_table(n, vi);
    return true;
  }
  const int64_t gather_axis = attr_int(n, "axis", 0);
  if (op == "Gather" && (gather_axis == 1 || gather_axis == -2) &&
      (is_tokens(0) || (view0 && reads_as_tokens(views_.at(n.input(0)))))) {
    token_index(n, value(n, 0));
    return true;
  }
  const bool reduce = op == "ReduceMean" || op == "ReduceMax";
  if (reduce && view0) {  // the tokens after the first k (a Slice): PrefixTokens k
    const View& v = views_.at(n.input(0));
    const Source& s = sources_[static_cast<size_t>(v.source)];
    const int64_t k = s.cols > 0 ? v.offset / s.cols : 0;
    if (s.kind == Source::kTokens && v.scale == 1 && v.offset == k * s.cols && k > 0 && k < s.rows &&
        v.dims == std::vector<int64_t>{1, s.rows - k, s.cols} && v.strides[1] == s.cols && v.strides[2] == 1) {
      token_pool(n, s.tokens, false, k);
      return true;
    }
  }
  if (reduce && (is_tokens(0) || view0)) {
    token_pool(n, value(n, 0));
    return true;
  }
  if ((op == "Mul" || op == "Div") && n.input_size() == 2 && (view0 || view1) &&
      (constant(n.input(view0 ? 1 : 0)) != nullptr)) {
    // A per-channel scale of a token sequence (DeiT III's and CaiT's LayerScale after the output
    // projection) is a layer on the tokens, not a scale of an attention operand.
    const View& v = views_.at(n.input(view0 ? 0 : 1));
    if (reads_as_tokens(v) && need_floats(n, view0 ? 1 : 0, "scale").size() > 1) return false;
    if (op == "Mul" && rotary_term(n, view0 ? 0 : 1)) return true;
    view_scale(n, view0 ? 0 : 1);
    return true;
  }
  if (op == "Softmax" && view0) {
    view_softmax(n, views_.at(n.input(0)));
    return true;
  }
  if (op == "Conv" && view0) {
    const View& v = views_.at(n.input(0));
    const Source::Kind kind = sources_[static_cast<size_t>(v.source)].kind;
    if (kind == Source::kScores || kind == Source::kProbs) {
      head_conv(n, v);
      return true;
    }
  }
  if (op == "MatMul" || (op == "Gemm" && view0)) {
    view_matmul(n);
    return true;
  }
  // Tokens [k, k + H*W) of a sequence transposed (0, 2, 1) and reshaped to (1, C, H, W): the
  // image of those pixels (PiT's feature map after its class token).
  if (op == "Reshape" && view0 && n.input_size() > 1 && constant(n.input(1))) {
    View t = views_.at(n.input(0));
    const Source& s = sources_[static_cast<size_t>(t.source)];
    const auto tg = ints_of(*constant(n.input(1)), path_ + ": node '" + node_name(n) + "'");
    if (s.kind == Source::kTokens && t.dims.size() == 3 && tg.size() == 4 && t.dims[1] == s.cols &&
        (t.dims[1] == 1 || t.strides[1] == 1) && tg[1] == s.cols && tg[2] > 0 && tg[3] > 0 &&
        tg[2] * tg[3] == t.dims[2] && (tg[0] == 1 || tg[0] == -1 || tg[0] == 0 || tg[0] == kBatchDim)) {
      std::swap(t.dims[1], t.dims[2]);  // the tokens the transpose read
      std::swap(t.strides[1], t.strides[2]);
      if (const auto r = token_range(t); r && !s.tokens.channels_last) {
        set_out(n, token_slice(n, s.tokens, r->first, r->second, tg[2], tg[3]));
        return true;
      }
      // ... or all of them (Twins' position encoding after the first block of a stage whose
      // attention never reads the image): a tokenSlice of the whole sequence.
      if (t.scale == 1 && t.offset == 0 && t.dims[1] == s.rows && (s.rows == 1 || t.strides[1] == s.cols) &&
          (s.cols == 1 || t.strides[2] == 1) && !s.tokens.channels_last) {
        set_out(n, token_slice(n, s.tokens, 0, s.rows, tg[2], tg[3]));
        return true;
      }
    }
    // ... or reshaped to (1, H, W, C) (as dltrain exports tokenSlice's image): channels-last.
    const View& u = views_.at(n.input(0));
    if (const auto r = token_range(u); r && !s.tokens.channels_last && tg.size() == 4 && tg[1] > 0 && tg[2] > 0 &&
                                       tg[1] * tg[2] == r->second && tg[3] == s.cols &&
                                       (tg[0] == 1 || tg[0] == -1 || tg[0] == 0 || tg[0] == kBatchDim)) {
      Value im = token_slice(n, s.tokens, r->first, r->second, tg[1], tg[2]);
      im.channels_last = true;
      set_out(n, im);
      return true;
    }
  }
  // Tokens over a flattened channels-last image's pixels reshaped back to (1, H, W, C): an
  // image again (the attention layer's output on an image, as dltrain exports it).
  if (op == "Reshape" && view0 && n.input_size() > 1 && constant(n.input(1))) {
    const View& v = views_.at(n.input(0));
    const Value& t = sources_[static_cast<size_t>(v.source)].tokens;
    const auto tg = ints_of(*constant(n.input(1)), path_ + ": node '" + node_name(n) + "'");
    if (t.channels_last && reads_as_tokens(v) && tg.size() == 4 &&
        (tg[0] == 1 || tg[0] == -1 || tg[0] == 0 || tg[0] == kBatchDim) && tg[1] == t.shape[0] && tg[2] == t.shape[1] &&
        (tg[3] == v.dims.back() || tg[3] == -1)) {
      set_out(n, value(n, 0, false, false, true));
      return true;
    }
  }
  // Tokens (1, S, C) reshaped to (1, S*C): flattened in dltrain's order, its flatten layer.
  if (op == "Reshape" && (view0 || is_tokens(0)) && n.input_size() > 1 && constant(n.input(1))) {
    const View v = view_of(n, 0);
    const auto tg = ints_of(*constant(n.input(1)), path_ + ": node '" + node_name(n) + "'");
    const int64_t k = v.dims.size() == 3 ? v.dims[1] * v.dims[2] : 0;
    if (reads_as_tokens(v) && v.dims[1] > 1 && tg.size() == 2 &&
        (tg[0] == 1 || tg[0] == 0 || tg[0] == -1 || tg[0] == kBatchDim) &&
        (tg[1] == k || (tg[1] == -1 && tg[0] != -1))) {
      const Value t = value(n, 0);
      LayerSpec& spec = add_layer("flatten", unique_name(n), {t.name});
      set_out(n, Value{spec.name, Shape{1, 1, k}, true});
      return true;
    }
  }
  if (!view_op(op) || !(view0 || is_tokens(0))) return false;
  const View v = view_of(n, 0);
  if (v.unit_stride && op != "Transpose")
    fail(n, "reads an L2-normalized attention operand with '" + op +
                "'; dltrain reads F.normalize of XCiT's queries and keys right before their Transpose and Q^T K");
  if (op == "Reshape")
    view_reshape(n, v);
  else if (op == "Transpose")
    view_transpose(n, v);
  else if (op == "Squeeze" || op == "Unsqueeze")
    view_squeeze(n, v);
  else if (op == "Gather")
    view_gather(n, v);
  else if (op == "Slice")
    view_slice(n, v);
  else if (op == "Split")
    view_split(n, v);
  else
    return false;
  return true;
}

void Importer::view_reshape(const onnx::NodeProto& n, const View& v) {
  std::vector<int64_t> t = ints_of(need_const(n, 1, "shape"), path_ + ": node '" + node_name(n) + "'");
  const std::string batch =
      exported_batch_ > 1 ? " (the graph was exported with a batch of " + std::to_string(exported_batch_) +
                                " images; dltrain reads token graphs exported with one: torch.onnx.export with an "
                                "input of batch 1)"
                          : "";
  if (t.size() > kMaxViewRank)
    fail(n, "reshapes to " + std::to_string(t.size()) + " dimensions; dltrain reads at most " +
                std::to_string(kMaxViewRank));
  const int64_t numel = product(v.dims);
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == kBatchDim) t[i] = 1;  // the one image
    if (t[i] == 0 && attr_int(n, "allowzero", 0) == 0) {
      if (i >= v.dims.size()) fail(n, "reshape target " + ints_str(t) + " copies a dimension its input lacks");
      t[i] = v.dims[i];
    }
    if (t[i] == -1 && infer < 0) {
      infer = static_cast<int64_t>(i);
      continue;
    }
    if (t[i] < 1 || t[i] > numel || known > numel / t[i])
      fail(n, "reshapes " + ints_str(v.dims) + " to " + ints_str(t) + ": the sizes do not match" + batch);
    known *= t[i];
  }
  if (infer >= 0) {
    if (numel % known != 0)
      fail(n, "reshapes " + ints_str(v.dims) + " to " + ints_str(t) + ": the sizes do not match" + batch);
    t[static_cast<size_t>(infer)] = numel / known;
  } else if (known != numel) {
    fail(n, "reshapes " + ints_str(v.dims) + " to " + ints_str(t) + ": the sizes do not match" + batch);
  }
  const auto strides = view_strides(v.dims, v.strides, t);
  if (!strides)
    fail(n, "reshapes " + ints_str(v.dims) + " to " + ints_str(t) +
                ", which reorders the attention's values beyond a view of them (dltrain reads the reshapes that "
                "split or merge neighbouring dimensions)" +
                batch);
  View out = v;
  out.dims = t;
  out.strides = *strides;
  views_[define(n)] = out;
}

void Importer::view_transpose(const onnx::NodeProto& n, const View& v) {
  const int64_t r = static_cast<int64_t>(v.dims.size());
  std::vector<int64_t> perm = attr_ints(n, "perm", {});
  if (perm.empty())
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  std::vector<int64_t> seen(static_cast<size_t>(r), 0);
  View out = v;
  if (static_cast<int64_t>(perm.size()) != r)
    fail(n, "perm " + ints_str(perm) + " does not match rank " + std::to_string(r));
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= r || seen[static_cast<size_t>(perm[i])]++)
      fail(n, "perm " + ints_str(perm) + " is not a permutation of " + std::to_string(r) + " axes");
    out.dims[i] = v.dims[static_cast<size_t>(perm[i])];
    out.strides[i] = v.strides[static_cast<size_t>(perm[i])];
  }
  views_[define(n)] = out;
}

void Importer::view_squeeze(const onnx::NodeProto& n, const View& v) {
  std::vector<int64_t> axes;
  if (opset_ >= 13 && n.input_size() > 1 && !n.input(1).empty())
    axes = ints_of(need_const(n, 1, "axes"), path_ + ": node '" + node_name(n) + "'");
  else
    axes = attr_ints(n, "axes", {});
  const bool squeeze = n.op_type() == "Squeeze";
  if (axes.size() > kMaxViewRank) fail(n, "has " + std::to_string(axes.size()) + " axes");
  const int64_t rank = static_cast<int64_t>(v.dims.size()) + (squeeze ? 0 : static_cast<int64_t>(axes.size()));
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank)
      fail(n, "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  View out = v;
  out.dims.clear();
  out.strides.clear();
  if (squeeze) {
    for (size_t i = 0; i < v.dims.size(); ++i) {
      const bool drop = axes.empty() ? v.dims[i] == 1 : std::binary_search(axes.begin(), axes.end(), int64_t(i));
      if (drop && v.dims[i] != 1)
        fail(n, "squeezes axis " + std::to_string(i) + " of size " + std::to_string(v.dims[i]));
      if (drop) continue;
      out.dims.push_back(v.dims[i]);
      out.strides.push_back(v.strides[i]);
    }
  } else {
    for (int64_t i = 0, j = 0; i < rank; ++i) {
      if (std::binary_search(axes.begin(), axes.end(), i)) {
        out.dims.push_back(1);
        out.strides.push_back(0);
      } else {
        out.dims.push_back(v.dims[static_cast<size_t>(j)]);
        out.strides.push_back(v.strides[static_cast<size_t>(j++)]);
      }
    }
  }
  views_[define(n)] = out;
}

void Importer::view_gather(const onnx::NodeProto& n, const View& v) {
  const onnx::TensorProto& t = need_const(n, 1, "indices");
  const std::vector<int64_t> idx = ints_of(t, path_ + ": node '" + node_name(n) + "'");
  const int64_t r = static_cast<int64_t>(v.dims.size());
  int64_t axis = attr_int(n, "axis", 0);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r || idx.size() != 1)
    fail(n, "gathers " + std::to_string(idx.size()) + " indices along axis " + std::to_string(attr_int(n, "axis", 0)) +
                " of " + ints_str(v.dims) + "; dltrain reads one index (Q, K or V of a joint projection)");
  const size_t a = static_cast<size_t>(axis);
  int64_t i = idx[0] < 0 ? idx[0] + v.dims[a] : idx[0];
  if (i < 0 || i >= v.dims[a]) fail(n, "index " + std::to_string(idx[0]) + " is out of range for " + ints_str(v.dims));
  View out = v;
  out.offset += i * v.strides[a];
  if (t.dims_size() == 0) {
    out.dims.erase(out.dims.begin() + axis);
    out.strides.erase(out.strides.begin() + axis);
  } else {
    out.dims[a] = 1;
  }
  views_[define(n)] = out;
}

// Slice with steps >= 1 (timm's unbind of Q, K and V, as the dynamo exporter writes it).
void Importer::view_slice(const onnx::NodeProto& n, const View& v) {
  const SliceArgs args = slice_args(n);
  const std::vector<int64_t>&axes = args.axes, &steps = args.steps;
  const int64_t r = static_cast<int64_t>(v.dims.size());
  View out = v;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
    if (a < 0 || a >= r) fail(n, "axis " + std::to_string(axes[i]) + " is out of range for " + ints_str(v.dims));
    if (steps[i] < 1)
      fail(n, "slices " + ints_str(v.dims) + " with step " + std::to_string(steps[i]) +
                  " inside an attention; dltrain reads steps of 1 or more");
    const size_t ax = static_cast<size_t>(a);
    const auto [s, count] = args.range(i, v.dims[ax]);
    if (count == 0) fail(n, "slices nothing of " + ints_str(v.dims) + " (axis " + std::to_string(a) + ")");
    out.offset += s * out.strides[ax];
    out.dims[ax] = count;
    out.strides[ax] *= steps[i];
  }
  views_[define(n)] = out;
}

// Split into parts along one axis (timm's unbind, as the TorchScript exporter writes it).
void Importer::view_split(const onnx::NodeProto& n, const View& v) {
  const int64_t r = static_cast<int64_t>(v.dims.size());
  int64_t axis = attr_int(n, "axis", 0);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) fail(n, "axis " + std::to_string(attr_int(n, "axis", 0)) + " is out of range");
  const size_t ax = static_cast<size_t>(axis);
  std::vector<int64_t> sizes = attr_ints(n, "split", {});
  if (n.input_size() > 1 && !n.input(1).empty())
    sizes = ints_of(need_const(n, 1, "split"), path_ + ": node '" + node_name(n) + "'");
  const int64_t parts = n.output_size();
  if (sizes.empty()) {
    if (parts < 1 || v.dims[ax] % parts != 0)
      fail(n, "splits " + std::to_string(v.dims[ax]) + " into " + std::to_string(parts) + " unequal parts");
    sizes.assign(static_cast<size_t>(parts), v.dims[ax] / parts);
  }
  int64_t total = 0;
  for (int64_t s : sizes) total += s < 1 ? v.dims[ax] + 1 : s;
  if (static_cast<int64_t>(sizes.size()) != parts || total != v.dims[ax])
    fail(n, "splits " + std::to_string(v.dims[ax]) + " values into " + ints_str(sizes) + " for " +
                std::to_string(parts) + " outputs");
  int64_t start = 0;
  for (int i = 0; i < parts; ++i) {
    View out = v;
    out.offset += start * v.strides[ax];
    out.dims[ax] = sizes[static_cast<size_t>(i)];
    start += sizes[static_cast<size_t>(i)];
    if (!n.output(i).empty()) views_[define(n, i)] = out;
  }
}

void Importer::view_scale(const onnx::NodeProto& n, int vi) {
  const std::vector<float> c = need_floats(n, 1 - vi, "scale");
  const Source& src = sources_[static_cast<size_t>(views_.at(n.input(vi)).source)];
  if (c.size() != 1 && n.op_type() == "Mul" && src.kind == Source::kScores && src.channel)
    return scores_temperature(n, vi, c);
  if (c.size() != 1 && n.op_type() == "Mul" && src.kind == Source::kProbs && !src.channel) return probs_scale(n, vi, c);
  if (c.size() != 1)
    fail(n, "scales an attention operand by " + std::to_string(c.size()) + " values; dltrain reads one");
  if (n.op_type() == "Div" && vi != 0) fail(n, "divides a constant by an attention operand");
  View out = view_of(n, vi);
  if (n.op_type() == "Div") {
    if (c[0] == 0.f) fail(n, "divides by zero");
    out.scale /= c[0];
  } else {
    out.scale *= c[0];
  }
  views_[define(n)] = out;
}

// Mul of the scores across channels by a (heads, 1, 1) constant (XCiT's temperature): one factor
// per head, the constant's heads dimension the view's (aligned from the end), its last two 1.
void Importer::scores_temperature(const onnx::NodeProto& n, int vi, const std::vector<float>& t) {
  const View v = views_.at(n.input(vi));
  Source& s = sources_[static_cast<size_t>(v.source)];
  const std::vector<int64_t> d = dims_of(*constant(n.input(1 - vi)));
  const size_t r = v.dims.size(), k = d.size();
  bool ok = static_cast<int64_t>(t.size()) == s.heads && s.temperature.empty() && k >= 3 && k <= r;
  for (size_t i = 0; i < k && ok; ++i) {
    const size_t at = r - k + i;
    ok = d[i] == 1 || (at + 2 < r && d[i] == v.dims[at] && v.strides[at] == s.rows * s.cols);
  }
  if (!ok)
    fail(n, "multiplies attention scores across channels " + ints_str(v.dims) + " by a " +
                dims_str(*constant(n.input(1 - vi))) + " constant; dltrain reads there one factor per head ((" +
                std::to_string(s.heads) + ", 1, 1): XCiT's temperature), once");
  s.temperature = t;
  views_[define(n)] = v;
}

void Importer::view_add(const onnx::NodeProto& n, int vi) {
  const View v = views_.at(n.input(vi));
  Source& s = sources_[static_cast<size_t>(v.source)];
  if (v.unit_stride) fail(n, "adds a constant to an L2-normalized attention operand");
  if (v.rot || v.rotary >= 0) fail(n, "adds a constant to a rotated attention operand");
  if (head_mix_bias(n, vi, v)) return;
  if (s.kind == Source::kScores) return scores_addend(n, vi, v);
  if (s.kind == Source::kProbs && !s.channel) return probs_addend(n, vi, v);
  std::vector<float> b = need_floats(n, 1 - vi, "bias");
  if (b.size() == 1) b.assign(static_cast<size_t>(s.cols), b[0]);
  const bool rows = row_dim(v, s.rows, s.cols) >= -1 && v.scale == 1;
  const bool projection = s.kind == Source::kProjection && s.materialized < 0;
  const bool attention_out = s.kind == Source::kTokens && attention_bias_.count(s.tokens.name);
  if (!rows || (!projection && !attention_out) || static_cast<int64_t>(b.size()) != s.cols)
    fail(n, "adds a constant of " + std::to_string(b.size()) + " values to a " + ints_str(v.dims) +
                " value; dltrain reads it only as the bias of a projection (one value per output channel)");
  std::vector<float>& bias = projection ? s.bias : m_.params[attention_bias_.at(s.tokens.name)].data;
  for (size_t o = 0; o < b.size(); ++o) bias[o] += b[o];
  views_[define(n)] = v;
}

// F.normalize(x, dim=-1) of an attention operand (XCiT's queries and keys, over the tokens):
// ReduceL2 over its last axis (keepdims), a Clip of that at a small minimum, an Expand to x's
// shape (or none), and the Div of x by it: x's view, unit along its last axis.
bool Importer::view_norm(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const std::string what = path_ + ": node '" + node_name(n) + "'";
  if (op == "ReduceL2" && has_view(n, 0)) {
    const View& v = views_.at(n.input(0));
    std::vector<int64_t> axes = attr_ints(n, "axes", {});
    if (n.input_size() > 1 && !n.input(1).empty()) axes = ints_of(need_const(n, 1, "axes"), what);
    const int64_t r = static_cast<int64_t>(v.dims.size());
    if (axes.size() != 1 || (axes[0] != -1 && axes[0] != r - 1) || attr_int(n, "keepdims", 1) != 1 || v.unit_stride)
      fail(n, "takes the L2 norm of a " + ints_str(v.dims) + " attention operand over axes " + ints_str(axes) +
                  "; dltrain reads F.normalize over its last axis (axes [-1], keepdims 1)");
    norms_[define(n)] = n.input(0);
    return true;
  }
  if ((op == "Clip" || op == "Expand") && n.input_size() > 0 && norms_.count(n.input(0))) {
    if (op == "Clip") {
      const onnx::TensorProto* lo = n.input_size() > 1 && !n.input(1).empty() ? constant(n.input(1)) : nullptr;
      const std::vector<float> m = lo ? floats_of(*lo, what) : std::vector<float>{};
      if (m.size() != 1 || !(m[0] > 0.f) || m[0] > 1e-6f || (n.input_size() > 2 && !n.input(2).empty()))
        fail(n,
             "clips the L2 norm of an attention operand; dltrain reads F.normalize's clamp: a minimum in (0, "
             "1e-6] and no maximum");
    }
    norms_[define(n)] = norms_.at(n.input(0));
    return true;
  }
  if (op == "Div" && n.input_size() == 2 && norms_.count(n.input(1))) {
    if (norms_.at(n.input(1)) != n.input(0))
      fail(n, "divides a value by the L2 norm of another; dltrain reads F.normalize: x divided by its own norm");
    View out = views_.at(n.input(0));
    out.unit_stride = out.strides.back();
    views_[define(n)] = out;
    return true;
  }
  return false;
}

// Transpose (0, 2, 1) of a convolution's (N, C, H*W): the tokens of a patch embedding.
void Importer::image_to_tokens(const onnx::NodeProto& n) {
  const Value im = flat_images_.at(n.input(0));
  const std::vector<int64_t> perm = attr_ints(n, "perm", {});
  // (2, 0, 1): the tokens sequence-first (S, N, C), as nn.MultiheadAttention transposes them
  // when it follows the patch embedding directly; with one image the same memory.
  const bool seq_first = perm == std::vector<int64_t>{2, 0, 1} && exported_batch_ == 1;
  if (perm != std::vector<int64_t>{0, 2, 1} && !seq_first)
    fail(n, "transposes an image reshaped to (N, C, H*W) with perm " + ints_str(perm) +
                "; dltrain reads (0, 2, 1): its pixels as tokens (and (2, 0, 1) of a graph exported with one "
                "image)");
  // The convolution that made the image, read by no layer since (a layer made of another
  // branch may stand between).
  LayerSpec* conv = nullptr;
  bool read = false;
  for (auto& l : m_.network.layers) {
    if (l.name == im.name) conv = &l;
    read = read || (conv && conv != &l && std::find(l.inputs.begin(), l.inputs.end(), im.name) != l.inputs.end());
  }
  Value t{im.name, Shape{im.shape[0] * im.shape[1], 1, im.shape[2]}, false};
  t.tokens = true;
  // The same flat image made tokens a second time (one Transpose for a residual sum, another
  // for nn.MultiheadAttention's sequence-first query): the patch embedding's tokens again.
  const bool again = conv && conv->type == "patchEmbedding" && !column_major_.count(n.input(0)) &&
                     conv->get_string("SpatialFlattenMode", "") == "row-major";
  if (again) return tokens_out(n, t, seq_first);
  if (read) conv = nullptr;
  const bool patches = conv && conv->type == "convolution2d" &&
                       conv->get_ints("FilterSize", {}, 2) == conv->get_ints("Stride", {1, 1}, 2) &&
                       conv->get_ints("DilationFactor", {1, 1}, 2) == std::vector<int64_t>{1, 1} &&
                       conv->get_ints("Padding", {0, 0, 0, 0}, 4) == std::vector<int64_t>{0, 0, 0, 0};
  // A patch embedding whose tokens go back into their image (Twins' locally-grouped attention)
  // stays the convolution's image, as any other.
  const bool image = patches && !column_major_.count(n.input(0)) && !seq_first &&
                     read_as_image(n.output(0), im.shape[0], im.shape[1], im.shape[2]);
  if ((!patches || image) && !column_major_.count(n.input(0)) && !seq_first) {
    // Any other image's pixels as tokens (TinyViT's MLP after its local convolution): the image
    // itself, flattened, to the per-token layers until a Reshape back to (1, H, W, C).
    Value v = im;
    v.channels_last = true;
    set_out(n, v);
    partitions_[n.output(0)] = Partition{false, im.shape[0], im.shape[1], true};
    return;
  }
  if (!patches)
    fail(n, "makes tokens of the pixels of '" + im.name +
                "' column by column; dltrain reads those of a patch embedding only: a Conv whose kernel equals its "
                "stride, without padding, read by nothing but the Reshape to (N, C, W*H)");
  const std::vector<int64_t> patch = conv->get_ints("FilterSize", {}, 2);
  LayerSpec pe;
  pe.name = conv->name;
  pe.type = "patchEmbedding";
  pe.inputs = conv->inputs;
  set_list(pe, "PatchSize", patch);
  pe.set("OutputSize", std::to_string(im.shape[2]));
  pe.set("SpatialFlattenMode", column_major_.count(n.input(0)) ? "column-major" : "row-major");
  *conv = pe;
  // The image itself is gone: its ONNX values may no longer be read.
  for (auto it = values_.begin(); it != values_.end();)
    it = it->second.name == im.name ? values_.erase(it) : std::next(it);
  tokens_out(n, t, seq_first);
}

// Tokens t as node n's output: (1, S, C), or sequence-first (S, 1, C) as a view of them.
void Importer::tokens_out(const onnx::NodeProto& n, const Value& t, bool seq_first) {
  if (!seq_first) return set_out(n, t);
  View v;
  v.source = tokens_source(t);
  v.dims = {t.shape[0], 1, t.shape[2]};
  v.strides = {t.shape[2], t.shape[0] * t.shape[2], 1};
  views_[define(n)] = v;
}

// Concat (axis 1) of a (1, 1, C) constant and tokens: the class token in front.
void Importer::class_token(const onnx::NodeProto& n) {
  const int last = n.input_size() - 1;
  Value v = value(n, last, false, false, true);
  const int64_t axis = attr_int(n, "axis", 0), c = v.shape[2];
  std::vector<std::vector<float>> tokens;
  for (int i = 0; i < last; ++i) {
    const std::vector<float> t = need_floats(n, i, "class token");
    const std::vector<int64_t> d = dims_of(*constant(n.input(i)));
    // (1, k, C): k tokens (PiT's two); any other constant of C values: one
    const int64_t k = d.size() == 3 && d[0] == 1 && d[2] == c ? d[1] : static_cast<int64_t>(t.size()) == c ? 1 : 0;
    if ((axis != 1 && axis != -2) || k < 1)
      fail(n, "concatenates a " + dims_str(*constant(n.input(i))) + " constant with tokens along axis " +
                  std::to_string(axis) + "; dltrain reads (1, k, " + std::to_string(c) +
                  ") tokens (a class token, DeiT's distillation token) in front of the sequence (axis 1)");
    for (int64_t j = 0; j < k; ++j) tokens.emplace_back(t.begin() + j * c, t.begin() + (j + 1) * c);
  }
  // One embeddingConcatenation per token, the one next to the sequence first.
  const std::string base = unique_name(n);
  for (int i = static_cast<int>(tokens.size()) - 1; i >= 0; --i) {
    const std::string name = i == 0 ? base : base + "_token" + std::to_string(i + 1);
    taken_.insert(name);
    add_layer("embeddingConcatenation", name, {v.name});
    add_param(name, "Weights", Shape{c}, tokens[static_cast<size_t>(i)]);
    v = Value{name, Shape{v.shape[0] * v.shape[1] + 1, 1, c}, false};
    v.tokens = true;
  }
  last_layer_op_ = "Concat";
  set_out(n, v);
}

// Add of a (1, S, C) constant to tokens: a learnable position table of S positions. Add of one
// value per channel ((C), (1, C) or (1, 1, C)): the Bias of the channel-wise groupedConvolution2d
// that scales the tokens when nothing else reads it (a channel scale's ONNX form, Mul and Add),
// otherwise one of its own (Weights 1).
void Importer::position_table(const onnx::NodeProto& n, int vi) {
  const Value v = value(n, vi);
  const int64_t s = v.shape[0], c = v.shape[2];
  const std::vector<int64_t> d = dims_of(*constant(n.input(1 - vi)));
  std::vector<float> t = need_floats(n, 1 - vi, "position table");
  if (static_cast<int64_t>(t.size()) == c && (d.size() < 3 || d[0] * d[1] == 1) && s > 1) {
    if (LayerSpec* scale = channel_scale_layer(v.name)) {
      for (NamedTensor& p : m_.params)
        if (p.layer == scale->name && p.name == "Bias")
          for (size_t i = 0; i < p.data.size(); ++i) p.data[i] += t[i];
      return set_out(n, value(n, vi, false, false, true));
    }
    Value out = v;
    out.name = scale_channels(n, unique_name(n), v.name, std::vector<float>(t.size(), 1.f), std::move(t));
    return set_out(n, out);
  }
  const bool fits = (d == std::vector<int64_t>{1, s, c} || d == std::vector<int64_t>{s, c});
  if (!fits)
    fail(n, "adds a " + dims_str(*constant(n.input(1 - vi))) + " constant to " + std::to_string(s) + " tokens of " +
                std::to_string(c) + " channels; dltrain reads a position table (1, " + std::to_string(s) + ", " +
                std::to_string(c) + ") or the bias of a projection");
  add_position_table(n, v, t);
}

// The channel-wise 1x1 groupedConvolution2d (an imported channel scale) named `layer`, when no
// ONNX node but the one being read reads its output; null otherwise.
LayerSpec* Importer::channel_scale_layer(const std::string& layer) {
  LayerSpec* found = nullptr;
  for (LayerSpec& l : m_.network.layers)
    if (l.name == layer && l.type == "groupedConvolution2d" && l.get_string("NumGroups", "") == "channel-wise" &&
        l.get_ints("FilterSize", {}, 2) == std::vector<int64_t>{1, 1})
      found = &l;
  if (!found) return nullptr;
  int readers = 0;
  for (const auto& [onnx_name, value] : values_)
    if (value.name == layer) readers += static_cast<int>(consumers_of(onnx_name).size());
  return readers == 1 ? found : nullptr;
}

// MATLAB's form of an Add of a learnable table of v's positions (its tokens or pixels, s of
// them; `table` (s, C) row by row): positionEmbedding (the table) and an addition of it to v.
void Importer::add_position_table(const onnx::NodeProto& n, const Value& v, std::vector<float> table) {
  const int64_t c = v.shape[2], s = static_cast<int64_t>(table.size()) / c;
  const std::string sum = unique_name(n);
  onnx::NodeProto named;
  named.set_name(node_name(n) + "_position");
  LayerSpec& spec = add_layer("positionEmbedding", unique_name(named), {v.name});
  spec.set("OutputSize", std::to_string(c));
  spec.set("MaxPosition", std::to_string(s));
  const std::string name = spec.name;
  add_param(name, "Weights", Shape{s, c}, std::move(table));
  add_layer("addition", sum, {v.name, name});
  last_layer_op_ = "Add";
  Value out = v;
  out.name = sum;
  set_out(n, out);
}

// Add of a (1, C, H, W) constant to an image of that shape: a learnable table of its H * W pixel
// positions (PiT's position embedding of its feature map): positionEmbedding on the image and
// an addition.
void Importer::image_position_table(const onnx::NodeProto& n, const Value& v, const std::vector<float>& chw) {
  const int64_t h = v.shape[0], w = v.shape[1], c = v.shape[2], s = h * w;
  std::vector<float> t(static_cast<size_t>(s * c));
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t p = 0; p < s; ++p) t[static_cast<size_t>(p * c + ch)] = chw[static_cast<size_t>(ch * s + p)];
  add_position_table(n, v, std::move(t));
}

// Concat (axis 1) of computed token sequences, or of a channels-last image flattened to its
// pixels among them: the concatenation layer along the tokens (Dim 1).
void Importer::token_concat(const onnx::NodeProto& n) {
  const int64_t axis = attr_int(n, "axis", 0);
  if (axis != 1 && axis != -2)
    fail(n, "concatenates token sequences along axis " + std::to_string(axis) +
                "; dltrain joins them along the tokens (axis 1)");
  std::vector<std::string> ins;
  int64_t s = 0, c = -1;
  for (int i = 0; i < n.input_size(); ++i) {
    const Value v = value(n, i, false, false, true);
    const bool pixels = !v.tokens && v.channels_last && flat_image(n.input(i));
    if (!v.tokens && !pixels)
      fail(n, "concatenates input '" + n.input(i) +
                  "', which is not a token sequence, with tokens; dltrain joins token sequences (and the pixels of a "
                  "flattened feature map) along the tokens");
    if (c >= 0 && v.shape[2] != c)
      fail(n,
           "concatenates token sequences of " + std::to_string(c) + " and " + std::to_string(v.shape[2]) + " channels");
    c = v.shape[2];
    s += v.shape[0] * v.shape[1];
    ins.push_back(v.name);
  }
  LayerSpec& spec = add_layer("concatenation", unique_name(n), ins);
  spec.set("Dim", "1");
  spec.set("NumInputs", std::to_string(ins.size()));
  last_layer_op_ = "Concat";
  Value out{spec.name, Shape{s, 1, c}, false};
  out.tokens = true;
  set_out(n, out);
}

// Gather of one token (axis 1): indexing1d of the first or the last.
void Importer::token_index(const onnx::NodeProto& n, const Value& v) {
  const onnx::TensorProto& t = need_const(n, 1, "indices");
  const std::vector<int64_t> idx = ints_of(t, path_ + ": node '" + node_name(n) + "'");
  const int64_t s = v.shape[0], axis = attr_int(n, "axis", 0);
  const bool one = idx.size() == 1 && t.dims_size() == 0;
  const int64_t at = one ? (idx[0] < 0 ? idx[0] + s : idx[0]) : -1;
  if ((axis != 1 && axis != -2) || at < 0 || at >= s)
    fail(n, "gathers " + dims_str(t) + " indices along axis " + std::to_string(axis) + " of " + std::to_string(s) +
                " tokens; dltrain reads one scalar index of a token (axis 1)");
  LayerSpec& spec = add_layer("indexing1d", unique_name(n), {v.name});
  spec.set("Index", at == 0 ? "first" : at == s - 1 ? "last" : std::to_string(at + 1));
  last_layer_op_ = "Gather";
  set_out(n, Value{spec.name, Shape{1, 1, v.shape[2]}, true});
}

// ReduceMean / ReduceMax over the tokens (axis 1, keepdims 0): globalAveragePooling1d /
// globalMaxPooling1d; of a channels-last image flattened to (1, H*W, C) (EfficientFormer's
// head), globalAveragePooling2d / globalMaxPooling2d of the image.
void Importer::token_pool(const onnx::NodeProto& n, const Value& v, bool flat_image, int64_t prefix) {
  const bool max = n.op_type() == "ReduceMax";
  std::vector<int64_t> axes = attr_ints(n, "axes", {});
  if (opset_ >= 18 && n.input_size() > 1 && !n.input(1).empty())
    axes = ints_of(need_const(n, 1, "axes"), path_ + ": node '" + node_name(n) + "'");
  const std::string type = std::string(max ? "globalMaxPooling" : "globalAveragePooling") + (flat_image ? "2d" : "1d");
  if ((axes != std::vector<int64_t>{1} && axes != std::vector<int64_t>{-2}) || attr_int(n, "keepdims", 1) != 0)
    fail(n, std::string(max ? "takes the maximum of" : "averages") + " tokens over axes " + ints_str(axes) +
                " with keepdims " + std::to_string(attr_int(n, "keepdims", 1)) + "; dltrain reads the " +
                (max ? "maximum" : "mean") + " over the tokens (axis 1, keepdims 0): " + type +
                (flat_image ? " of the image" : ""));
  LayerSpec& spec = add_layer(type, unique_name(n), {v.name});
  if (prefix > 0) spec.set("PrefixTokens", std::to_string(prefix));
  last_layer_op_ = n.op_type();
  set_out(n, Value{spec.name, Shape{1, 1, v.shape[2]}, true});  // (N, C)
}

// Arithmetic on one-value float constants (the attention's scale, computed from a shape) and
// Expand / ConstantOfShape whose result holds as many values as its input.
bool Importer::float_fold(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const std::string what = path_ + ": node '" + node_name(n) + "'";
  auto is_float = [&](int i) {
    const onnx::TensorProto* t = constant(n.input(i));
    return t && (t->data_type() == onnx::TensorProto::FLOAT || t->data_type() == onnx::TensorProto::DOUBLE);
  };
  auto keep = [&](const std::vector<int64_t>& dims, const std::vector<float>& v) {
    auto t = std::make_unique<onnx::TensorProto>();
    set_floats(*t, n.output_size() ? n.output(0) : "", dims, v);
    owned_.push_back(std::move(t));
    set_const(n, owned_.back().get());
  };
  if (op == "Expand" && n.input_size() == 2 && is_float(0)) {
    const onnx::TensorProto& x = *constant(n.input(0));
    std::vector<int64_t> d = dims_of(x), to = ints_of(*constant(n.input(1)), what);
    std::vector<int64_t> out(std::max(d.size(), to.size()), 1);
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t a = i + d.size() >= out.size() ? d[i + d.size() - out.size()] : 1;
      int64_t b = i + to.size() >= out.size() ? to[i + to.size() - out.size()] : 1;
      if (b == kBatchDim) b = 1;  // the batch of the input's Shape: one image
      if (a != b && a != 1 && b != 1)
        fail(n, "expands " + dims_str(x) + " to " + ints_str(to) + ": they do not broadcast");
      out[i] = std::max(a, b);
    }
    const bool batch = std::find(to.begin(), to.end(), kBatchDim) != to.end();
    if (product(out) != product(d) && !batch) return false;  // a plain broadcast: tensor_fold_node
    if (product(out) != product(d))
      fail(n, "expands a " + dims_str(x) + " constant to " + ints_str(out) +
                  "; dltrain reads Expand of constants to the batch only where no value is repeated (one image)");
    keep(out, floats_of(x, what));
    return true;
  }
  if (op == "ConstantOfShape") {
    const auto* a = find_attr(n, "value");
    if (!a || !a->has_t() || a->t().data_type() != onnx::TensorProto::FLOAT) return false;
    const std::vector<int64_t> d = ints_of(*constant(n.input(0)), what);
    for (int64_t x : d)
      if (x < 0 || x > kMaxFoldValues) return false;  // a tensor: tensor_fold_node
    if (product(d) > kMaxFoldValues) return false;
    const std::vector<float> value = floats_of(a->t(), what);
    if (value.size() != 1) fail(n, "has a value of " + std::to_string(value.size()) + " numbers; ONNX's is one");
    keep(d, std::vector<float>(static_cast<size_t>(product(d)), value[0]));
    return true;
  }
  const bool arithmetic = op == "Sqrt" || op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow";
  if (!arithmetic) return false;
  const int want = op == "Sqrt" ? 1 : 2;
  if (n.input_size() != want)
    fail(n, "has " + std::to_string(n.input_size()) + " inputs; " + op + " takes " + std::to_string(want));
  bool any_float = false;
  for (int i = 0; i < n.input_size(); ++i) any_float = any_float || is_float(i);
  if (!any_float) return false;
  std::vector<double> x;
  std::vector<int64_t> dims;
  for (int i = 0; i < n.input_size(); ++i) {
    const onnx::TensorProto& t = *constant(n.input(i));
    if (checked_values(t, what) != 1) return false;  // tensors: tensor_fold_node
    if (dims_of(t).size() > dims.size()) dims = dims_of(t);
    x.push_back(is_float(i) ? floats_of(t, what)[0] : static_cast<double>(ints_of(t, what)[0]));
  }
  double r = 0;
  if (op == "Sqrt") r = std::sqrt(x.at(0));
  if (op == "Add") r = x.at(0) + x.at(1);
  if (op == "Sub") r = x.at(0) - x.at(1);
  if (op == "Mul") r = x.at(0) * x.at(1);
  if (op == "Div") r = x.at(0) / x.at(1);
  if (op == "Pow") r = std::pow(x.at(0), x.at(1));
  if (!std::isfinite(r)) fail(n, "folds to " + std::to_string(r) + ", not a finite number");
  keep(dims, {static_cast<float>(r)});
  return true;
}

}  // namespace dlt::onnx_detail
