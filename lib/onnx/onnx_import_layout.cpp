// The importer's shape folding, layout forms and Mul routing (onnx_importer.h):
// - Shape of a computed value and the integer arithmetic on it, folded to constants
//   (onnx_import_fold.h), so that Reshape reads a constant target;
// - Flatten / Reshape / Squeeze / Unsqueeze between (N, C, H, W), (N, C*H*W) and (N, C, 1, 1);
//   a Flatten (or a Reshape to (N, K)) of a channels-last image or a Flatten of tokens: a flatten
//   layer (their order is dltrain's);
// - Transpose (0, 2, 3, 1) to channels-last and (0, 3, 1, 2) back (the same layers, a flag);
// - ShuffleNet's Reshape (N, G, C/G, H, W) -> Transpose (0, 2, 1, 3, 4) -> Reshape as one
//   channelShuffle layer;
// - Mul: of two computed values the layer type registered for "Mul"; of a value and a
//   per-channel constant a 1x1 channel-wise groupedConvolution2d (ConvNeXt's layer scale).
#include <algorithm>
#include <cmath>
#include <set>

#include "onnx/onnx_importer.h"

namespace dlt::onnx_detail {

namespace {

// The ONNX dims of a value: (N, C, H, W), (N, H, W, C) when channels-last, (N, C*H*W) flat,
// (N, S, C) tokens.
std::vector<int64_t> onnx_dims(const Value& v) {
  if (v.tokens) return {kBatchDim, v.shape[0], v.shape[2]};
  if (v.flat) return {kBatchDim, v.shape.numel()};
  if (v.channels_last) return {kBatchDim, v.shape[0], v.shape[1], v.shape[2]};
  return {kBatchDim, v.shape[2], v.shape[0], v.shape[1]};
}

// Axes as a sorted set of non-negative indices for a tensor of `rank` dims; false when out of range.
bool normalize_axes(std::vector<int64_t>& axes, int64_t rank) {
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return false;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  return std::adjacent_find(axes.begin(), axes.end()) == axes.end();
}

}  // namespace

void Importer::set_ints(const onnx::NodeProto& n, const IntConst& c) {
  auto t = std::make_unique<onnx::TensorProto>();
  onnxu::set_ints(*t, n.output_size() ? n.output(0) : "",
                  c.scalar ? std::vector<int64_t>{} : std::vector<int64_t>{int64_t(c.v.size())}, c.v);
  owned_.push_back(std::move(t));
  set_const(n, owned_.back().get());
}

void Importer::shape(const onnx::NodeProto& n) {
  // Of a constant (TorchScript takes the length of a folded pad list): its dimensions.
  const onnx::TensorProto* t = n.input_size() > 0 ? constant(n.input(0)) : nullptr;
  // Of a channels-last image in a graph exported with one image: that image's batch of 1
  // (torchvision's Swin computes window counts from it, B * windows).
  const int64_t one = exported_batch_ == 1 ? 1 : kBatchDim;
  std::vector<int64_t> dims;
  if (t) {
    dims = dims_of(*t);
  } else if (n.input_size() > 0 && image_views_.count(n.input(0))) {
    const ImageView& v = image_views_.at(n.input(0));
    dims = {one, v.count[0], v.count[1], v.src.shape[2]};
  } else {
    const Value v = value(n, 0, false, false, true);
    dims = onnx_dims(v);
    if (v.channels_last) dims[0] = one;
  }
  set_ints(n, shape_slice(dims, attr_int(n, "start", 0), attr_int(n, "end", INT64_MAX)));
}

bool Importer::all_constant(const onnx::NodeProto& n) const {
  bool any = false;
  for (const auto& in : n.input()) {
    if (in.empty()) continue;
    if (!constant(in)) return false;
    any = true;
  }
  return any;
}

bool Importer::shape_arithmetic(const onnx::NodeProto& n) const {
  if (n.op_type() == "ConstantOfShape") {  // a list of integers: one dimension, an integer value
    const auto* v = find_attr(n, "value");
    const bool int_value =
        v && v->has_t() &&
        (v->t().data_type() == onnx::TensorProto::INT64 || v->t().data_type() == onnx::TensorProto::INT32);
    const onnx::TensorProto* shape = n.input_size() > 0 ? constant(n.input(0)) : nullptr;
    if (!int_value || !shape || checked_values(*shape, path_) > 1) return false;
  }
  // A list reshaped to a matrix (TorchScript's pad list, (-1, 2)): a tensor fold.
  if (n.op_type() == "Reshape" && n.input_size() > 1 && constant(n.input(1)) &&
      checked_values(*constant(n.input(1)), path_) > 1)
    return false;
  for (const auto& in : n.input()) {
    if (in.empty()) continue;
    const onnx::TensorProto* t = constant(in);
    const bool ints = t->data_type() == onnx::TensorProto::INT64 || t->data_type() == onnx::TensorProto::INT32;
    // a list longer than a shape (a relative position index flattened: swin_s3) is a tensor too
    if (!ints || t->dims_size() > 1 || checked_values(*t, path_) > kMaxFoldValues) return false;
  }
  return true;
}

namespace {

// bounds: a Slice's starts or ends, where INT64_MAX / MIN (PyTorch's "to the end") clamp to
// +-2^53 (past any dimension) rather than being refused.
TensorConst tensor_const(const onnx::TensorProto& t, const std::string& what, bool bounds = false) {
  TensorConst c;
  c.dims = dims_of(t);
  if (checked_values(t, what) > kMaxFoldTensorValues)
    throw FoldError("has a " + dims_str(t) + " input; dltrain folds tensors of at most " +
                    std::to_string(kMaxFoldTensorValues) + " values");
  const int type = t.data_type();
  if (type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::DOUBLE) {
    for (float x : floats_of(t, what)) c.v.push_back(x);
  } else if (type == onnx::TensorProto::INT64 || type == onnx::TensorProto::INT32) {
    c.type = TensorConst::kInt;
    for (int64_t x : ints_of(t, what)) {
      if (bounds) x = std::clamp(x, -(int64_t{1} << 53), int64_t{1} << 53);
      if (x > (int64_t{1} << 53) || x < -(int64_t{1} << 53))
        throw FoldError("has an input holding the batch size or an integer beyond 2^53");
      c.v.push_back(static_cast<double>(x));
    }
  } else if (type == onnx::TensorProto::BOOL) {
    check_tensor(t, what);
    c.type = TensorConst::kBool;
    if (t.has_raw_data())
      for (char b : t.raw_data()) c.v.push_back(b != 0 ? 1 : 0);
    else
      for (int32_t b : t.int32_data()) c.v.push_back(b != 0 ? 1 : 0);
  } else {
    throw FoldError("has an input of data type " + std::to_string(type) + " (dltrain folds float, int and bool)");
  }
  return c;
}

void to_proto(const TensorConst& c, onnx::TensorProto& t, const std::string& name) {
  if (c.type == TensorConst::kFloat) return set_floats(t, name, c.dims, std::vector<float>(c.v.begin(), c.v.end()));
  if (c.type == TensorConst::kInt) return set_ints(t, name, c.dims, std::vector<int64_t>(c.v.begin(), c.v.end()));
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::BOOL);
  for (int64_t d : c.dims) t.add_dims(d);
  std::string bytes;
  for (double x : c.v) bytes.push_back(x != 0 ? 1 : 0);
  t.set_raw_data(bytes);
}

}  // namespace

