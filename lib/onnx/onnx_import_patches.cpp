// MobileViT v2 (timm's MobileVitV2Block): the unfold of an NCHW image into (1, C, P, N) (P = ph pw
// offsets inside the patches, N = (H/ph)(W/pw) patches), the transformer on it, the fold back.
// The unfolded patches are the image itself in dltrain: pixel (a ph + i, b pw + j) is patch
// a (W/pw) + b at offset i pw + j. What reads every pixel alike (1x1 Conv, the GroupNorm of one
// group (a LayerNormalization over axis 1 after onnx_rewrite.cpp), Add, Mul, activations) reads
// them as the image; timm's LinearSelfAttention (Split of the joint projection into [1, C, C],
// the query's Softmax over the patches, Mul, ReduceSum, Relu, Mul) is one separableAttention
// layer with the patch. Anything else that reads them stops the import naming the node.
#include <algorithm>
#include <string>
#include <vector>

#include "onnx/onnx_importer.h"

namespace dlt::onnx_detail {

namespace {

// Operators that compute each value from the same position of their inputs (or of a constant
// broadcast over the pixels).
bool per_value(const std::string& op) {
  static const std::vector<std::string> ops = {
      "Add",       "Sub",  "Mul", "Div",  "Sigmoid",  "Relu", "LeakyRelu", "Tanh",    "Erf", "Gelu", "HardSigmoid",
      "HardSwish", "Clip", "Elu", "Selu", "Softplus", "Mish", "Identity",  "Dropout", "Neg", "Cast", "Swish"};
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

}  // namespace

std::optional<Importer::PatchGrid> Importer::patch_grid_of_inputs(const onnx::NodeProto& n) {
  std::optional<PatchGrid> grid;
  for (int i = 0; i < n.input_size(); ++i)
    if (auto it = patch_grids_.find(n.input(i)); it != patch_grids_.end()) {
      if (grid && (grid->ph != it->second.ph || grid->pw != it->second.pw))
        fail(n, "reads MobileViT v2's patches of two patch sizes");
      grid = it->second;
    }
  if (!grid) return grid;
  const std::string& op = n.op_type();
  if (op == "Split" || op == "Shape" || op == "Reshape") return grid;  // patch_node's
  if (op == "Conv") {
    const auto k = attr_ints(n, "kernel_shape", {});
    const auto s = attr_ints(n, "strides", {1, 1}), p = attr_ints(n, "pads", {0, 0, 0, 0});
    std::vector<int64_t> wd;
    if (n.input_size() > 1 && constant(n.input(1))) wd = dims_of(*constant(n.input(1)));
    const bool one = wd.size() == 4 && wd[2] == 1 && wd[3] == 1 && (k.empty() || k == std::vector<int64_t>{1, 1});
    auto ones = [](const std::vector<int64_t>& v, int64_t want) {
      return std::all_of(v.begin(), v.end(), [want](int64_t x) { return x == want; });
    };
    if (one && ones(s, 1) && ones(p, 0)) return grid;
    fail(n,
         "convolves MobileViT v2's unfolded patches with a kernel other than 1x1 (stride 1, no padding); the "
         "pixels of a patch are not neighbours there");
  }
  if (op == "LayerNormalization") {
    const int64_t axis = attr_int(n, "axis", -1);
    if (axis == 1 || axis == -3) return grid;
    fail(n, "normalizes MobileViT v2's unfolded patches over axis " + std::to_string(axis) +
                "; dltrain reads them only normalized over (C, P, N) (GroupNorm of one group: axis 1)");
  }
  if (op == "GroupNormalization" || op == "InstanceNormalization" || op == "BatchNormalization") return grid;
  if (per_value(op)) {
    for (int i = 0; i < n.input_size(); ++i) {
      if (n.input(i).empty() || patch_grids_.count(n.input(i))) continue;
      if (op == "Clip" && i > 0) continue;
      if (const onnx::TensorProto* t = constant(n.input(i))) {
        // a scalar, one value per channel (C, 1, 1) or (1, C, 1, 1): the same at every pixel
        const std::vector<int64_t> d = dims_of(*t);
        const bool spread =
            d.size() <= 1 ? product(d) == 1 : d.size() <= 4 && d[d.size() - 1] == 1 && d[d.size() - 2] == 1;
        if (spread) continue;
        fail(n, "combines MobileViT v2's unfolded patches with a constant of shape " + ints_str(d) +
                    "; dltrain reads only constants that are the same at every pixel (a scalar or one per channel)");
      }
      fail(n, "combines MobileViT v2's unfolded patches with '" + n.input(i) +
                  "', which is not unfolded; dltrain reads them only with other patches of the same unfold or "
                  "constants");
    }
    return grid;
  }
  fail(n,
       "reads MobileViT v2's unfolded patches (1, C, P, N); dltrain reads them only in per-pixel operators (1x1 "
       "Conv, normalization over (C, P, N), Add, Mul, activations), timm's LinearSelfAttention and the fold "
       "(Reshape (1, C, ph, pw, H/ph, W/pw), Transpose (0, 1, 4, 2, 5, 3), Reshape (1, C, H, W))");
}

bool Importer::patch_node(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (n.input_size() < 1) return false;
  const std::string& x = n.input(0);
  const std::string what = path_ + ": node '" + node_name(n) + "'";
  auto perm_is = [&](std::vector<int64_t> p) { return op == "Transpose" && attr_ints(n, "perm", {}) == p; };
  const int64_t one = exported_batch_ == 1 ? 1 : kBatchDim;
  // the unfold's 6-D split (MaxViT's form, maxvit_node) transposed to (1, C, ph, pw, H/ph, W/pw)
  if (auto sp = splits_.find(x);
      sp != splits_.end() && sp->second.stage == ImageSplit::kSplit && perm_is({0, 1, 3, 5, 2, 4})) {
    patch_steps_[define(n)] = PatchStep{sp->second.image, sp->second.b, sp->second.d, false};
    return true;
  }
  if (auto st = patch_steps_.find(x); st != patch_steps_.end()) {
    const PatchStep s = st->second;
    const int64_t h = s.image.shape[0], w = s.image.shape[1], c = s.image.shape[2];
    if (op == "Shape") {
      set_ints(n, shape_slice({one, c, s.ph, s.pw, h / s.ph, w / s.pw}, attr_int(n, "start", 0),
                              attr_int(n, "end", INT64_MAX)));
      return true;
    }
    if (!s.fold && op == "Reshape" && n.input_size() > 1 && constant(n.input(1))) {
      const auto t = ints_of(need_const(n, 1, "shape"), what);
      const int64_t P = s.ph * s.pw, N = (h / s.ph) * (w / s.pw);
      const int unknown = (t.size() == 4 && t[2] == -1) + (t.size() == 4 && t[3] == -1);
      if (t.size() == 4 && one_image(t[0]) && (t[1] == c || t[1] == 0) && unknown <= 1 && (t[2] == P || t[2] == -1) &&
          (t[3] == N || t[3] == -1)) {
        set_out(n, s.image);
        patch_grids_[n.output(0)] = PatchGrid{s.ph, s.pw};
        return true;
      }
    }
    if (s.fold && perm_is({0, 1, 4, 2, 5, 3})) {  // back to MaxViT's split (1, C, H/ph, ph, W/pw, pw)
      splits_[define(n)] = ImageSplit{s.image, h / s.ph, s.ph, w / s.pw, s.pw, ImageSplit::kSplit};
      return true;
    }
    fail(n, std::string("reads MobileViT v2's patches on their way ") + (s.fold ? "out of" : "into") +
                " the unfold; dltrain reads the unfold as Reshape (1, C, H/ph, ph, W/pw, pw), Transpose (0, 1, 3, 5, "
                "2, 4), Reshape (1, C, P, N) and the fold as Reshape (1, C, ph, pw, H/ph, W/pw), Transpose (0, 1, 4, "
                "2, 5, 3), Reshape (1, C, H, W)");
  }
  if (separable_node(n)) return true;
  auto g = patch_grids_.find(x);
  if (g == patch_grids_.end()) return false;
  const PatchGrid grid = g->second;
  const Value& v = values_.at(x);
  const int64_t h = v.shape[0], w = v.shape[1], c = v.shape[2], P = grid.ph * grid.pw,
                N = (h / grid.ph) * (w / grid.pw);
  if (op == "Shape") {
    set_ints(n, shape_slice({one, c, P, N}, attr_int(n, "start", 0), attr_int(n, "end", INT64_MAX)));
    return true;
  }
  if (op == "Reshape") {  // the fold's first step
    const auto t =
        n.input_size() > 1 && constant(n.input(1)) ? ints_of(need_const(n, 1, "shape"), what) : std::vector<int64_t>{};
    if (t.size() == 6 && one_image(t[0]) && t[1] == c && t[2] == grid.ph && t[3] == grid.pw && t[4] == h / grid.ph &&
        t[5] == w / grid.pw) {
      patch_steps_[define(n)] = PatchStep{v, grid.ph, grid.pw, true};
      return true;
    }
    // the Reshape to (1, C, P, N) again (dynamo's GroupNorm decomposition back to the shape it had)
    if (t.size() == 4 && one_image(t[0]) && t[1] == c && t[2] == P && t[3] == N) {
      set_out(n, v);
      patch_grids_[n.output(0)] = grid;
      return true;
    }
    fail(n, "reshapes MobileViT v2's unfolded patches (1, " + std::to_string(c) + ", " + std::to_string(P) + ", " +
                std::to_string(N) + ") to " + ints_str(t) +
                "; dltrain reads only the fold (Reshape (1, C, ph, pw, "
                "H/ph, W/pw), Transpose (0, 1, 4, 2, 5, 3), Reshape (1, C, H, W))");
  }
  if (op == "Split") {
    const int64_t axis = attr_int(n, "axis", 0);
    std::vector<int64_t> sizes = n.input_size() > 1 && !n.input(1).empty() ? ints_of(need_const(n, 1, "split"), what)
                                                                           : attr_ints(n, "split", {});
    const int64_t k = (c - 1) / 2;
    if ((axis != 1 && axis != -3) || n.output_size() != 3 || c % 2 == 0 || sizes != std::vector<int64_t>{1, k, k})
      fail(n, "splits MobileViT v2's unfolded patches; dltrain reads only the separable attention's Split of its " +
                  std::to_string(c) + " channels into [1, C, C] along axis 1 (a query, C keys, C values)");
    const SeparablePart::Role roles[3] = {SeparablePart::kQuery, SeparablePart::kKeys, SeparablePart::kValues};
    for (int i = 0; i < 3; ++i) separable_[define(n, i)] = SeparablePart{roles[i], v, grid};
    return true;
  }
  return false;
}

bool Importer::separable_node(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  auto part = [&](int i) -> const SeparablePart* {
    if (n.input_size() <= i) return nullptr;
    auto it = separable_.find(n.input(i));
    return it == separable_.end() ? nullptr : &it->second;
  };
  const SeparablePart* a = part(0);
  const SeparablePart* b = part(1);
  if (!a && !b) return false;
  const std::string what = path_ + ": node '" + node_name(n) + "'";
  auto next = [&](const SeparablePart& from, SeparablePart::Role role) {
    SeparablePart out = from;
    out.role = role;
    separable_[define(n)] = out;
    return true;
  };
  auto last_axis = [&](const std::vector<int64_t>& axes) {
    return axes.size() == 1 && (axes[0] == -1 || axes[0] == 3);
  };
  const int64_t k = a ? (a->qkv.shape[2] - 1) / 2 : 0;
  if (a && !b && op == "Softmax" && a->role == SeparablePart::kQuery && last_axis({attr_int(n, "axis", -1)}))
    return next(*a, SeparablePart::kScores);
  if (a && !b && op == "Relu" && a->role == SeparablePart::kValues) return next(*a, SeparablePart::kRelu);
  if (a && !b && op == "Shape") {
    const int64_t h = a->qkv.shape[0], w = a->qkv.shape[1];
    const int64_t ch = a->role == SeparablePart::kQuery || a->role == SeparablePart::kScores ? 1 : k;
    const int64_t P = a->grid.ph * a->grid.pw, N = (h / a->grid.ph) * (w / a->grid.pw);
    const int64_t last = a->role == SeparablePart::kContext ? 1 : N;
    set_ints(n, shape_slice({exported_batch_ == 1 ? 1 : kBatchDim, ch, P, last}, attr_int(n, "start", 0),
                            attr_int(n, "end", INT64_MAX)));
    return true;
  }
  if (a && !b && op == "ReduceSum" && a->role == SeparablePart::kWeighted && attr_int(n, "keepdims", 1) == 1) {
    const std::vector<int64_t> axes =
        n.input_size() > 1 && !n.input(1).empty() ? ints_of(need_const(n, 1, "axes"), what) : attr_ints(n, "axes", {});
    if (last_axis(axes)) return next(*a, SeparablePart::kContext);
  }
  if (a && !b && op == "Expand" && a->role == SeparablePart::kContext && n.input_size() > 1 &&
      constant(n.input(1))) {  // to the values' shape: the product broadcasts it the same
    const auto t = ints_of(need_const(n, 1, "shape"), what);
    const int64_t h = a->qkv.shape[0], w = a->qkv.shape[1];
    if (t.size() == 4 && one_image(t[0]) && t[1] == k && t[2] == a->grid.ph * a->grid.pw &&
        t[3] == (h / a->grid.ph) * (w / a->grid.pw)) {
      SeparablePart out = *a;
      separable_[define(n)] = out;  // still the context
      return true;
    }
  }
  if (op == "Mul" && a && b && n.input_size() == 2) {
    const SeparablePart* roles[2] = {a, b};
    auto has = [&](SeparablePart::Role r) { return roles[0]->role == r || roles[1]->role == r; };
    const bool same = a->qkv.name == b->qkv.name;
    if (same && has(SeparablePart::kKeys) && has(SeparablePart::kScores)) return next(*a, SeparablePart::kWeighted);
    if (same && has(SeparablePart::kRelu) && has(SeparablePart::kContext)) {
      const Value& qkv = a->qkv;
      LayerSpec& s = add_layer("separableAttention", unique_name(n), {qkv.name});
      set_list(s, "PatchSize", {a->grid.ph, a->grid.pw});
      last_layer_op_ = op;
      set_out(n, Value{s.name, Shape{qkv.shape[0], qkv.shape[1], k}, false});
      patch_grids_[n.output(0)] = a->grid;
      return true;
    }
  }
  fail(n,
       "reads MobileViT v2's separable self-attention out of order; dltrain reads timm's LinearSelfAttention: "
       "Split into [1, C, C] along axis 1, Softmax of the query over the patches (axis -1), Mul of the keys by "
       "it, ReduceSum over the patches (keepdims), Relu of the values, Mul of the two (the sum Expanded or "
       "broadcast)");
}

}  // namespace dlt::onnx_detail
