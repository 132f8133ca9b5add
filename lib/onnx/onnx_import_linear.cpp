// EfficientViT's ReLU linear attention (timm's LiteMLA) between the Reshape of its joint
// projection into heads and the Div that ends it. The Reshape (1, heads, 3d, H*W) of the NCHW
// image, its Transpose and the Split (or TorchScript's three Slices) into queries, keys and
// values are views of the image's pixels (image_heads, view_split); from there, node by node:
// Relu of the queries and of the keys, Pad of the values with a column of ones, the keys'
// Transpose, MatMul (keys^T, values), MatMul (queries, that), the Slices of its first d columns
// and of its last, Add of a constant eps to the last, and the Div of the two, which becomes one
// linearAttention layer whose output is the heads (1, heads, H*W, d) of its channels-last image:
// the Transpose and Reshape back to (1, heads d, H, W) read it as that image (view_image). Casts
// to float between the steps pass through. Anything else that reads a step stops the import
// naming the node.
#include <string>
#include <vector>

#include "onnx/onnx_importer.h"

namespace dlt::onnx_detail {

namespace {

const char* kLinearForm =
    "dltrain reads EfficientViT's ReLU linear attention (timm's LiteMLA) as: the Reshape (1, heads, 3d, H*W) of an "
    "image, Transpose (0, 1, 3, 2), Split into queries, keys and values of d channels each, Relu of the queries and "
    "of the keys, Pad of the values with one column of ones, the keys transposed (0, 1, 3, 2), MatMul (keys^T, "
    "values), MatMul (queries, that), Slice of its first d columns and of its last, Add of a constant eps to the "
    "last, and the Div of the two";

}  // namespace

// The role of a view of an image's pixels split into heads of queries, keys and values: 0, 1 or
// 2 (which of the three its channels are), or -1 when it is not one.
int Importer::linear_operand(const View& v, LinearPart& part) const {
  const Source& s = sources_[static_cast<size_t>(v.source)];
  if (s.kind != Source::kTokens || !s.tokens.channels_last || v.scale != 1 || v.unit_stride || v.rot || v.rotary >= 0 ||
      v.dims.size() != 4 || v.dims[0] != 1 || v.dims[2] != s.rows)
    return -1;
  const int64_t heads = v.dims[1], d = v.dims[3];
  if (heads < 1 || d < 1 || s.cols != heads * 3 * d || (heads > 1 && v.strides[1] != 3 * d) ||
      (s.rows > 1 && v.strides[2] != s.cols) || (d > 1 && v.strides[3] != 1) || v.offset % d != 0 || v.offset / d > 2 ||
      v.offset < 0)
    return -1;
  part.source = v.source;
  part.heads = heads;
  part.d = d;
  return static_cast<int>(v.offset / d);
}

bool Importer::linear_node(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  auto part = [&](int i) -> const LinearPart* {
    if (n.input_size() <= i) return nullptr;
    auto it = linear_.find(n.input(i));
    return it == linear_.end() ? nullptr : &it->second;
  };
  auto next = [&](LinearPart p, LinearPart::Role role) {
    p.role = role;
    linear_[define(n)] = p;
    return true;
  };
  // The start: a Relu of the queries or keys, the Pad of the values.
  if ((op == "Relu" || op == "Pad") && has_view(n, 0)) {
    LinearPart p;
    const int which = linear_operand(views_.at(n.input(0)), p);
    if (op == "Relu" && (which == 0 || which == 1))
      return next(p, which == 0 ? LinearPart::kQueries : LinearPart::kKeys);
    if (op != "Pad" || which != 2) return false;
    const std::string what = path_ + ": node '" + node_name(n) + "'";
    const std::vector<int64_t> pads =
        n.input_size() > 1 && !n.input(1).empty() ? ints_of(need_const(n, 1, "pads"), what) : attr_ints(n, "pads", {});
    const std::vector<float> value =
        n.input_size() > 2 && !n.input(2).empty() ? need_floats(n, 2, "constant_value") : std::vector<float>{0.f};
    if (attr_string(n, "mode", "constant") != "constant" || pads != std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, 1} ||
        value != std::vector<float>{1.f})
      fail(n, "pads a linear attention's values with " + ints_str(pads) + " (value " +
                  (value.size() == 1 ? std::to_string(value[0]) : std::string("not one number")) +
                  "); dltrain reads one column of ones after the values: pads [0, 0, 0, 0, 0, 0, 0, 1], value 1");
    return next(p, LinearPart::kValues);
  }
  const LinearPart* a = part(0);
  const LinearPart* b = part(1);
  if (!a && !b) return false;
  auto same = [](const LinearPart& x, const LinearPart& y) {
    return x.source == y.source && x.heads == y.heads && x.d == y.d;
  };
  if (a && !b && op == "Cast" && attr_int(n, "to", 0) == onnx::TensorProto::FLOAT) return next(*a, a->role);
  if (a && !b && op == "Transpose" && a->role == LinearPart::kKeys &&
      attr_ints(n, "perm", {}) == std::vector<int64_t>{0, 1, 3, 2})
    return next(*a, LinearPart::kKeysT);
  if (op == "MatMul" && a && b && n.input_size() == 2 && same(*a, *b)) {
    if (a->role == LinearPart::kKeysT && b->role == LinearPart::kValues) return next(*a, LinearPart::kContext);
    if (a->role == LinearPart::kQueries && b->role == LinearPart::kContext) return next(*a, LinearPart::kProduct);
  }
  if (a && !b && op == "Slice" && a->role == LinearPart::kProduct) {
    const SliceArgs s = slice_args(n);
    if (s.axes.size() == 1 && (s.axes[0] == 3 || s.axes[0] == -1) && s.steps[0] == 1) {
      const auto [first, count] = s.range(0, a->d + 1);
      if (first == 0 && count == a->d) return next(*a, LinearPart::kTop);
      if (first == a->d && count == 1) return next(*a, LinearPart::kLast);
    }
    fail(n, "slices a linear attention's product (.., " + std::to_string(a->d + 1) + ") other than into its first " +
                std::to_string(a->d) + " columns and its last; " + kLinearForm);
  }
  if (op == "Add" && n.input_size() == 2 && ((a && !b && constant(n.input(1))) || (b && !a && constant(n.input(0))))) {
    const LinearPart& p = a ? *a : *b;
    const std::vector<float> eps = need_floats(n, a ? 1 : 0, "eps");
    if (p.role == LinearPart::kLast && eps.size() == 1 && eps[0] >= 0.f && eps[0] < 1e30f) {
      LinearPart out = p;
      out.eps = eps[0];
      return next(out, LinearPart::kDenominator);
    }
    if (p.role == LinearPart::kLast)
      fail(n, "adds " + std::to_string(eps.size()) + " values to a linear attention's denominator" +
                  (eps.size() == 1 ? " (a negative or non-finite one)" : "") +
                  "; dltrain reads one number >= 0 (its eps)");
  }
  if (op == "Div" && a && b && n.input_size() == 2 && a->role == LinearPart::kTop &&
      b->role == LinearPart::kDenominator && same(*a, *b)) {
    const Source& s = sources_[static_cast<size_t>(a->source)];
    const Value image = s.tokens;
    LayerSpec& spec = add_layer("linearAttention", unique_name(n), {image.name});
    spec.set("NumHeads", std::to_string(a->heads));
    spec.set("Epsilon", onnx_number(b->eps));
    last_layer_op_ = op;
    Value out{spec.name, Shape{image.shape[0], image.shape[1], a->heads * a->d}, false};
    out.channels_last = true;  // its pixels in row order: the heads' tokens
    View v;
    v.source = tokens_source(out);
    const int64_t rows = image.shape[0] * image.shape[1], c = a->heads * a->d;
    v.dims = {1, a->heads, rows, a->d};
    v.strides = {rows * c, a->d, c, 1};
    views_[define(n)] = v;
    return true;
  }
  fail(n, "reads a step of a linear attention out of order; " + std::string(kLinearForm));
}

}  // namespace dlt::onnx_detail