void Importer::tensor_fold_node(const onnx::NodeProto& n) {
  const std::string what = path_ + ": node '" + node_name(n) + "'";
  try {
    std::vector<TensorConst> consts(static_cast<size_t>(n.input_size()));
    std::vector<const TensorConst*> in;
    for (int i = 0; i < n.input_size(); ++i) {
      if (n.input(i).empty()) {
        in.push_back(nullptr);
        continue;
      }
      consts[static_cast<size_t>(i)] = tensor_const(*constant(n.input(i)), what, n.op_type() == "Slice" && (i == 1 || i == 2));
      in.push_back(&consts[static_cast<size_t>(i)]);
    }
    TensorFoldAttrs a;
    a.axis = attr_int(n, "axis", 0);
    a.perm = attr_ints(n, "perm", {});
    a.has_axes = find_attr(n, "axes") != nullptr;
    a.axes = attr_ints(n, "axes", {});
    a.starts = attr_ints(n, "starts", {});
    a.ends = attr_ints(n, "ends", {});
    a.to = attr_int(n, "to", 1);
    a.allowzero = attr_int(n, "allowzero", 0);
    a.reduction = attr_string(n, "reduction", "none");
    a.batch_dims = attr_int(n, "batch_dims", 0);
    a.equation = attr_string(n, "equation", "");
    a.alpha = attr_float(n, "alpha", 1.f);
    a.beta = attr_float(n, "beta", 1.f);
    a.trans_a = attr_int(n, "transA", 0);
    a.trans_b = attr_int(n, "transB", 0);
    a.strides = attr_ints(n, "strides", {});
    a.pads = attr_ints(n, "pads", {});
    a.dilations = attr_ints(n, "dilations", {});
    a.group = attr_int(n, "group", 1);
    a.auto_pad = attr_string(n, "auto_pad", "NOTSET");
    a.softmax_axis = attr_int(n, "axis", opset_ >= 13 ? -1 : 1);
    a.flatten_axis = attr_int(n, "axis", 1);
    a.exclusive = attr_int(n, "exclusive", 0);
    a.reverse = attr_int(n, "reverse", 0);
    if (const auto* v = find_attr(n, "value"); v && v->has_t()) {
      a.value = tensor_const(v->t(), what);
      a.has_value = true;
    }
    if (n.op_type() == "Split") {  // a joint projection's weight cut into Q, K and V (nn.MultiheadAttention)
      std::vector<int64_t> sizes = attr_ints(n, "split", {});
      if (in.size() > 1 && in[1]) sizes = ints_of(*constant(n.input(1)), what);
      if (in.empty() || !in[0]) fail(n, "has no data input");
      const std::vector<TensorConst> parts = split_fold(*in[0], a.axis, sizes, n.output_size());
      for (int i = 0; i < n.output_size(); ++i) {
        auto t = std::make_unique<onnx::TensorProto>();
        to_proto(parts[static_cast<size_t>(i)], *t, n.output(i));
        owned_.push_back(std::move(t));
        consts_[define(n, i)] = owned_.back().get();
      }
      return;
    }
    auto t = std::make_unique<onnx::TensorProto>();
    to_proto(tensor_fold(n.op_type(), in, a, static_cast<int>(opset_)), *t, n.output_size() ? n.output(0) : "");
    owned_.push_back(std::move(t));
    set_const(n, owned_.back().get());
  } catch (const FoldError& e) {
    fail(n, std::string("folding its constant inputs: ") + e.what());
  }
}

void Importer::fold_node(const onnx::NodeProto& n) {
  const std::string what = path_ + ": node '" + node_name(n) + "'";
  if (n.op_type() == "Cast" && attr_int(n, "to", 0) == onnx::TensorProto::FLOAT) {
    // A constant cast to float (a Clip bound, a scale): the same constant, or its integers as floats.
    const onnx::TensorProto& t = *constant(n.input(0));
    if (t.data_type() == onnx::TensorProto::FLOAT) return set_const(n, &t);
    if (checked_values(t, what) > kMaxFoldValues)
      fail(n, "casts a " + dims_str(t) + " integer constant to float; dltrain casts at most " +
                  std::to_string(kMaxFoldValues) + " values");
    const std::vector<int64_t> v = ints_of(t, what);
    auto f = std::make_unique<onnx::TensorProto>();
    set_floats(*f, n.output_size() ? n.output(0) : "", dims_of(t), std::vector<float>(v.begin(), v.end()));
    owned_.push_back(std::move(f));
    return set_const(n, owned_.back().get());
  }
  std::vector<IntConst> consts(static_cast<size_t>(n.input_size()));
  std::vector<const IntConst*> in;
  for (int i = 0; i < n.input_size(); ++i) {
    if (n.input(i).empty()) {
      in.push_back(nullptr);
      continue;
    }
    const onnx::TensorProto& t = *constant(n.input(i));
    if (t.dims_size() > 1 || checked_values(t, what) > kMaxFoldValues)
      fail(n, "input '" + n.input(i) + "' is a " + dims_str(t) +
                  " constant; dltrain folds only shape arithmetic (scalars and lists of up to " +
                  std::to_string(kMaxFoldValues) + " integers)");
    consts[static_cast<size_t>(i)] = IntConst{t.dims_size() == 0, ints_of(t, what)};
    in.push_back(&consts[static_cast<size_t>(i)]);
  }
  FoldAttrs a;
  a.axis = attr_int(n, "axis", 0);
  a.to = attr_int(n, "to", 7);
  a.has_axes = find_attr(n, "axes") != nullptr;
  a.axes = attr_ints(n, "axes", {});
  a.starts = attr_ints(n, "starts", {});
  a.ends = attr_ints(n, "ends", {});
  if (const auto* v = find_attr(n, "value"); v && v->has_t()) {
    if (checked_values(v->t(), what) != 1) fail(n, "has a value of " + dims_str(v->t()) + "; expected one value");
    a.value = ints_of(v->t(), what)[0];
  }
  try {
    set_ints(n, fold(n.op_type(), in, a, static_cast<int>(opset_)));
  } catch (const FoldError& e) {
    fail(n, std::string("shape arithmetic ") + e.what());
  }
}

// Cast of a computed value: to float it is that value (exporters cast float to float).
void Importer::cast(const onnx::NodeProto& n) {
  const Value v = value(n, 0, false, false, true);
  if (attr_int(n, "to", 0) != onnx::TensorProto::FLOAT)
    fail(n, "casts a computed value to data type " + std::to_string(attr_int(n, "to", 0)) +
                "; dltrain computes in float32 and reads only casts to float");
  set_out(n, v);
}

void Importer::reshape(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op == "Reshape") {
    if (n.input_size() > 0 && shuffles_.count(n.input(0))) {
      // The last step of a channel shuffle: (N, C/G, G, H, W) back to (N, C, H, W).
      const Shuffle sh = shuffles_.at(n.input(0));
      const Value& im = sh.image;
      auto t = ints_of(need_const(n, 1, "shape"), path_ + ": node '" + node_name(n) + "'");
      const int64_t h = im.shape[0], w = im.shape[1], c = im.shape[2];
      const bool batch = !t.empty() && (t[0] == kBatchDim || t[0] == -1 || t[0] == 0 || t[0] >= 1);
      const bool back = t.size() == 4 && batch && (t[1] == c || (t[1] == -1 && t[0] != -1)) && t[2] == h && t[3] == w;
      if (!sh.transposed || !back)
        fail(n, "reshapes a 5-D value to " + ints_str(t) +
                    "; dltrain reads 5-D values only as ShuffleNet's channel "
                    "shuffle (Reshape to (N, G, C/G, H, W), Transpose (0, 2, 1, 3, 4), Reshape to (N, " +
                    std::to_string(c) + ", " + std::to_string(h) + ", " + std::to_string(w) + "))");
      LayerSpec& s = add_layer("channelShuffle", unique_name(n), {im.name});
      s.set("NumGroups", std::to_string(sh.groups));
      last_layer_op_ = "Reshape";
      Value out = im;
      out.name = s.name;
      return set_out(n, out);
    }
    const Value v = value(n, 0, false, false, true);
    const auto t = ints_of(need_const(n, 1, "shape"), path_ + ": node '" + node_name(n) + "'");
    // allowzero 1: a 0 is a zero-sized dimension, not "copy the input's".
    if (attr_int(n, "allowzero", 0) != 0 && std::find(t.begin(), t.end(), 0) != t.end())
      fail(n, "reshapes to " + ints_str(t) + " with allowzero 1: a dimension of size 0");
    return reshape_to(n, v, t);
  }
  Value v = value(n, 0, false, false, true);
  const int64_t h = v.shape[0], w = v.shape[1];
  if (op == "Flatten") {
    int64_t axis = attr_int(n, "axis", 1);
    const int64_t rank = v.flat ? 2 : 4;
    if (axis < 0) axis += rank;
    if (axis != 1) fail(n, "only Flatten with axis 1 (keep the batch dimension) is supported");
    if ((v.channels_last || v.tokens) && h * w > 1) {
      // (N, H, W, C) or tokens (N, S, C) flattened hold dltrain's memory order: its flatten layer
      LayerSpec& s = add_layer("flatten", unique_name(n), {v.name});
      return set_out(n, Value{s.name, Shape{1, 1, v.shape.numel()}, true});
    }
    v.flat = true;
    v.channels_last = false;
    return set_out(n, v);
  }
  // Squeeze / Unsqueeze: axes from input 1 (opset 13) or the attribute.
  std::vector<int64_t> axes;
  bool has_axes = false;
  if (opset_ >= 13) {
    if (n.input_size() > 1 && !n.input(1).empty()) {
      axes = ints_of(need_const(n, 1, "axes"), path_ + ": node '" + node_name(n) + "'");
      has_axes = true;
    }
  } else if (find_attr(n, "axes")) {
    axes = attr_ints(n, "axes", {});
    has_axes = true;
  }
  if (op == "Squeeze") {
    if (v.flat) fail(n, "squeezes a flat (N, K) value; only squeezing 1x1 spatial dimensions is supported");
    if (h != 1 || w != 1) fail(n, "only squeezing 1x1 spatial dimensions is supported");
    const std::vector<int64_t> spatial = v.channels_last ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{2, 3};
    if (has_axes && (!normalize_axes(axes, 4) || axes != spatial))
      fail(n, "squeezes axes " + ints_str(axes) + "; only the 1x1 spatial axes " + ints_str(spatial) +
                  " of an image are supported");
    v.flat = true;
    v.channels_last = false;
    return set_out(n, v);
  }
  // Unsqueeze (N, C) -> (N, 1, C): a sequence of one token (CaiT's and XCiT's class attention:
  // the query of the class token alone).
  if (v.flat && h * w == 1 && has_axes && normalize_axes(axes, 3) && axes == std::vector<int64_t>{1}) {
    v.flat = false;
    v.tokens = true;
    return set_out(n, v);
  }
  // Unsqueeze (N, C) -> (N, C, 1, 1), or (N, 1, 1, C) channels-last.
  if (!v.flat || h * w != 1 || !has_axes || !normalize_axes(axes, 4) ||
      (axes != std::vector<int64_t>{2, 3} && axes != std::vector<int64_t>{1, 2}))
    fail(n,
         "only unsqueezing a flat (N, C) value to (N, C, 1, 1) (axes 2, 3), (N, 1, 1, C) (axes 1, 2) or one token "
         "(N, 1, C) (axis 1) is supported");
  v.flat = false;
  v.channels_last = axes[0] == 1;
  set_out(n, v);
}

// Reshape of value v to `target` (folded, kBatchDim for N; 0 copies a dimension, one -1 is
// inferred).
void Importer::reshape_to(const onnx::NodeProto& n, const Value& v, const std::vector<int64_t>& target) {
  const int64_t numel = v.shape.numel(), h = v.shape[0], w = v.shape[1], c = v.shape[2];
  const std::vector<int64_t> in = onnx_dims(v);
  std::vector<int64_t> t = target;
  if (t == std::vector<int64_t>{-1}) {  // the whole batch as one list: read back only by restride()
    whole_[define(n)] = v;
    return;
  }
  const std::string supported = "; supported: (N, " + std::to_string(numel) + "), the same image (N, " +
                                std::to_string(c) + ", " + std::to_string(h) + ", " + std::to_string(w) +
                                "), (N, C) <-> (N, C, 1, 1), and ShuffleNet's (N, G, C/G, H, W)";
  if (t.empty() || t.size() > 5) fail(n, "reshapes to " + ints_str(target) + supported);
  // The batch entry: N, -1 (then the rest is given), 0 (copy N), or a number (the exported batch).
  const bool batch_inferred = t[0] == -1;
  if (t[0] != kBatchDim && t[0] != -1 && t[0] < 0) fail(n, "reshapes to " + ints_str(target) + supported);
  int64_t known = 1, infer = -1;
  for (size_t i = 1; i < t.size(); ++i) {
    if (t[i] == 0) {
      if (i >= in.size() || in[i] == kBatchDim)
        fail(n, "reshape target " + ints_str(target) + " copies a dimension its input lacks");
      t[i] = in[i];
    }
    if (t[i] == -1 && !batch_inferred && infer < 0) {
      infer = static_cast<int64_t>(i);
      continue;
    }
    if (t[i] < 1 || t[i] > numel || known > numel / t[i]) fail(n, "reshapes to " + ints_str(target) + supported);
    known *= t[i];
  }
  if (infer > 0) {
    if (numel % known != 0) fail(n, "reshapes " + std::to_string(numel) + " values per image to " + ints_str(target));
    t[static_cast<size_t>(infer)] = numel / known;
    known = numel;
  }
  if (known != numel)
    fail(n, "reshapes " + std::to_string(numel) + " values per image to " + ints_str(target) + supported);
  const std::vector<int64_t> rest(t.begin() + 1, t.end());
  Value out = v;
  if (v.channels_last && h * w > 1 && rest.size() == 1) {  // flattened in dltrain's order: its flatten layer
    LayerSpec& s = add_layer("flatten", unique_name(n), {v.name});
    return set_out(n, Value{s.name, Shape{1, 1, numel}, true});
  }
  if (v.channels_last && h * w > 1)
    fail(n, "reshapes a channels-last (N, H, W, C) value to " + ints_str(target) +
                "; dltrain reads it flattened to (N, H*W*C), or transposed back to (N, C, H, W) first");
  out.channels_last = false;
  if (rest.size() == 1) {  // (N, K)
    out.flat = true;
    return set_out(n, out);
  }
  if (rest.size() == 3 &&
      ((rest[0] == c && rest[1] == h && rest[2] == w) || (h * w == 1 && rest[1] == 1 && rest[2] == 1))) {  // an image
    out.flat = false;
    return set_out(n, out);
  }
  if (rest.size() == 2 && !v.flat && rest[0] == c && rest[1] == h * w) {  // (N, C, H*W): on its way to tokens
    flat_images_[define(n)] = v;
    return;
  }
  if (rest.size() == 4 && !v.flat && !v.channels_last && rest[0] > 1 && rest[0] * rest[1] == c && rest[2] == h &&
      rest[3] == w) {  // (N, G, C/G, H, W): the first step of a channel shuffle
    shuffles_[define(n)] = Shuffle{v, rest[0], false};
    return;
  }
  fail(n, "reshapes " + std::string(v.flat ? "(N, " + std::to_string(numel) + ")" : "an image") + " to " +
              ints_str(target) + supported);
}

// Gather(Reshape(v, [-1]), indices) where indices is 0, 1, 2, ... in v's own shape (B, ...):
// the dynamo exporter's as_strided of a contiguous tensor, which is v itself.
void Importer::restride(const onnx::NodeProto& n) {
  const Value v = whole_.at(n.input(0));
  const onnx::TensorProto& t = need_const(n, 1, "indices");
  std::vector<int64_t> want = onnx_dims(v), got = dims_of(t);
  const bool same_shape = attr_int(n, "axis", 0) == 0 && got.size() == want.size() && !got.empty() &&
                          std::equal(got.begin() + 1, got.end(), want.begin() + 1);
  bool identity = same_shape;
  if (same_shape) {
    const std::vector<int64_t> idx = ints_of(t, path_ + ": node '" + node_name(n) + "'");
    for (size_t i = 0; i < idx.size() && identity; ++i) identity = idx[i] == static_cast<int64_t>(i);
  }
  if (!identity)
    fail(n, "gathers from the whole batch flattened to 1-D in an order other than its own (" + dims_str(t) +
                " indices); dltrain reads only the identity as_strided");
  set_out(n, v);
}

void Importer::transpose(const onnx::NodeProto& n) {
  const std::vector<int64_t> perm = attr_ints(n, "perm", {});
  if (n.input_size() > 0 && shuffles_.count(n.input(0))) {
    Shuffle sh = shuffles_.at(n.input(0));
    if (sh.transposed || perm != std::vector<int64_t>{0, 2, 1, 3, 4})
      fail(n, "transposes a 5-D value with perm " + ints_str(perm) +
                  "; dltrain reads 5-D values only as ShuffleNet's channel shuffle (perm [0, 2, 1, 3, 4])");
    sh.transposed = true;
    shuffles_[define(n)] = sh;
    return;
  }
  Value v = value(n, 0, false, false, true);
  if (!v.flat && !v.channels_last && perm == std::vector<int64_t>{0, 2, 3, 1}) {
    v.channels_last = true;
    return set_out(n, v);
  }
  if (v.channels_last && perm == std::vector<int64_t>{0, 3, 1, 2}) {
    v.channels_last = false;
    return set_out(n, v);
  }
  fail(n, "transposes " +
              std::string(v.flat            ? "a flat (N, K) value"
                          : v.channels_last ? "a channels-last value"
                                            : "an image") +
              " with perm " + ints_str(perm) +
              "; supported: (0, 2, 3, 1) of an image to channels-last, (0, 3, 1, 2) back, and ShuffleNet's "
              "(0, 2, 1, 3, 4)");
}

void Importer::mul(const onnx::NodeProto& n) {
  if (n.input_size() == 2 && !n.input(0).empty() && !n.input(1).empty()) {
    const bool c0 = constant(n.input(0)) != nullptr, c1 = constant(n.input(1)) != nullptr;
    if (!c0 && !c1) {  // two computed values: the multiplication layer
      if (const LayerType* t = layer_type_for_onnx("Mul")) return read_layer(*t, n);
      fail(n, "operator 'Mul' of two computed values is not supported by dltrain import (supported: " +
                  supported_ops() + ")");
    }
    if (c0 != c1) {
      const int vi = c0 ? 1 : 0;
      const bool at_input =
          values_.count(n.input(vi)) && values_[n.input(vi)].name == input_name_ && m_.network.layers.size() == 1;
      if (!at_input) return channel_scale(n, vi);
    }
  }
  input_normalization(n);
}

// torch.stack of flat (N, K) values and the mean over the stack (CrossViT's two heads): an
// Unsqueeze of axis 0 each, a Concat along axis 0, a ReduceMean (or ReduceSum) of axis 0 without
// keepdims: the addition layer of the values (and a scale by 1 / their number for the mean).
bool Importer::stack_node(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op == "Unsqueeze" && n.input_size() >= 1 && values_.count(n.input(0))) {
    const Value& v = values_.at(n.input(0));
    std::vector<int64_t> axes = opset_ >= 13 ? std::vector<int64_t>{} : attr_ints(n, "axes", {});
    if (opset_ >= 13 && n.input_size() > 1 && constant(n.input(1)))
      axes = ints_of(*constant(n.input(1)), path_ + ": node '" + node_name(n) + "'");
    if (!v.flat || v.shape[0] * v.shape[1] != 1 || axes != std::vector<int64_t>{0}) return false;
    stacks_[define(n)] = {v};
    return true;
  }
  if (op == "Concat" && n.input_size() >= 1 && stacks_.count(n.input(0))) {
    if (attr_int(n, "axis", 0) != 0) fail(n, "concatenates stacked (1, N, K) values along an axis other than 0");
    std::vector<Value> all;
    for (int i = 0; i < n.input_size(); ++i) {
      auto it = stacks_.find(n.input(i));
      if (it == stacks_.end()) fail(n, "concatenates a stack of (1, N, K) values with something else");
      for (const Value& v : it->second) {
        if (!all.empty() && v.shape[2] != all.front().shape[2])
          fail(n, "stacks values of " + std::to_string(all.front().shape[2]) + " and " + std::to_string(v.shape[2]) +
                      " channels");
        all.push_back(v);
      }
    }
    stacks_[define(n)] = all;
    return true;
  }
  if ((op == "ReduceMean" || op == "ReduceSum") && n.input_size() >= 1 && stacks_.count(n.input(0))) {
    const std::vector<Value>& all = stacks_.at(n.input(0));
    std::vector<int64_t> axes = attr_ints(n, "axes", {});
    if (n.input_size() > 1 && constant(n.input(1)))
      axes = ints_of(*constant(n.input(1)), path_ + ": node '" + node_name(n) + "'");
    if (axes != std::vector<int64_t>{0} || attr_int(n, "keepdims", 1) != 0)
      fail(n, "reduces a stack of (N, K) values over axes " + ints_str(axes) +
                  "; dltrain reads the mean or sum over the stack (axes [0], keepdims 0)");
    std::vector<std::string> ins;
    for (const Value& v : all) ins.push_back(v.name);
    Value out = all.front();
    if (ins.size() > 1) {
      LayerSpec& sum = add_layer("addition", unique_name(n) + (op == "ReduceMean" ? "_sum" : ""), ins);
      sum.set("NumInputs", std::to_string(ins.size()));
      out.name = sum.name;
    }
    if (op == "ReduceMean" && ins.size() > 1) {
      const int64_t k = out.shape[2];
      out.name = scale_channels(n, unique_name(n), out.name,
                                std::vector<float>(static_cast<size_t>(k), 1.f / static_cast<float>(ins.size())));
    }
    last_layer_op_ = op;
    set_out(n, out);
    return true;
  }
  return false;
}

// Mul(value, constant of 1 or C values broadcast over the channels), or Div by one: a channel-wise
// groupedConvolution2d with 1x1 filters, the constant as Weights and zero Bias; Add of such a
// constant (offset): Weights 1 and the constant as Bias.
void Importer::channel_scale(const onnx::NodeProto& n, int vi, bool reciprocal, bool offset) {
  const Value v = value(n, vi, false, false, true);
  const int64_t c = v.shape[2];
  if (v.flat && v.shape[0] * v.shape[1] > 1)
    fail(n, std::string(offset ? "adds a constant to" : "multiplies") +
                " a flattened image (N, C*H*W); only one value per channel of an image or (N, C) is supported");
  const onnx::TensorProto& k = need_const(n, 1 - vi, "scale");
  std::vector<float> s = floats_of(k, path_ + ": node '" + node_name(n) + "'");
  if (reciprocal)
    for (float& x : s) {
      if (x == 0.f || !std::isfinite(1.f / x)) fail(n, "divides by a constant holding 0 or a value too close to it");
      x = 1.f / x;
    }
  // The channel axis counted from the last: NCHW images 2, (N, C), channels-last and tokens 0.
  const int64_t from_end = v.flat || v.channels_last || v.tokens ? 0 : 2;
  const std::vector<int64_t> d = dims_of(k);
  const std::vector<int64_t> whole{v.shape[2], v.shape[0], v.shape[1]};
  if (offset && from_end == 2 && v.shape[0] * v.shape[1] > 1 &&
      (d == whole || d == std::vector<int64_t>{1, whole[0], whole[1], whole[2]}))
    return image_position_table(n, v, s);
  // A (1, H*W, C) table added to the image flattened channels-last to its pixels (XCiT's Fourier
  // position encoding, folded to a constant): positionEmbedding of the pixels, in row order.
  if (offset && v.channels_last && v.shape[0] * v.shape[1] > 1 &&
      (d == std::vector<int64_t>{1, whole[1] * whole[2], whole[0]} ||
       d == std::vector<int64_t>{whole[1] * whole[2], whole[0]}))
    return add_position_table(n, v, s);
  // A (1, windows, S, C) table added to an image partitioned into windows (NesT's position
  // embedding of its blocks): the same table of the image's pixels, in row order.
  std::vector<int64_t> blocks;  // that table's shape, where v is so partitioned
  if (auto part = partitions_.find(n.input(vi)); offset && v.channels_last && part != partitions_.end() &&
                                                 !part->second.flat && !part->second.seq && !part->second.grid) {
    const int64_t h = v.shape[0], w = v.shape[1], wh = part->second.wh, ww = part->second.ww;
    blocks = {1, (h / wh) * (w / ww), wh * ww, c};
    if (d == blocks) {
      std::vector<float> t(s.size());
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          const int64_t window = (y / wh) * (w / ww) + x / ww, token = (y % wh) * ww + x % ww;
          std::copy_n(s.begin() + (window * wh * ww + token) * c, c, t.begin() + (y * w + x) * c);
        }
      return add_position_table(n, v, std::move(t));
    }
  }
  bool per_channel = s.size() == 1;
  if (static_cast<int64_t>(s.size()) == c && static_cast<int64_t>(d.size()) > from_end && d.size() <= 4) {
    per_channel = true;
    for (size_t i = 0; i < d.size(); ++i)
      if (d[i] != 1 && static_cast<int64_t>(d.size() - 1 - i) != from_end) per_channel = false;
  }
  if (!per_channel)
    fail(n,
         (offset ? "adds a constant of shape " : "multiplies by a constant of shape ") + dims_str(k) +
             "; supported: one value, or one per channel (" + std::string(from_end == 2 ? "C, 1, 1" : "C") +
             " with C = " + std::to_string(c) + ")" +
             (offset && from_end == 2 ? ", or a position table of the image's shape (1, " + std::to_string(c) + ", " +
                                            std::to_string(v.shape[0]) + ", " + std::to_string(v.shape[1]) + ")"
                                      : std::string()) +
             (blocks.empty() ? std::string() : ", or a position table of its blocks " + ints_str(blocks)));
  if (s.size() == 1) s.assign(static_cast<size_t>(c), s[0]);
  Value out = v;
  if (offset) {
    out.name = scale_channels(n, unique_name(n), v.name, std::vector<float>(static_cast<size_t>(c), 1.f), std::move(s));
    return set_out(n, out);
  }
  if (v.tokens) return fold_token_scale(n, vi, v, s);
  out.name = scale_channels(n, unique_name(n), v.name, std::move(s));
  set_out(n, out);
}

std::string Importer::scale_channels(const onnx::NodeProto& n, const std::string& name, const std::string& input,
                                     std::vector<float> scales, std::vector<float> offsets) {
  const int64_t c = static_cast<int64_t>(scales.size());
  LayerSpec& spec = add_layer("groupedConvolution2d", name, {input});
  set_list(spec, "FilterSize", {1, 1});
  spec.set("NumFiltersPerGroup", "1");
  spec.set("NumGroups", "channel-wise");
  last_layer_op_ = n.op_type();
  const std::string made = spec.name;
  add_param(made, "Weights", Shape{c, 1, 1, 1}, std::move(scales));
  if (offsets.empty()) offsets.assign(static_cast<size_t>(c), 0.f);
  add_param(made, "Bias", Shape{c}, std::move(offsets));
  return made;
}

// Sub of two computed images: the second scaled by -1 channel by channel (a 1x1 channel-wise
// groupedConvolution2d, as a constant scale is), then the addition layer of the two.
void Importer::subtract(const onnx::NodeProto& n) {
  const Value a = value(n, 0, false, false, true), b = value(n, 1, false, false, true);
  if (a.tokens || b.tokens || a.flat != b.flat || a.channels_last != b.channels_last || !(a.shape == b.shape))
    fail(n, "subtracts values of different shapes or layouts (" + a.shape.str() + ", " + b.shape.str() +
                "); dltrain reads Sub of two computed values only for images of the same shape");
  const std::string neg_name =
      scale_channels(n, unique_name(n) + "_negated", b.name, std::vector<float>(static_cast<size_t>(b.shape[2]), -1.f));
  LayerSpec& sum = add_layer("addition", unique_name(n), {a.name, neg_name});
  Value out = a;
  out.name = sum.name;
  set_out(n, out);
}

// Pow(value, 2) (timm's StarReLU, relu(x) ** 2): the multiplication layer of the value by itself.
void Importer::square(const onnx::NodeProto& n) {
  const Value v = value(n, 0, false, false, true);
  const std::vector<float> e = need_floats(n, 1, "exponent");
  if (e.size() != 1 || e[0] != 2.f)
    fail(n, "raises a computed value to the power " +
                (e.size() == 1 ? onnx_number(e[0]) : "of a " + dims_str(need_const(n, 1, "exponent")) + " constant") +
                "; dltrain reads only its square (an exponent of one value, 2)");
  if (v.tokens) fail(n, "squares a token sequence; dltrain reads the square of an image or (N, C) value only");
  LayerSpec& s = add_layer("multiplication", unique_name(n), {v.name, v.name});
  s.set("NumInputs", "2");
  last_layer_op_ = n.op_type();
  Value out = v;
  out.name = s.name;
  set_out(n, out);
}

// A per-channel scale of the tokens a fullyConnected or selfAttention layer makes (DeiT III's and
// CaiT's LayerScale, gamma * x after the output projection): folded into that layer's output
// weights and bias, when nothing else reads the layer's output (the ONNX values that name it are
// read only by this node and by nodes whose outputs name it too, such as its bias Add).
void Importer::fold_token_scale(const onnx::NodeProto& n, int vi, const Value& v, const std::vector<float>& s) {
  const LayerSpec* layer = nullptr;
  for (const LayerSpec& l : m_.network.layers)
    if (l.name == v.name) layer = &l;
  const bool fc = layer && layer->type == "fullyConnected", attention = layer && layer->type == "selfAttention";
  std::set<std::string> aliases;
  for (const auto& [onnx_name, value] : values_)
    if (value.name == v.name) aliases.insert(onnx_name);
  bool alone = true;
  for (const std::string& a : aliases)
    for (int k : consumers_of(a)) {
      const onnx::NodeProto& c = g_.node(k);
      bool aliasing = c.output_size() > 0;
      for (const auto& out : c.output()) aliasing = aliasing && aliases.count(out);
      if (&c != &n && !aliasing) alone = false;
    }
  if (!(fc || attention) || !alone) {
    // ... otherwise (XCiT's LayerScale of a concatenation) a channel-wise 1x1 groupedConvolution2d
    // on the tokens, as on an image
    Value out = v;
    out.name = scale_channels(n, unique_name(n), v.name, s);
    return set_out(n, out);
  }
  const std::string weights = fc ? "Weights" : "OutputWeights", bias = fc ? "Bias" : "OutputBias";
  for (NamedTensor& p : m_.params) {
    if (p.layer != v.name || (p.name != weights && p.name != bias)) continue;
    const size_t per_row = p.data.size() / s.size();
    for (size_t i = 0; i < p.data.size(); ++i) p.data[i] *= s[i / per_row];
  }
  set_out(n, value(n, vi, false, false, true));
}

}  // namespace dlt::onnx_detail
