// The importer's Swin Transformer and MaxViT forms (onnx_importer.h), on channels-last images:
// - torchvision's shifted_window_attention: a zero Pad at the bottom and right, the roll
//   (Slice, Slice, Concat per axis), the window partition (Reshape to (1, H/wh, wh, W/ww, ww, C),
//   Transpose (0, 1, 3, 2, 4, 5), Reshape to (windows, S, C)), the joint Q/K/V projection, the
//   heads (Reshape (windows, S, 3, heads, d), Transpose (2, 0, 3, 1, 4), Gather 0/1/2), the
//   scaled scores with the relative position bias and, shifted, the mask (Add of a constant
//   (heads, S, S); Reshape to (1, windows, heads, S, S), Add of a (windows, 1, S, S) constant,
//   Reshape back), Softmax, times V, the heads side by side, the output projection, the
//   reverse partition, the roll back and the crop: one windowAttention layer. The bias is read
//   back into its table (refused unless every pair of tokens at the same offset has the same
//   bias), the mask checked against the one the layer computes;
//   Swin V2's cosine attention adds F.normalize of Q and K and a per-head factor on the scores
//   (CosineAttention, LogitScale its logarithm);
// - PatchMerging: four Slices of step 2 (offsets (0, 0), (1, 0), (0, 1), (1, 1)) concatenated
//   along the channels: spaceToDepth 2, whose channel order (block 2 i + j) differs from
//   torchvision's (i + 2 j); the LayerNormalization and the MatMul that read it take the
//   permutation into their learnables;
// - MaxViT: an NCHW image partitioned into (1, windows, tokens, C) (Reshape, Transpose, Reshape;
//   the grid's swap) is the same image to the per-token layers on it (node() keeps the
//   partition on their outputs); its attention (the joint projection Split or Sliced into Q, K
//   and V, Einsums) becomes windowAttention at the output projection; the reverse partition
//   gives the image back;
// - timm's forms of the same (docs/transfer.md "timm's transformers and hybrids"): Q/K/V unbound
//   by Slice+Squeeze or Split, windows through (windows, wh, ww, C), the image flattened to
//   (1, H*W, C) for its MLP (a flat Partition), patch merging by Reshape/Transpose (merge_split),
//   MaxViT's Q/K/V unbound along axis 2 and the head-first layout, MobileViT's unfold (a grid
//   Partition of (P, N, C) sequences, unfold_node), CoAtNet's attention over a whole NCHW image
//   (attention2d_start), TinyViT's LayerNormalization inside the attention and its attention
//   over the flattened image.
// Every value in between is tracked by what it is (an ImageView, a WinValue stage, an
// ImageSplit, a Partition, an Unfold); anything else that reads one is refused with the form
// dltrain expects.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>

#include "layers/window_geometry.h"
#include "onnx/onnx_importer.h"

namespace dlt::onnx_detail {

namespace {

using Stage = Importer::WinStage;

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::kSplit:
      return "window split (1, H/wh, wh, W/ww, ww, C), before its Transpose (0, 1, 3, 2, 4, 5) (or (0, 2, 4, 1, 3, "
             "5): grid windows)";
    case Stage::kWindows: return "windows, before their Reshape to (windows, wh*ww, C)";
    case Stage::kTokens: return "window tokens, before the joint Q/K/V MatMul";
    case Stage::kQkv: return "Q/K/V projection, before its bias Add or its Reshape to (windows, S, 3, heads, d)";
    case Stage::kQkv5: return "Q/K/V heads, before their Transpose (2, 0, 3, 1, 4)";
    case Stage::kQkvT: return "transposed Q/K/V heads, before the Gather (or Slice) of Q, K or V";
    case Stage::kQ1:
    case Stage::kK1:
    case Stage::kV1: return "sliced Q, K or V, before its Squeeze";
    case Stage::kConvQkv:
      return "Q/K/V of an image (1, 3 C, H, W), before its Reshape to (1, heads, 3 d, H W) or (1, 3, heads, d, H W)";
    case Stage::kQkvC5:
      return "Q/K/V of an image (1, 3, heads, d, H W), before their Transpose (1, 0, 2, 4, 3)";
    case Stage::kQkvC: return "Q/K/V by head (1, heads, 3 d, H W), before their Split into Q, K and V";
    case Stage::kQc:
    case Stage::kVc: return "queries or values (1, heads, d, H W), before their Transpose (0, 1, 3, 2)";
    case Stage::kHeadsC: return "heads' output (1, heads, d, H W), before its Reshape to (1, C, H, W)";
    case Stage::kQs:
    case Stage::kKs:
    case Stage::kVs: return "Q, K or V split from the head-first Q/K/V, before its Transpose (0, 2, 1, 3)";
    case Stage::kQkvH: return "head-first Q/K/V (windows, S, heads, 3 d), before their Transpose (0, 2, 1, 3)";
    case Stage::kQkvHT: return "head-first Q/K/V (windows, heads, S, 3 d), before their Split into Q, K and V";
    case Stage::kKf: return "keys reshaped to (windows heads, S, d), before their Transpose (0, 2, 1)";
    case Stage::kKft: return "transposed keys (windows heads, d, S), before their Reshape to (windows, heads, d, S)";
    case Stage::kWin4: return "windows (windows, wh, ww, C), before their Reshape to (windows, wh*ww, C)";
    case Stage::kProj4: return "output projection (windows, wh, ww, C), before its Reshape to (1, H/wh, W/ww, wh, ww, C)";
    case Stage::kMerge:
      return "2x2 patches transposed to (1, H/2, W/2, 2, 2, C), before their Reshape to (1, H/2, W/2, 4 C)";
    case Stage::kQ: return "queries, before their scale (Mul) or the MatMul by the transposed keys";
    case Stage::kK: return "keys, before their Transpose (0, 1, 3, 2)";
    case Stage::kKt: return "transposed keys, read by the scores' MatMul";
    case Stage::kV: return "values, read by the MatMul of the probabilities";
    case Stage::kScores:
      return "scores, before the bias Add, the Reshape to (1, windows, heads, S, S) for the mask, or the Softmax";
    case Stage::kScores5: return "scores by window, before the mask Add or the Reshape back to (windows, heads, S, S)";
    case Stage::kProbs: return "attention probabilities, before their MatMul by the values";
    case Stage::kHeads: return "heads' output, before its Transpose (0, 2, 1, 3)";
    case Stage::kHeadsT: return "transposed heads' output, before its Reshape to (windows, S, heads*d)";
    case Stage::kMerged: return "merged heads, before the output projection's MatMul";
    case Stage::kProj: return "output projection, before its bias Add or the Reshape to (1, H/wh, W/ww, wh, ww, C)";
    case Stage::kRev6: return "reversed windows, before their Transpose (0, 1, 3, 2, 4, 5) ((0, 3, 1, 4, 2, 5) for grid)";
    case Stage::kRev: return "reversed windows, before their Reshape to (1, H, W, C)";
    case Stage::kQNorm:
    case Stage::kKNorm: return "norm of the queries or keys, before its Clip, Expand or the Div by it";
    case Stage::kQFlat:
    case Stage::kKFlat:
    case Stage::kVFlat: return "split Q, K or V, before its Reshape to (1, windows, S, heads, d)";
    case Stage::kQ5:
    case Stage::kK5:
    case Stage::kV5: return "Q, K or V heads, before their Transpose (0, 1, 3, 2, 4)";
    case Stage::kHeadsRev6:
      return "merged heads (1, H/wh, W/ww, wh, ww, C), before their Transpose (0, 1, 3, 2, 4, 5)";
    case Stage::kHeadsRev:
      return "merged heads (1, H/wh, wh, W/ww, ww, C), before their Reshape to (1, H, W, C) or (1, H*W, C)";
  }
  return "";
}

bool whole(const Importer::ImageView& v) {
  for (int k = 0; k < 2; ++k)
    if (v.roll[k] != 0 || v.start[k] != 0 || v.step[k] != 1 || v.count[k] != v.full[k]) return false;
  return true;
}

}  // namespace

Importer::ImageView Importer::image_view_of(const onnx::NodeProto& n, int i) {
  if (image_views_.count(n.input(i))) return image_views_.at(n.input(i));
  ImageView v;
  v.src = value(n, i, false, false, true);
  if (!v.src.channels_last) fail(n, "input '" + n.input(i) + "' is not a channels-last image (N, H, W, C)");
  v.full = v.count = {v.src.shape[0], v.src.shape[1]};
  return v;
}

void Importer::set_image_view(const onnx::NodeProto& n, const ImageView& v) {
  bool identity = true;
  for (int k = 0; k < 2; ++k)
    identity = identity && v.roll[k] == 0 && v.start[k] == 0 && v.step[k] == 1 && v.count[k] == v.src.shape[k];
  if (identity) return set_out(n, v.src);
  image_views_[define(n)] = v;
}

Importer::SliceArgs Importer::slice_args(const onnx::NodeProto& n) {
  const std::string what = path_ + ": node '" + node_name(n) + "'";
  SliceArgs a;
  if (opset_ >= 10) {
    a.starts = ints_of(need_const(n, 1, "starts"), what);
    a.ends = ints_of(need_const(n, 2, "ends"), what);
    if (n.input_size() > 3 && !n.input(3).empty()) a.axes = ints_of(need_const(n, 3, "axes"), what);
    if (n.input_size() > 4 && !n.input(4).empty()) a.steps = ints_of(need_const(n, 4, "steps"), what);
  } else {
    a.starts = attr_ints(n, "starts", {});
    a.ends = attr_ints(n, "ends", {});
    a.axes = attr_ints(n, "axes", {});
  }
  if (a.axes.empty())
    for (int64_t i = 0; i < static_cast<int64_t>(a.starts.size()); ++i) a.axes.push_back(i);
  if (a.steps.empty()) a.steps.assign(a.starts.size(), 1);
  if (a.starts.size() != a.ends.size() || a.starts.size() != a.axes.size() || a.starts.size() != a.steps.size())
    fail(n, "has " + std::to_string(a.starts.size()) + " starts, " + std::to_string(a.ends.size()) + " ends, " +
                std::to_string(a.axes.size()) + " axes and " + std::to_string(a.steps.size()) + " steps");
  return a;
}

// GC ViT's global query (onnx_importer.h's GlobalQuery), node by node up to the queries; their
// MatMul by the keys joins a window attention (window_step).
bool Importer::global_query_node(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const std::string what = path_ + ": node '" + node_name(n) + "'";
  auto it = global_q_.find(n.input(0));
  if (it == global_q_.end()) {
    // The start: an Unsqueeze of axis 1 of a channels-last image, read only by Expands or Tiles.
    if (op != "Unsqueeze" || n.output_size() != 1 || image_views_.count(n.input(0))) return false;
    auto v = values_.find(n.input(0));
    if (v == values_.end() || !v->second.channels_last) return false;
    const std::vector<int64_t> axes =
        n.input_size() > 1 && !n.input(1).empty() ? ints_of(need_const(n, 1, "axes"), what) : attr_ints(n, "axes", {});
    const std::vector<int>& readers = consumers_of(n.output(0));
    if (axes != std::vector<int64_t>{1} || readers.empty() || !std::all_of(readers.begin(), readers.end(), [&](int k) {
          return g_.node(k).op_type() == "Expand" || g_.node(k).op_type() == "Tile";
        }))
      return false;
    GlobalQuery q;
    q.image = v->second;
    global_q_[define(n)] = q;
    return true;
  }
  GlobalQuery q = it->second;
  if (op == "MatMul" && q.stage == GlobalQuery::kQueries) return false;  // by the keys: window_step's
  const int64_t wh = q.image.shape[0], ww = q.image.shape[1], c = q.image.shape[2], seq = wh * ww;
  auto refuse = [&](const std::string& want) {
    fail(n, "reads GC ViT's global query (a " + q.image.shape.str() + " image copied to the windows); dltrain reads " +
                want);
  };
  if (op == "Shape") {
    std::vector<int64_t> dims;
    switch (q.stage) {
      case GlobalQuery::kUnsqueezed:
        dims = {1, 1, wh, ww, c};
        break;
      case GlobalQuery::kCopies:
        dims = {1, q.windows, wh, ww, c};
        break;
      case GlobalQuery::kWindows:
        dims = {q.windows, wh, ww, c};
        break;
      case GlobalQuery::kHeads:
        dims = {q.windows, seq, q.heads, q.d};
        break;
      case GlobalQuery::kQueries:
        dims = {q.windows, q.heads, seq, q.d};
        break;
    }
    set_ints(n, shape_slice(dims, attr_int(n, "start", 0), attr_int(n, "end", INT64_MAX)));
    return true;
  }
  switch (q.stage) {
    case GlobalQuery::kUnsqueezed: {  // Expand (1, windows, 1 or wh, 1 or ww, 1 or C), Tile (1, windows, 1, 1, 1)
      if (op != "Expand" && op != "Tile") refuse("its copies by Expand or Tile");
      const std::vector<int64_t> t = ints_of(need_const(n, 1, op == "Expand" ? "shape" : "repeats"), what);
      bool ok = t.size() == 5 && t[0] == 1 && t[1] >= 1;
      const int64_t full[3] = {wh, ww, c};
      for (size_t k = 0; ok && k < 3; ++k) ok = t[2 + k] == 1 || (op == "Expand" && t[2 + k] == full[k]);
      if (!ok) refuse("one copy per window along axis 1: " + op + " by (1, windows, 1, 1, 1), not " + ints_str(t));
      q.windows = t[1];
      q.stage = GlobalQuery::kCopies;
      break;
    }
    case GlobalQuery::kCopies:
    case GlobalQuery::kWindows: {
      if (op != "Reshape") refuse("the copies reshaped to (windows, S, heads, d)");
      std::vector<int64_t> t = ints_of(need_const(n, 1, "shape"), what);
      const bool windows = t.size() == 4 && (t[0] == q.windows || t[0] == -1);
      if (windows && q.stage == GlobalQuery::kCopies && t[1] == wh && t[2] == ww && (t[3] == c || t[3] == -1)) {
        q.stage = GlobalQuery::kWindows;  // TorchScript's (windows, wh, ww, C) first
        break;
      }
      if (windows && t[3] == -1 && t[2] >= 1 && c % t[2] == 0) t[3] = c / t[2];
      if (!windows || t[1] != seq || t[2] < 1 || !times_is(t[2], t[3], c))
        refuse("the copies reshaped to (" + std::to_string(q.windows) + ", " + std::to_string(seq) +
               ", heads, d), not " + ints_str(t));
      q.heads = t[2];
      q.d = t[3];
      q.stage = GlobalQuery::kHeads;
      break;
    }
    case GlobalQuery::kHeads:
      if (op != "Transpose" || attr_ints(n, "perm", {}) != std::vector<int64_t>{0, 2, 1, 3})
        refuse("the heads transposed (0, 2, 1, 3)");
      q.stage = GlobalQuery::kQueries;
      break;
    case GlobalQuery::kQueries: {
      const onnx::TensorProto* t = op == "Mul" && n.input_size() == 2 ? constant(n.input(1)) : nullptr;
      const std::vector<float> f = t ? floats_of(*t, what) : std::vector<float>{};
      if (f.size() != 1)
        refuse("the queries scaled by one constant, then their MatMul by the window's transposed keys");
      q.scale *= f[0];
      break;
    }
  }
  global_q_[define(n)] = q;
  return true;
}

bool Importer::window_node(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (n.input_size() == 0) return false;
  if (global_query_node(n)) return true;
  for (int i = 0; i < n.input_size(); ++i) {
    auto it = win_.find(n.input(i));
    if (it == win_.end()) continue;
    // MaxViT's attention ends at its output projection: anything but the projection's bias
    // reads the windowAttention layer's output, in the partition of its input.
    const WindowBlock& b = blocks_[it->second.block];
    const bool bias = op == "Add" && n.input_size() == 2 && constant(n.input(1 - i));
    if (b.ends_at_projection() && it->second.stage == Stage::kProj && !bias) {
      maxvit_close(n, n.input(i));
      break;
    }
    window_step(n, it->second);
    return true;
  }
  // A subsampled image (LeViT's queries) read by anything but the image views' own readers.
  if (const std::string& x = n.input(0); image_views_.count(x) && !values_.count(x) && op != "Pad" && op != "Slice" &&
                                         op != "Concat" &&
                                         !(op == "Reshape" && n.input_size() > 1 && constant(n.input(1)) &&
                                           dims_of(*constant(n.input(1))) == std::vector<int64_t>{6}))
    subsample(n, x);
  if (unfold_node(n)) return true;
  if (attention2d_start(n)) return true;
  if (maxvit_node(n)) return true;
  if (op == "Concat") {
    for (int i = 0; i < n.input_size(); ++i)
      if (image_views_.count(n.input(i))) {
        image_concat(n);
        return true;
      }
  }
  const std::string& x = n.input(0);
  auto it = values_.find(x);
  const bool cl = it != values_.end() && it->second.channels_last && it->second.shape[0] * it->second.shape[1] > 1;
  if (image_views_.count(x) || cl) {
    // A Concat or Slice along the channels of whole channels-last values (MambaOut's gate): the
    // layers' own readers (depthConcatenation, channelSlice) take the channel axis.
    auto channel_axes = [&](const std::vector<int64_t>& axes) {
      return !axes.empty() && std::all_of(axes.begin(), axes.end(), [](int64_t a) { return a == 3 || a == -1; });
    };
    if (!image_views_.count(x) && op == "Concat" && channel_axes({attr_int(n, "axis", 0)})) return false;
    if (!image_views_.count(x) && op == "Slice" && channel_axes(slice_args(n).axes)) return false;
    if (op == "Pad") return image_pad(n, image_view_of(n, 0)), true;
    if (op == "Slice") return image_slice(n, image_view_of(n, 0)), true;
    if (op == "Reshape" && n.input_size() > 1 && constant(n.input(1)) &&
        dims_of(*constant(n.input(1))) == std::vector<int64_t>{6})
      return window_split(n, image_view_of(n, 0)), true;
    if (op == "Concat") return image_concat(n), true;
  }
  if (it != values_.end() && channel_perm_.count(x) && (op == "LayerNormalization" || op == "MatMul")) {
    permuted_read(n, *layer_type_for_onnx(op));
    return true;
  }
  return false;
}

// ---- MaxViT: its partition of NCHW images into (1, windows, tokens, C), the per-token layers
// on them (node(): the outputs keep the partition), the grid swap, the attention's start and end.

const Importer::Partition* Importer::partition_of_inputs(const onnx::NodeProto& n) {
  // A Concat reads a flattened image's pixels as a token sequence (PiT's class token in front of
  // them, token_node): its output is no longer that image.
  if (n.op_type() == "Concat")
    for (int i = 0; i < n.input_size(); ++i)
      if (auto it = partitions_.find(n.input(i)); it != partitions_.end() && it->second.flat) return nullptr;
  const Partition* p = nullptr;
  bool untagged = false;
  for (int i = 0; i < n.input_size(); ++i) {
    // A constant, or a window attention still being read (its projection, MaxViT's residual Add).
    if (n.input(i).empty() || constant(n.input(i)) || win_.count(n.input(i))) continue;
    // A view over a flattened image's pixels (PVT's attention): that image's tokens when read.
    if (auto vw = views_.find(n.input(i));
        vw != views_.end() && sources_[static_cast<size_t>(vw->second.source)].tokens.channels_last)
      continue;
    auto it = partitions_.find(n.input(i));
    if (it == partitions_.end()) {
      untagged = true;
      continue;
    }
    if (p && !(*p == it->second))
      fail(n, "combines MaxViT tokens of two different partitions ('" + n.input(0) + "', '" + n.input(i) + "')");
    p = &it->second;
  }
  if (!p) return nullptr;
  static const std::set<std::string> per_token{"LayerNormalization", "MatMul", "Add",       "Gelu",    "Relu",
                                               "Sigmoid",            "Swish",  "HardSwish", "Mul",     "Dropout",
                                               "Identity",           "Reshape", "Transpose", "Shape",   "Pow"};
  // a flat image's pixels as rows (LeViT): BatchNormalization of them; Flatten to them
  bool rows_op = p && p->flat && (n.op_type() == "BatchNormalization" || n.op_type() == "Flatten");
  if (rows_op && n.op_type() == "BatchNormalization") rows_op = n.input_size() > 0 && rows_.count(n.input(0));
  if (rows_op) return p;
  // The mean or maximum over all tokens of a flat image (EfficientFormer's head) ends its partition.
  const bool flat_mean = p->flat && (n.op_type() == "ReduceMean" || n.op_type() == "ReduceMax");
  if ((!per_token.count(n.op_type()) && !flat_mean) || untagged)
    fail(n, "reads " +
                std::string(p->flat  ? "a channels-last image flattened to (1, H*W, C)"
                            : p->seq ? "MobileViT's unfolded tokens (P, N, C)"
                                     : "MaxViT's partitioned tokens (1, windows, tokens, C)") +
                std::string(untagged ? " together with a value that is not partitioned the same way" : "") +
                "; dltrain reads them only in LayerNormalization, MatMul, Add, the activations, the grid swap and "
                "the reverse partition");
  return p;
}

// The flat partition of the image whose pixels a view input of n reads (none: no such input).
std::optional<Importer::Partition> Importer::flat_view_partition(const onnx::NodeProto& n) const {
  for (int i = 0; i < n.input_size(); ++i)
    if (auto vw = views_.find(n.input(i)); vw != views_.end()) {
      const Value& t = sources_[static_cast<size_t>(vw->second.source)].tokens;
      if (t.channels_last) return Partition{false, t.shape[0], t.shape[1], true};
    }
  return std::nullopt;
}

void Importer::tag_outputs(const onnx::NodeProto& n, const Partition& p) {
  for (const auto& out : n.output()) {
    auto it = values_.find(out);
    if (it != values_.end() && it->second.channels_last && !partitions_.count(out)) partitions_[out] = p;
  }
}

const std::vector<int>& Importer::consumers_of(const std::string& value) {
  if (consumers_.empty())
    for (int k = 0; k < g_.node_size(); ++k)
      for (const auto& in : g_.node(k).input()) consumers_[in].push_back(k);
  static const std::vector<int> none;
  auto it = consumers_.find(value);
  return it == consumers_.end() ? none : it->second;
}

// Whether value goes (through a bias Add) into a Split or Slices: MaxViT's joint Q/K/V
// projection rather than its MLP's.
bool Importer::feeds_split(const std::string& value) {
  for (int k : consumers_of(value)) {
    const onnx::NodeProto& c = g_.node(k);
    if (c.op_type() == "Split" || c.op_type() == "Slice") return true;  // Slice: TorchScript's chunk
    const bool bias = c.op_type() == "Add" && c.input_size() == 2 && (constant(c.input(0)) || constant(c.input(1)));
    if (bias && c.output_size() == 1 && feeds_split(c.output(0))) return true;
  }
  return false;
}

// Whether value goes, through bias Adds, into a Reshape whose target (its node and the ints it
// folds to) want accepts.
template <typename Want>
bool Importer::reshaped_to(const std::string& value, const Want& want) {
  for (int k : consumers_of(value)) {
    const onnx::NodeProto& c = g_.node(k);
    const bool bias = c.op_type() == "Add" && c.input_size() == 2 && (constant(c.input(0)) || constant(c.input(1)));
    if (bias && c.output_size() == 1 && reshaped_to(c.output(0), want)) return true;
    if (c.op_type() == "Reshape" && c.input_size() >= 2 && c.input(0) == value && want(c, ints_ahead(c.input(1))))
      return true;
  }
  return false;
}

// Whether value goes (through a bias Add) into a Reshape to (windows, S, 3, heads, d): an
// attention's joint Q/K/V projection rather than its MLP's (the target a constant, or TorchScript's
// Concat of five with the constant 3 third).
bool Importer::feeds_heads(const std::string& value) {
  return reshaped_to(value, [&](const onnx::NodeProto& r, const std::vector<int64_t>& d) {
    if ((d.size() == 5 && d[2] == 3) || (d.size() == 4 && d[2] >= 1 && (d[3] == -1 || (d[3] > 0 && d[3] % 3 == 0))))
      return true;
    for (const onnx::NodeProto& p : g_.node())  // TorchScript's target: a Concat of five, the third 3
      if (p.output_size() == 1 && p.output(0) == r.input(1) && p.op_type() == "Concat" && p.input_size() == 5 &&
          ints_ahead(p.input(2)) == std::vector<int64_t>{3})
        return true;
    return false;
  });
}

bool Importer::feeds_block_heads(const std::string& value) {
  return reshaped_to(value, [](const onnx::NodeProto&, const std::vector<int64_t>& d) {
    return d.size() == 6 && one_image(d[0]) && d[3] == 3;
  });
}

// Whether value (a patch embedding's tokens) is reshaped back into its image, after
// LayerNormalization at most: (1, h, w, c) (Twins' locally-grouped attention, which splits the
// image into windows) or, transposed (0, 2, 1), (1, c, h, w) (its global sub-sampled attention's
// strided Conv). The target a constant, or TorchScript's Concat of the batch and three constants.
bool Importer::read_as_image(const std::string& value, int64_t h, int64_t w, int64_t c) {
  auto target = [&](const std::string& name) {
    std::vector<int64_t> t = ints_ahead(name);
    for (const onnx::NodeProto& p : g_.node())
      if (t.empty() && p.output_size() == 1 && p.output(0) == name && p.op_type() == "Concat" && p.input_size() == 4) {
        t = {1};
        for (int i = 1; i < 4; ++i) {
          const std::vector<int64_t> part = ints_ahead(p.input(i));
          if (part.size() != 1) return std::vector<int64_t>{};
          t.push_back(part[0]);
        }
      }
    return t;
  };
  auto reshaped_to = [&](const std::string& v, const std::vector<int64_t>& want) {
    for (int k : consumers_of(v)) {
      const onnx::NodeProto& r = g_.node(k);
      if (r.op_type() != "Reshape" || r.input_size() < 2 || r.input(0) != v) continue;
      const std::vector<int64_t> t = target(r.input(1));
      if (t.size() == 4 && one_image(t[0]) && std::equal(t.begin() + 1, t.end(), want.begin())) return true;
    }
    return false;
  };
  if (reshaped_to(value, {h, w, c})) return true;
  for (int k : consumers_of(value)) {
    const onnx::NodeProto& r = g_.node(k);
    if (r.input_size() < 1 || r.input(0) != value || r.output_size() < 1) continue;
    if (r.op_type() == "LayerNormalization" && read_as_image(r.output(0), h, w, c)) return true;
    if (r.op_type() == "Transpose" && attr_ints(r, "perm", {}) == std::vector<int64_t>{0, 2, 1} &&
        reshaped_to(r.output(0), {c, h, w}))
      return true;
  }
  return false;
}

// Whether value's heads (through a bias Add, Reshapes, Transposes, the unbind and a scale) are
// the first operand of a MatMul after a Transpose of their last two axes (DaViT's k^T v), or are
// transposed from (1, S, 3, heads, d) with the tokens last (XCiT's (3, 1, heads, d, S)): Q^T K,
// attention across the channels, read by the views (onnx_import_attention.cpp), not as windows.
bool Importer::channel_heads(const std::string& value) {
  std::vector<std::string> todo{value};
  for (size_t i = 0; i < todo.size() && i < 64; ++i)
    for (int k : consumers_of(todo[i])) {
      const onnx::NodeProto& c = g_.node(k);
      const std::string& op = c.op_type();
      if (op == "Transpose" && c.output_size() == 1) {
        const std::vector<int64_t> p = attr_ints(c, "perm", {});
        if (p.size() == 5 && p.back() == 1) return true;
        bool last_two = p.size() >= 3;
        for (size_t j = 0; j + 2 < p.size() && last_two; ++j) last_two = p[j] == static_cast<int64_t>(j);
        last_two = last_two && p[p.size() - 2] == static_cast<int64_t>(p.size()) - 1 &&
                   p.back() == static_cast<int64_t>(p.size()) - 2;
        if (last_two)
          for (int m : consumers_of(c.output(0)))
            if (g_.node(m).op_type() == "MatMul" && g_.node(m).input(0) == c.output(0) &&
                !constant(g_.node(m).input(1)))
              return true;
      }
      const bool step = op == "Add" || op == "Mul" || op == "Reshape" || op == "Transpose" || op == "Split" ||
                        op == "Slice" || op == "Gather" || op == "Squeeze";
      if (step)
        for (const auto& out : c.output()) todo.push_back(out);
    }
  return false;
}

// Whether value goes (through a bias Add) into a Reshape to `rank` or more dimensions.
bool Importer::feeds_reshape(const std::string& value, size_t rank) {
  for (int k : consumers_of(value)) {
    const onnx::NodeProto& c = g_.node(k);
    const bool bias = c.op_type() == "Add" && c.input_size() == 2 && (constant(c.input(0)) || constant(c.input(1)));
    if (bias && c.output_size() == 1 && feeds_reshape(c.output(0), rank)) return true;
    if (c.op_type() == "Reshape" && c.input_size() == 2 && c.input(0) == value && ints_ahead(c.input(1)).size() >= rank)
      return true;
  }
  return false;
}

// Whether value's heads (through a bias Add, a Reshape and any Transposes) are split into Q, K
// and V by a Split, Slices or Gathers: a joint Q/K/V projection (TinyViT's, EfficientFormer's).
bool Importer::splits_heads(const std::string& value) {
  std::vector<std::string> todo{value};
  for (size_t i = 0; i < todo.size() && i < 16; ++i)
    for (int k : consumers_of(todo[i])) {
      const onnx::NodeProto& c = g_.node(k);
      const std::string& op = c.op_type();
      if (i > 0 && (op == "Split" || op == "Slice" || op == "Gather")) return true;
      const bool bias = op == "Add" && c.input_size() == 2 && (constant(c.input(0)) || constant(c.input(1)));
      if ((bias || op == "Reshape" || op == "Transpose") && c.output_size() == 1) todo.push_back(c.output(0));
    }
  return false;
}

// The integers of a constant ahead of the node being read: an initializer, a constant already
// read, or a Constant node not read yet (TorchScript writes them just before their use); empty
// for a computed value.
std::vector<int64_t> Importer::ints_ahead(const std::string& name) {
  if (const onnx::TensorProto* t = constant(name)) return ints_of(*t, path_);
  for (const onnx::NodeProto& p : g_.node())
    if (p.output_size() == 1 && p.output(0) == name && p.op_type() == "Constant" && p.attribute_size() == 1 &&
        p.attribute(0).has_t())
      return ints_of(p.attribute(0).t(), path_);
  return {};
}

// MobileViT's unfold of an NCHW image and its fold back (Unfold): the image itself to the layers
// between, as (P, N, C) tokens partitioned by grid windows of (H/ph) x (W/pw) tokens (the pixels
// at one offset inside every patch).
bool Importer::unfold_node(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const std::string what = path_ + ": node '" + node_name(n) + "'";
  auto target = [&]() { return ints_of(need_const(n, 1, "shape"), what); };
  auto perm_is = [&](std::vector<int64_t> p) { return op == "Transpose" && attr_ints(n, "perm", {}) == p; };
  const std::string& x = n.input(0);
  auto it = values_.find(x);
  if (op == "Reshape" && it != values_.end() && n.input_size() > 1 && constant(n.input(1))) {
    const Value& v = it->second;
    const bool image = !v.flat && !v.channels_last && !v.tokens && !padded(v) && !v.indices && !partitions_.count(x);
    const auto t = target();
    const int64_t h = v.shape[0], w = v.shape[1], c = v.shape[2];
    if (image && t.size() == 4 && t[1] > 1 && t[3] > 1 && h % t[1] == 0 && w % t[3] == 0 && t[0] == c * (h / t[1]) &&
        t[2] == w / t[3]) {
      unfolds_[define(n)] = Unfold{v, t[1], t[3], 1};
      return true;
    }
  }
  auto u_it = unfolds_.find(x);
  if (u_it == unfolds_.end()) return false;
  const Unfold u = u_it->second;
  const int64_t h = u.image.shape[0], w = u.image.shape[1], c = u.image.shape[2], nh = h / u.ph, nw = w / u.pw;
  const int64_t tokens = nh * nw, windows = u.ph * u.pw;
  auto next = [&](int stage) {
    Unfold out = u;
    out.stage = stage;
    unfolds_[define(n)] = out;
    return true;
  };
  if (op == "Shape") {
    std::vector<int64_t> dims;
    switch (u.stage) {
      case 1: dims = {c * nh, u.ph, nw, u.pw}; break;
      case 2: case 7: dims = {c * nh, nw, u.ph, u.pw}; break;
      case 3: case 6: dims = {1, c, tokens, windows}; break;
      case 4: case 5: dims = {1, windows, tokens, c}; break;
      case 8: dims = {c * nh, u.ph, nw, u.pw}; break;
    }
    set_ints(n, shape_slice(dims, attr_int(n, "start", 0), attr_int(n, "end", INT64_MAX)));
    return true;
  }
  const bool reshape = op == "Reshape";
  const std::vector<int64_t> t = reshape ? target() : std::vector<int64_t>{};
  switch (u.stage) {
    case 1:
    case 7:
      if (perm_is({0, 2, 1, 3})) return next(u.stage + 1);
      break;
    case 2:
      if (reshape && t.size() == 4 && one_image(t[0]) && t[1] == c && t[2] == tokens && t[3] == windows) return next(3);
      break;
    case 3:
    case 5:
      if (perm_is({0, 3, 2, 1})) return next(u.stage + 1);
      break;
    case 4:
      if (reshape && t.size() == 3 && (t[0] == windows || t[0] == -1) && t[1] == tokens && (t[2] == c || t[2] == -1)) {
        Value v = u.image;
        v.channels_last = true;
        set_out(n, v);
        partitions_[n.output(0)] = Partition{true, nh, nw, false, true};
        return true;
      }
      break;
    case 6:
      if (reshape && t.size() == 4 && t[0] == c * nh && t[1] == nw && t[2] == u.ph && t[3] == u.pw) return next(7);
      break;
    case 8:
      if (reshape && t.size() == 4 && one_image(t[0]) && t[1] == c && t[2] == h && t[3] == w) {
        set_out(n, u.image);  // the image again
        return true;
      }
      break;
  }
  fail(n, "reads an image on its way into or out of MobileViT's unfold (step " + std::to_string(u.stage) +
              "); dltrain reads the unfold as Reshape (C H/ph, ph, W/pw, pw), Transpose (0, 2, 1, 3), Reshape (1, C, "
              "N, P), Transpose (0, 3, 2, 1), Reshape (P, N, C) and the fold as Reshape (1, P, N, C), Transpose (0, 3, "
              "2, 1), Reshape (C H/ph, W/pw, ph, pw), Transpose (0, 2, 1, 3), Reshape (1, C, H, W)");
}

// timm's Attention2d (CoAtNet): a 1x1 Conv of an NCHW image into Q/K/V, read by a Reshape to
// (1, heads, 3 d, H W) (each head's Q, K and V side by side), attends over the whole image: a
// windowAttention of one window. The Conv's weights become its projections (head-first, put in
// Q, K, V order at the close as the Reshape's are). Visformer's Reshape is (1, 3, heads, d, H W):
// Q, K and V each of all heads, then a Transpose (1, 0, 2, 4, 3) to ViT's (3, 1, heads, H W, d).
bool Importer::attention2d_start(const onnx::NodeProto& n) {
  if (n.op_type() != "Conv" || n.input_size() < 2 || !constant(n.input(1)) || n.output_size() != 1) return false;
  auto it = values_.find(n.input(0));
  if (it == values_.end()) return false;
  const Value& v = it->second;
  if (v.flat || v.channels_last || v.tokens || padded(v) || v.indices || partitions_.count(n.input(0))) return false;
  const auto d = dims_of(*constant(n.input(1)));
  const int64_t h = v.shape[0], w = v.shape[1], c = v.shape[2];
  if (d.size() != 4 || d[1] != c || d[2] != 1 || d[3] != 1 || attr_int(n, "group", 1) != 1 ||
      attr_ints(n, "strides", {1, 1}) != std::vector<int64_t>{1, 1} ||
      attr_ints(n, "pads", {0, 0, 0, 0}) != std::vector<int64_t>{0, 0, 0, 0} ||
      attr_ints(n, "dilations", {1, 1}) != std::vector<int64_t>{1, 1})
    return false;
  const std::vector<int>& readers = consumers_of(n.output(0));
  if (readers.size() != 1) return false;
  const onnx::NodeProto& r = g_.node(readers[0]);
  if (r.op_type() != "Reshape" || r.input_size() < 2) return false;
  const std::vector<int64_t> t = ints_ahead(r.input(1));
  const int64_t cols = d[0];
  const bool by_head = t.size() == 4 && one_image(t[0]) && t[1] >= 1 && t[2] >= 3 && t[2] % 3 == 0 &&
                       times_is(t[1], t[2], cols) && (t[3] == h * w || t[3] == -1);
  const bool by_part = t.size() == 5 && one_image(t[0]) && t[1] == 3 && t[2] >= 1 && t[3] >= 1 &&
                       3 * t[2] * t[3] == cols && (t[4] == h * w || t[4] == -1);
  if (!by_head && !by_part) return false;
  // CoAtNet's Q, K and V of each head are cut apart next (Split or Slices along axis 2, TorchScript's
  // Shape for their sizes); a head's channels transposed instead are one operand's heads
  // (MobileNetV4's queries: image_heads).
  if (by_head)
    for (int k : consumers_of(r.output(0)))
      if (const std::string& op = g_.node(k).op_type(); op != "Split" && op != "Slice" && op != "Shape") return false;
  WindowBlock b;
  b.in.src = v;
  b.in.full = b.in.count = {h, w};
  b.image2d = true;
  b.wh = h;
  b.ww = w;
  b.windows = 1;
  if (by_head) {
    b.heads = t[1];
    b.head_first = true;  // each head's Q, K and V side by side: their order at the close
    b.head_width = t[2];
    b.head_dim = t[2] / 3;
  } else {
    b.heads = t[2];
    b.head_dim = t[3];
  }
  b.qkv_cols = cols;
  const std::vector<float> wv = need_floats(n, 1, "weight");
  b.qkv_b = n.input_size() > 2 && !n.input(2).empty() ? need_floats(n, 2, "bias")
                                                      : std::vector<float>(static_cast<size_t>(cols), 0.f);
  // (C, cols) as a MatMul reads it
  b.qkv_w.assign(static_cast<size_t>(c * cols), 0.f);
  for (int64_t k = 0; k < cols; ++k)
    for (int64_t r = 0; r < c; ++r) b.qkv_w[static_cast<size_t>(r * cols + k)] = wv[static_cast<size_t>(k * c + r)];
  blocks_.push_back(std::move(b));
  win_[define(n)] = WinValue{blocks_.size() - 1, Stage::kConvQkv};
  return true;
}

bool Importer::maxvit_node(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const std::string& x = n.input(0);
  const std::string what = path_ + ": node '" + node_name(n) + "'";
  auto target = [&]() { return ints_of(need_const(n, 1, "shape"), what); };
  auto perm = [&]() { return attr_ints(n, "perm", {}); };
  // An NCHW image reshaped to (1, C, a, b, c, d): a partition (or a reverse) begins.
  auto it = values_.find(x);
  const bool image = it != values_.end() && !it->second.flat && !it->second.channels_last && !it->second.tokens &&
                     !padded(it->second) && !it->second.indices && !partitions_.count(x);
  if (op == "Reshape" && image && n.input_size() > 1 && constant(n.input(1)) &&
      dims_of(*constant(n.input(1))) == std::vector<int64_t>{6}) {
    const Value& v = it->second;
    const auto t = target();
    const int64_t h = v.shape[0], w = v.shape[1], c = v.shape[2];
    if (!one_image(t[0]) || t[1] != c || t[2] < 1 || t[3] < 1 || t[4] < 1 || t[5] < 1 || !times_is(t[2], t[3], h) ||
        !times_is(t[4], t[5], w))
      fail(n, "reshapes a " + std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w) + " image to " +
                  ints_str(t) + "; dltrain reads 6-D reshapes of an (N, C, H, W) image only as MaxViT's partition "
                  "(1, C, H/p, p, W/p, p)");
    splits_[define(n)] = ImageSplit{v, t[2], t[3], t[4], t[5], ImageSplit::kSplit};
    return true;
  }
  const int64_t one = exported_batch_ == 1 ? 1 : kBatchDim;  // as Shape of a channels-last value
  auto shape_out = [&](const std::vector<int64_t>& dims) {
    set_ints(n, shape_slice(dims, attr_int(n, "start", 0), attr_int(n, "end", INT64_MAX)));
    return true;
  };
  if (splits_.count(x)) {
    const ImageSplit sp = splits_.at(x);
    const int64_t h = sp.image.shape[0], w = sp.image.shape[1], c = sp.image.shape[2];
    if (op == "Shape")
      return shape_out(sp.stage == ImageSplit::kSplit   ? std::vector<int64_t>{one, c, sp.a, sp.b, sp.c, sp.d}
                       : sp.stage == ImageSplit::kDepCl ? std::vector<int64_t>{one, sp.a, sp.b, sp.c, sp.d, c}
                                                        : std::vector<int64_t>{one, sp.a, sp.c, sp.b, sp.d, c});
    if (sp.stage == ImageSplit::kSplit && op == "Transpose" && perm() == std::vector<int64_t>{0, 2, 4, 3, 5, 1}) {
      ImageSplit out = sp;
      out.stage = ImageSplit::kPart;
      splits_[define(n)] = out;
      return true;
    }
    if (sp.stage == ImageSplit::kDep && op == "Transpose" && perm() == std::vector<int64_t>{0, 1, 3, 2, 4, 5}) {
      ImageSplit out = sp;  // NesT's reverse of its blocks: channels-last
      out.stage = ImageSplit::kDepCl;
      splits_[define(n)] = out;
      return true;
    }
    if (sp.stage == ImageSplit::kDepCl && op == "Reshape") {
      const auto t = target();
      if (t.size() == 4 && one_image(t[0]) && t[1] == h && t[2] == w && (t[3] == c || t[3] == -1)) {
        Value img = sp.image;
        img.channels_last = true;
        set_out(n, img);  // the channels-last image again
        return true;
      }
    }
    if (sp.stage == ImageSplit::kDep && op == "Transpose" && perm() == std::vector<int64_t>{0, 5, 1, 3, 2, 4}) {
      ImageSplit out = sp;
      out.stage = ImageSplit::kSplit;
      splits_[define(n)] = out;
      return true;
    }
    if (op == "Reshape" && sp.stage == ImageSplit::kSplit) {
      const auto t = target();
      if (t.size() == 4 && one_image(t[0]) && t[1] == c && t[2] == h && t[3] == w) {
        set_out(n, sp.image);  // the image again
        return true;
      }
      if (t.size() == 6 && one_image(t[0]) && t[1] == c && times_is(t[2], t[3], h) && times_is(t[4], t[5], w) &&
          t[2] > 0 && t[4] > 0) {  // the reverse and the next partition's split in one
        splits_[define(n)] = ImageSplit{sp.image, t[2], t[3], t[4], t[5], ImageSplit::kSplit};
        return true;
      }
    }
    if (op == "Reshape" && sp.stage == ImageSplit::kPart) {
      const auto t = target();
      if (t.size() == 4 && one_image(t[0]) && t[1] == sp.a * sp.c && t[2] == sp.b * sp.d && t[3] == c) {
        Value v = sp.image;
        v.channels_last = true;
        set_out(n, v);
        partitions_[n.output(0)] = Partition{false, sp.b, sp.d};
        return true;
      }
    }
    fail(n,
         "reads a 6-D split of an image; dltrain reads MaxViT's partition (Reshape (1, C, H/p, p, W/p, p), "
         "Transpose (0, 2, 4, 3, 5, 1), Reshape (1, windows, p*p, C)) and its reverse (Reshape (1, H/p, W/p, p, "
         "p, C), Transpose (0, 5, 1, 3, 2, 4), Reshape (1, C, H, W)); NesT's reverse of its blocks (Reshape (1, "
         "H/p, W/p, p, p, C), Transpose (0, 1, 3, 2, 4, 5), Reshape (1, H, W, C))");
  }
  // A channels-last image flattened to one sequence (1, H*W, C) (timm's Swin, around its MLP):
  // the image itself to the per-token layers, until the Reshape back to (1, H, W, C).
  if (op == "Reshape" && it != values_.end() && it->second.channels_last && !partitions_.count(x) &&
      !padded(it->second) && n.input_size() > 1 && constant(n.input(1))) {
    const Value& v = it->second;
    const auto t = target();
    const int64_t h = v.shape[0], w = v.shape[1], c = v.shape[2];
    if (t.size() == 3 && one_image(t[0]) && (t[1] == h * w || t[1] == -1) && (t[2] == c || t[2] == -1)) {
      set_out(n, v);
      partitions_[n.output(0)] = Partition{false, h, w, true};
      return true;
    }
  }
  if (auto fl = flat_nchw_.find(x); fl != flat_nchw_.end()) {
    const Value img = fl->second;
    const int64_t h = img.shape[0], w = img.shape[1], c = img.shape[2];
    if (op == "Shape") return shape_out({one, c, h * w});
    const auto t = op == "Reshape" ? target() : std::vector<int64_t>{};
    if (t.size() != 4 || !one_image(t[0]) || (t[1] != c && t[1] != -1) || t[2] != h || t[3] != w)
      fail(n, "reads an image's flattened tokens transposed to (1, " + std::to_string(c) + ", " + std::to_string(h * w) +
                  "); dltrain reads only their Reshape back to (1, " + std::to_string(c) + ", " + std::to_string(h) +
                  ", " + std::to_string(w) + ")");
    set_out(n, img);
    return true;
  }
  auto pt = partitions_.find(x);
  if (pt == partitions_.end() || it == values_.end()) return false;
  const Partition part = pt->second;
  const Value v = it->second;
  const int64_t h = v.shape[0], w = v.shape[1], c = v.shape[2];
  if (part.seq) {  // MobileViT's (P, N, C): windows (its pixel offsets) of N tokens
    const int64_t windows = (h / part.wh) * (w / part.ww), seq = part.wh * part.ww;
    if (op == "Shape") return shape_out({windows, seq, c});
    if (op == "Reshape") {  // the fold begins: (1, P, N, C)
      const auto t = target();
      if (t.size() != 4 || !one_image(t[0]) || t[1] != windows || t[2] != seq || (t[3] != c && t[3] != -1))
        fail(n, "reshapes MobileViT's unfolded tokens (" + std::to_string(windows) + ", " + std::to_string(seq) + ", " +
                    std::to_string(c) + ") to " + ints_str(t) + "; dltrain reads the fold back, (1, " +
                    std::to_string(windows) + ", " + std::to_string(seq) + ", " + std::to_string(c) + ") first");
      Value img = v;
      img.channels_last = false;
      unfolds_[define(n)] = Unfold{img, h / part.wh, w / part.ww, 5};
      return true;
    }
    if (op == "MatMul" && n.input_size() == 2 && constant(n.input(1)) && feeds_heads(n.output(0))) {
      partition_block(n, v, part, "MobileViT's tokens", "into its heads").seq = true;
      return true;
    }
    if (op == "Transpose")
      fail(n, "transposes MobileViT's unfolded tokens; dltrain reads them only in LayerNormalization, MatMul, Add, "
              "the activations, the attention and the fold back");
    return false;
  }
  if (part.flat) {
    const bool rows = rows_.count(x) != 0;
    if (op == "Shape") return shape_out(rows ? std::vector<int64_t>{h * w, c} : std::vector<int64_t>{one, h * w, c});
    // Its pixels as the rows of (H*W, C) (LeViT's BatchNorm1d over the flattened tokens): the same
    // image; BatchNormalization of those rows normalizes each channel, as batchNormalization does
    // the image's; the Reshape back to (1, H*W, C) is the flattened image again.
    const std::vector<int64_t> t0 = op == "Reshape" ? target() : std::vector<int64_t>{};
    const bool to_rows = (op == "Reshape" && t0.size() == 2 && (t0[0] == h * w || t0[0] == -1) &&
                          (t0[1] == c || t0[1] == -1) && !(t0[0] == -1 && t0[1] == -1)) ||
                         (op == "Flatten" && attr_int(n, "axis", 1) == 2);
    if (!rows && to_rows) {
      set_out(n, v);
      partitions_[n.output(0)] = part;
      rows_.insert(n.output(0));
      return true;
    }
    if (rows && op == "Reshape" && t0.size() == 3 && one_image(t0[0]) && (t0[1] == h * w || t0[1] == -1) &&
        (t0[2] == c || t0[2] == -1)) {
      set_out(n, v);
      partitions_[n.output(0)] = part;
      return true;
    }
    if (rows && op == "BatchNormalization") {
      Value& in = values_.at(x);  // read as the (N, C, H, W) image it is in dltrain's layout
      in.channels_last = false;
      read_layer(*layer_type_for_onnx(op), n);
      in.channels_last = true;
      values_.at(n.output(0)).channels_last = true;
      partitions_[n.output(0)] = part;
      rows_.insert(n.output(0));
      return true;
    }
    if (rows && !(op == "Reshape" && t0.size() >= 4))
      fail(n, "reads a channels-last image's pixels as the rows of (" + std::to_string(h * w) + ", " +
                  std::to_string(c) + "); dltrain reads them only in BatchNormalization and the Reshape back to (1, " +
                  std::to_string(h * w) + ", " + std::to_string(c) + ") or into heads");
    // (1, H*W, heads, d), or (1, -1, heads, d) with heads * d = C
    const bool into_heads = op == "Reshape" && target().size() >= 4 &&
                            (target()[1] == h * w || (target()[1] == -1 && product(target()) == -c)) &&
                            !(target()[1] == h && target()[2] == w);
    if (into_heads) {
      view_reshape(n, view_of(n, 0));  // the pixels as tokens into heads, (1, H*W, heads, d): an attention's operand
      return true;
    }
    if (op == "Reshape") {
      const auto t = target();
      if (t.size() != 4 || !one_image(t[0]) || t[1] != h || t[2] != w || (t[3] != c && t[3] != -1))
        fail(n, "reshapes a channels-last image flattened to (1, " + std::to_string(h * w) + ", " + std::to_string(c) +
                    ") to " + ints_str(t) + "; dltrain reads only the Reshape back to (1, " + std::to_string(h) + ", " +
                    std::to_string(w) + ", " + std::to_string(c) + ")");
      set_out(n, v);  // the channels-last image again
      return true;
    }
    if (op == "ReduceMean" || op == "ReduceMax") {  // over the tokens: over the image's pixels
      token_pool(n, v, true);
      return true;
    }
    if (op == "MatMul" && n.input_size() == 2 && constant(n.input(1)) &&
        ((feeds_reshape(n.output(0), 4) && !(feeds_heads(n.output(0)) && splits_heads(n.output(0)))) ||
         channel_heads(n.output(0)))) {
      // a projection of the pixels as tokens into heads, each of Q, K and V of its own or K and V
      // together (PVT's attention): read as views (onnx_import_attention.cpp) on the image
      view_matmul(n);
      return true;
    }
    if (op == "MatMul" && n.input_size() == 2 && constant(n.input(1)) && feeds_heads(n.output(0))) {
      // an attention over the whole image (TinyViT's stages whose window is the image)
      partition_block(n, v, Partition{false, h, w}, "the flattened image's tokens", "into its heads").flat_tokens = true;
      return true;
    }
    if (op == "Transpose" && attr_ints(n, "perm", {}) == std::vector<int64_t>{0, 2, 1}) {
      Value img = v;  // (1, C, H*W) on the way back to the (1, C, H, W) image (FastViT's attention)
      img.channels_last = false;
      flat_nchw_[define(n)] = img;
      return true;
    }
    if (op == "Transpose" || (op == "MatMul" && feeds_split(n.output(0))))
      fail(n, "reads a channels-last image flattened to (1, H*W, C) by " + op +
                  "; dltrain reads it only in LayerNormalization, MatMul, Add, the activations and the Reshape back");
    return false;
  }
  if (op == "Shape") return shape_out({one, (h / part.wh) * (w / part.ww), part.wh * part.ww, c});
  if (op == "Transpose") {  // the grid swap and back
    if (perm() != std::vector<int64_t>{0, 2, 1, 3})
      fail(n, "transposes MaxViT's partitioned tokens by " + ints_str(perm()) +
                  "; dltrain reads only the grid swap (0, 2, 1, 3)");
    set_out(n, v);
    partitions_[n.output(0)] = Partition{!part.grid, h / part.wh, w / part.ww};
    return true;
  }
  if (op == "Reshape") {  // the reverse of a window partition: (1, H/p, W/p, p, p, C)
    const auto t = target();
    if (part.grid || t.size() != 6 || !one_image(t[0]) || t[1] * part.wh != h || t[2] * part.ww != w ||
        t[3] != part.wh || t[4] != part.ww || t[5] != c)
      fail(n, "reshapes MaxViT's partitioned tokens to " + ints_str(t) +
                  "; dltrain reads the reverse of a window partition, (1, H/p, W/p, p, p, C), after the grid swap "
                  "back");
    Value img = v;
    img.channels_last = false;
    splits_[define(n)] = ImageSplit{img, t[1], t[3], t[2], t[4], ImageSplit::kDep};
    return true;
  }
  if (op == "MatMul" && n.input_size() == 2 && constant(n.input(1)) && feeds_split(n.output(0))) {
    partition_block(n, v, part, "MaxViT's tokens", "into a Split").maxvit = true;
    return true;
  }
  if (op == "MatMul" && n.input_size() == 2 && constant(n.input(1)) && !part.grid && feeds_block_heads(n.output(0))) {
    partition_block(n, v, part, "NesT's blocks", "into its heads").nest = true;
    return true;
  }
  return false;
}

// The joint Q/K/V MatMul of partitioned tokens (MaxViT's, MobileViT's) begins a window attention
// on the image they hold, its windows the partition's.
Importer::WindowBlock& Importer::partition_block(const onnx::NodeProto& n, const Value& v, const Partition& part,
                                                 const std::string& whose, const std::string& into) {
  const int64_t h = v.shape[0], w = v.shape[1], c = v.shape[2];
  const auto d = dims_of(*constant(n.input(1)));
  if (d.size() != 2 || d[0] != c || d[1] < 3)
    fail(n, "projects " + whose + " with a " + ints_str(d) + " weight " + into + "; dltrain reads the joint Q/K/V (" +
                std::to_string(c) + ", 2 K + V)");
  WindowBlock b;
  b.in.src = v;
  b.in.full = b.in.count = {h, w};
  b.grid = part.grid;
  b.wh = part.wh;
  b.ww = part.ww;
  b.windows = (h / part.wh) * (w / part.ww);
  b.qkv_w = need_floats(n, 1, "weight");
  b.qkv_cols = d[1];
  b.qkv_b.assign(static_cast<size_t>(d[1]), 0.f);
  blocks_.push_back(std::move(b));
  win_[define(n)] = WinValue{blocks_.size() - 1, Stage::kQkv};
  return blocks_.back();
}

// The attention read to its output projection: the windowAttention layer takes the place of
// the projection's value, in its input's partition.
void Importer::maxvit_close(const onnx::NodeProto& n, const std::string& proj) {
  const WindowBlock& b = blocks_[win_.at(proj).block];
  Value y = window_emit(n, b);
  win_.erase(proj);
  if (b.image2d) {  // CoAtNet: the NCHW image again
    y.channels_last = false;
    values_[proj] = y;
    return;
  }
  values_[proj] = y;
  if (b.twins) {  // the image, or its pixels as tokens (1, H*W, C)
    if (!b.merged_image) partitions_[proj] = Partition{false, y.shape[0], y.shape[1], true};
    return;
  }
  partitions_[proj] = Partition{b.grid, b.wh, b.ww, b.flat_tokens, b.seq};
}

// Pad (N, H, W, C) with zeros at the bottom and right only.
void Importer::image_pad(const onnx::NodeProto& n, ImageView v) {
  if (attr_string(n, "mode", "constant") != "constant") fail(n, "only constant (zero) padding is supported");
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const std::vector<float> c = need_floats(n, 2, "constant_value");
    if (c.size() != 1 || c[0] != 0.f) fail(n, "only zero padding (one constant_value of 0) is supported");
  }
  if (n.input_size() > 3 && !n.input(3).empty()) fail(n, "Pad's axes input is not supported");
  const std::vector<int64_t> p = n.input_size() > 1
                                     ? ints_of(need_const(n, 1, "pads"), path_ + ": node '" + node_name(n) + "'")
                                     : attr_ints(n, "pads", {});
  if (p.size() != 8 || p[0] || p[1] || p[2] || p[3] || p[4] || p[7] || p[5] < 0 || p[6] < 0)
    fail(n, "pads a channels-last image by " + ints_str(p) +
                "; dltrain reads only zeros at the bottom and right (Swin: [0, 0, 0, 0, 0, bottom, right, 0])");
  if (p[5] == 0 && p[6] == 0) return set_image_view(n, v);  // nothing (timm pads after its roll)
  if (!whole(v) || !v.zero_pad) fail(n, "pads an image that is already padded, rolled or sliced");
  for (int k = 0; k < 2; ++k) {
    if (p[5 + k] > kMaxInputValues) fail(n, "pads by " + std::to_string(p[5 + k]) + " pixels");
    v.full[k] += p[5 + k];
    v.count[k] = v.full[k];
  }
  set_image_view(n, v);
}

// Slice along height and width (steps of 1 or more); the batch and channels stay whole.
void Importer::image_slice(const onnx::NodeProto& n, ImageView v) {
  const SliceArgs a = slice_args(n);
  for (size_t i = 0; i < a.axes.size(); ++i) {
    const int64_t axis = a.axes[i] < 0 ? a.axes[i] + 4 : a.axes[i];
    if (axis != 1 && axis != 2) {
      if ((axis == 0 || axis == 3) && a.starts[i] == 0 && a.ends[i] >= (axis == 0 ? 1 : v.src.shape[2]) &&
          a.steps[i] == 1)
        continue;
      fail(n, "slices axis " + std::to_string(a.axes[i]) +
                  " of a channels-last image; dltrain reads slices of its height and width (axes 1, 2)");
    }
    if (a.steps[i] < 1) fail(n, "slices with step " + std::to_string(a.steps[i]) + "; dltrain reads steps of 1 or more");
    const size_t k = static_cast<size_t>(axis - 1);
    const auto [s, count] = a.range(i, v.count[k]);
    if (count == 0) fail(n, "slices nothing of the image (axis " + std::to_string(axis) + ")");
    v.start[k] += s * v.step[k];
    v.step[k] *= a.steps[i];
    v.count[k] = count;
  }
  set_image_view(n, v);
}

// A channels-last image sliced with steps from its first row and column to its end, neither
// padded nor rolled (LeViT's subsampled queries, x[:, ::2, ::2]), read by a layer: an
// averagePooling2d of 1x1 windows at those strides, a channels-last image. False for any other
// view.
bool Importer::subsample(const onnx::NodeProto& n, const std::string& value) {
  const ImageView& v = image_views_.at(value);
  const std::array<int64_t, 2> hw = v.src_hw();
  for (size_t k = 0; k < 2; ++k)
    if (v.roll[k] != 0 || v.full[k] != hw[k] || v.start[k] != 0 || v.step[k] < 1 ||
        v.count[k] != (hw[k] - 1) / v.step[k] + 1)
      return false;
  Value out = v.src;
  if (v.step[0] > 1 || v.step[1] > 1) {
    onnx::NodeProto named;
    named.set_name(node_name(n) + "_subsample");
    LayerSpec& spec = add_layer("averagePooling2d", unique_name(named), {v.src.name});
    set_list(spec, "PoolSize", {1, 1});
    set_list(spec, "Stride", {v.step[0], v.step[1]});
    last_layer_op_ = "AveragePool";
    out.name = spec.name;
    out.shape = Shape{v.count[0], v.count[1], v.src.shape[2]};
  }
  out.channels_last = true;
  values_[value] = out;
  return true;
}

// Concat of two parts along height or width: a roll (torch.roll(x, -a) is x[a:] then x[:a]);
// of four strided parts along the channels: patch merging.
void Importer::image_concat(const onnx::NodeProto& n) {
  std::vector<ImageView> parts;
  for (int i = 0; i < n.input_size(); ++i) parts.push_back(image_view_of(n, i));
  int64_t axis = attr_int(n, "axis", 0);
  if (axis < 0) axis += 4;
  if (axis == 3 && parts.size() == 4) return patch_merging(n, parts);
  const ImageView &a = parts[0], &b = parts.back();
  if ((axis == 1 || axis == 2) && parts.size() == 2) {
    const size_t k = static_cast<size_t>(axis - 1), o = 1 - k;
    const int64_t len = a.full[k], at = a.start[k];
    const bool same = a.src.name == b.src.name && a.full == b.full && a.roll == b.roll &&
                      a.zero_pad == b.zero_pad && a.start[o] == b.start[o] && a.step[o] == b.step[o] &&
                      a.count[o] == b.count[o];
    if (same && a.step[k] == 1 && b.step[k] == 1 && at > 0 && at + a.count[k] == len && b.start[k] == 0 &&
        b.count[k] == at) {
      ImageView r = a;
      r.start[k] = 0;
      r.count[k] = len;
      r.roll[k] = (a.roll[k] + at) % len;
      return set_image_view(n, r);
    }
  }
  fail(n, "concatenates " + std::to_string(parts.size()) + " parts of a channels-last image along axis " +
              std::to_string(attr_int(n, "axis", 0)) +
              "; dltrain reads a roll (x[a:] then x[:a] along height or width) and patch merging (four "
              "step-2 slices along the channels)");
}

void Importer::patch_merging(const onnx::NodeProto& n, const std::vector<ImageView>& parts) {
  const Value& src = parts[0].src;
  const int64_t h = src.shape[0], w = src.shape[1], c = src.shape[2];
  std::vector<int64_t> perm(static_cast<size_t>(4 * c));
  std::vector<bool> seen(4, false);
  for (size_t b = 0; b < 4; ++b) {
    const ImageView& p = parts[b];
    const int64_t i = p.start[0], j = p.start[1];
    const bool ok = p.src.name == src.name && p.zero_pad && p.roll == std::array<int64_t, 2>{} &&
                    p.step == std::array<int64_t, 2>{2, 2} && i >= 0 && i < 2 && j >= 0 && j < 2 &&
                    p.count[0] == p.full[0] / 2 && p.count[1] == p.full[1] / 2 && !seen[static_cast<size_t>(i * 2 + j)];
    if (!ok)
      fail(n, "concatenates channels of strided slices that are not the four 2x2 offsets of one image (Swin's "
              "patch merging: x[0::2, 0::2], x[1::2, 0::2], x[0::2, 1::2], x[1::2, 1::2])");
    seen[static_cast<size_t>(i * 2 + j)] = true;
    for (int64_t k = 0; k < c; ++k) perm[static_cast<size_t>(static_cast<int64_t>(b) * c + k)] = (i * 2 + j) * c + k;
  }
  if (parts[0].full[0] != h || parts[0].full[1] != w)
    fail(n, "merges the patches of a padded " + std::to_string(h) + "x" + std::to_string(w) +
                " image; dltrain's spaceToDepth needs an even height and width");
  merged_patches(n, src, perm);
}

// spaceToDepth 2 of a channels-last image, perm its ONNX channel order (dltrain's channel of each
// ONNX channel), carried to the layers that read it unless it is dltrain's own.
void Importer::merged_patches(const onnx::NodeProto& n, const Value& src, const std::vector<int64_t>& perm) {
  const int64_t h = src.shape[0], w = src.shape[1], c = src.shape[2];
  LayerSpec& s = add_layer("spaceToDepth", unique_name(n), {src.name});
  s.set("BlockSize", "2");
  last_layer_op_ = n.op_type();
  Value out{s.name, Shape{h / 2, w / 2, 4 * c}, false};
  out.channels_last = true;
  set_out(n, out);
  bool identity = true;
  for (size_t g = 0; g < perm.size(); ++g) identity = identity && perm[g] == static_cast<int64_t>(g);
  if (!identity) channel_perm_[n.output(0)] = perm;
}

// timm's patch merging, a Reshape of the whole image to (1, H/2, 2, W/2, 2, C), Transpose (0, 1,
// 3, 4, 2, 5) (w_first: the patches' blocks by column offset, then row offset, as torchvision's
// four slices) or (0, 1, 3, 2, 4, 5), Reshape to (1, H/2, W/2, 4 C): spaceToDepth 2, its
// channel order carried to the layers that read it as patch_merging's is.
void Importer::merge_split(const onnx::NodeProto& n, const Value& src, bool w_first) {
  const int64_t h = src.shape[0], w = src.shape[1], c = src.shape[2];
  if (h % 2 || w % 2)
    fail(n, "merges the 2x2 patches of a " + std::to_string(h) + "x" + std::to_string(w) +
                " image; dltrain's spaceToDepth needs an even height and width");
  std::vector<int64_t> perm(static_cast<size_t>(4 * c));
  for (int64_t i = 0; i < 2; ++i)  // row offset
    for (int64_t j = 0; j < 2; ++j) {
      const int64_t block = w_first ? j * 2 + i : i * 2 + j;
      for (int64_t k = 0; k < c; ++k) perm[static_cast<size_t>(block * c + k)] = (i * 2 + j) * c + k;
    }
  merged_patches(n, src, perm);
}

// A LayerNormalization over the channels or a MatMul reading patch merging's channels: the
// layer reads dltrain's order, its learnables are permuted to match.
void Importer::permuted_read(const onnx::NodeProto& n, const LayerType& t) {
  const std::vector<int64_t> perm = channel_perm_.at(n.input(0));
  const int64_t c = static_cast<int64_t>(perm.size());
  if (n.op_type() == "LayerNormalization") {
    const int64_t axis = attr_int(n, "axis", -1);
    if (axis != -1 && axis != 3) fail(n, "normalizes patch merging's output over axis " + std::to_string(axis) +
                                             "; dltrain reads its channels in another order: only axis -1 is read");
  }
  perm_ok_ = true;
  read_layer(t, n);
  perm_ok_ = false;
  const std::string layer = m_.network.layers.back().name;
  bool permuted = false;
  for (NamedTensor& p : m_.params) {
    if (p.layer != layer) continue;
    const int64_t rows = static_cast<int64_t>(p.data.size()) / c;
    const bool by_channel = (p.name == "Scale" || p.name == "Offset") && rows == 1;
    if (!by_channel && p.name != "Weights") continue;
    if (rows * c != static_cast<int64_t>(p.data.size())) fail(n, "has learnables that do not match its channels");
    std::vector<float> out(p.data.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < c; ++g)
        out[static_cast<size_t>(r * c + perm[static_cast<size_t>(g)])] = p.data[static_cast<size_t>(r * c + g)];
    p.data = std::move(out);
    permuted = true;
  }
  if (!permuted) fail(n, "reads patch merging's channels but has no per-channel learnables to reorder");
  if (n.op_type() == "LayerNormalization") channel_perm_[n.output(0)] = perm;
}

// Reshape of the whole padded, rolled image to (1, H/wh, wh, W/ww, ww, C): a window attention begins.
void Importer::window_split(const onnx::NodeProto& n, const ImageView& v) {
  const auto t = ints_of(need_const(n, 1, "shape"), path_ + ": node '" + node_name(n) + "'");
  const int64_t c = v.src.shape[2];
  const bool whole_image = v.zero_pad && v.start == std::array<int64_t, 2>{} && v.step == std::array<int64_t, 2>{1, 1} &&
                           v.count == v.full;
  if (!whole_image || !one_image(t[0]) || t[1] < 1 || t[2] < 1 || t[3] < 1 || t[4] < 1 ||
      !times_is(t[1], t[2], v.full[0]) || !times_is(t[3], t[4], v.full[1]) || (t[5] != c && t[5] != -1))
    fail(n, "reshapes a " + std::to_string(v.count[0]) + "x" + std::to_string(v.count[1]) + "x" + std::to_string(c) +
                " channels-last image to " + ints_str(t) +
                "; dltrain reads 6-D reshapes only as Swin's window partition of the whole (padded, rolled) image: "
                "(1, H/wh, wh, W/ww, ww, C)");
  WindowBlock b;
  b.in = v;
  b.wh = t[2];
  b.ww = t[4];
  b.windows = t[1] * t[3];
  blocks_.push_back(std::move(b));
  win_[define(n)] = WinValue{blocks_.size() - 1, Stage::kSplit};
}

void Importer::window_step(const onnx::NodeProto& n, const WinValue& w) {
  const std::string& op = n.op_type();
  WindowBlock& b = blocks_[w.block];
  const int64_t seq = b.wh * b.ww, c = b.in.src.shape[2];
  const std::string what = path_ + ": node '" + node_name(n) + "'";
  auto next = [&](Stage s) { win_[define(n)] = WinValue{w.block, s}; };
  auto refuse = [&]() {
    fail(n, "reads a window attention's " + std::string(stage_name(w.stage)) +
                "; dltrain reads window attention only in torchvision's form (shifted_window_attention)");
  };
  auto target = [&]() { return ints_of(need_const(n, 1, "shape"), what); };
  auto perm_is = [&](std::vector<int64_t> p) { return op == "Transpose" && attr_ints(n, "perm", {}) == p; };
  // The joint Q/K/V MatMul of the window tokens, (windows, S, C) or (windows, wh, ww, C).
  auto qkv_matmul = [&]() {
    const auto d = dims_of(*constant(n.input(1)));
    if (d.size() != 2 || d[0] != c || d[1] < 3)
      fail(n, "projects the window tokens with a " + ints_str(d) + " weight; dltrain reads the joint Q/K/V (" +
                  std::to_string(c) + ", 2 K + V)");
    b.qkv_w = need_floats(n, 1, "weight");
    b.qkv_cols = d[1];
    b.qkv_b.assign(static_cast<size_t>(d[1]), 0.f);
    next(Stage::kQkv);
  };
  // Each head's Q, K and V side by side along `axis` of a 4-D value, d channels each: a Split into
  // three (TorchScript: a Slice of one third); each part on to its stage.
  // Head-first, the parts may be (d, d, dv) of the head's head_width channels: the first split
  // or slice seen sets d and dv, the others must agree.
  auto thirds = [&](int64_t axis, const std::array<Stage, 3>& parts, const std::string& whose) {
    auto on_axis = [&](int64_t a) { return a == axis || a == axis - 4; };
    const int64_t width = b.head_first ? b.head_width : 3 * b.head_dim;
    // Q and K of d channels, V of the rest: settles d (head-first) or checks it.
    auto settle = [&](int64_t d) {
      const bool ok =
          d >= 1 && width - 2 * d >= 1 &&
          (b.head_first ? !b.value_dim || (d == b.head_dim && width - 2 * d == b.value_dim) : 3 * d == width);
      if (ok && b.head_first) {
        b.head_dim = d;
        b.value_dim = width - 2 * d;
      }
      return ok;
    };
    if (op == "Split") {
      const std::vector<int64_t> sizes = n.input_size() > 1 && !n.input(1).empty()
                                             ? ints_of(need_const(n, 1, "split"), what)
                                             : attr_ints(n, "split", {});
      const bool parts_ok = sizes.empty() ? width % 3 == 0 && settle(width / 3)
                                          : sizes.size() == 3 && sizes[0] == sizes[1] &&
                                                sizes[0] + sizes[1] + sizes[2] == width && settle(sizes[0]);
      if (!on_axis(attr_int(n, "axis", 0)) || n.output_size() != 3 || !parts_ok)
        fail(n, "splits " + whose + " other than into Q, K and V along axis " + std::to_string(axis) +
                    " (Q and K of the same width, V the rest of " + std::to_string(width) + ")");
      for (int i = 0; i < 3; ++i) win_[define(n, i)] = WinValue{w.block, parts[static_cast<size_t>(i)]};
      return;
    }
    if (op != "Slice") refuse();
    const SliceArgs a = slice_args(n);
    const int64_t start = a.starts.size() == 1 ? a.starts[0] : -1;
    const int64_t end = a.ends.empty() ? -1 : std::min<int64_t>(a.ends[0], width);
    // Q [0, d), K [d, 2 d), V [2 d, width): which part, and the d it implies.
    int part = -1;
    if (start == 0 && settle(end))
      part = 0;
    else if (start > 0 && end == 2 * start && settle(start))
      part = 1;
    else if (start > 0 && start % 2 == 0 && end == width && settle(start / 2))
      part = 2;
    if (a.axes.size() != 1 || !on_axis(a.axes[0]) || a.steps[0] != 1 || part < 0)
      fail(n, "slices " + whose + " other than into Q, K and V along axis " + std::to_string(axis) +
                  " (Q and K of the same width, V the rest of " + std::to_string(width) + ")");
    next(parts[static_cast<size_t>(part)]);
  };
  // The output's Reshape to (1, H/wh, W/ww, wh, ww, C), on the way to the image.
  auto reverse = [&](const std::vector<int64_t>& t) {
    if (t.size() != 6 || !one_image(t[0]) || !times_is(t[1], t[3], b.in.full[0]) ||
        !times_is(t[2], t[4], b.in.full[1]) || t[3] != b.wh || t[4] != b.ww || (t[5] != b.out && t[5] != -1))
      fail(n, "reshapes the window attention's output to " + ints_str(t) + "; dltrain reads (1, H/wh, W/ww, wh, ww, C)");
    next(Stage::kRev6);
  };
  // An Einsum's equation without spaces, in lower case (MaxViT writes "B G H I D, ...").
  auto equation = [&]() {
    std::string eq = attr_string(n, "equation", "");
    eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
    std::transform(eq.begin(), eq.end(), eq.begin(), [](unsigned char ch) { return std::tolower(ch); });
    return eq;
  };
  // The operand in this block (Add and Mul take it either side; MatMul's is checked below).
  int vi = -1;
  for (int i = 0; i < n.input_size() && vi < 0; ++i)
    if (win_.count(n.input(i)) && win_.at(n.input(i)).block == w.block) vi = i;
  if (op == "MatMul" && vi == 1 && global_q_.count(n.input(0))) {  // GC ViT's global queries by the keys
    const GlobalQuery& g = global_q_.at(n.input(0));
    if (win_.at(n.input(1)).stage != Stage::kKt || !b.kv_only || g.stage != GlobalQuery::kQueries ||
        g.windows != b.windows || g.heads != b.heads || g.d != b.head_dim || g.image.shape[0] != b.wh ||
        g.image.shape[1] != b.ww)
      fail(n, "multiplies a global query (" + std::to_string(g.windows) + " copies of a " + g.image.shape.str() +
                  " image, " + std::to_string(g.heads) +
                  " heads) by keys it does not fit; dltrain reads GC ViT's "
                  "global query: a WindowSize image of the keys' channels, one copy per window, by the transposed "
                  "keys of a K/V-only projection (" +
                  std::to_string(b.windows) + " windows of " + std::to_string(b.wh) + "x" + std::to_string(b.ww) +
                  ", " + std::to_string(b.heads) + " heads)");
    b.global_query = g.image;
    b.scale *= g.scale;
    return next(Stage::kScores);
  }
  if (vi < 0 || (vi > 0 && op != "Add" && op != "Mul")) refuse();
  const Stage s = win_.at(n.input(vi)).stage;
  const int64_t qkv_rank = b.twins || b.nest ? 6 : 5;  // of the transposed Q/K/V heads
  const int64_t nparts = b.kv_only ? 2 : 3;  // Q, K and V, or (GC ViT) K and V
  if (op == "Shape") {
    const int64_t heads = b.heads, d = b.head_dim, dv = b.vd(), nh = b.in.full[0] / b.wh, nw = b.in.full[1] / b.ww;
    const int64_t width = b.head_first ? b.head_width : 3 * d;
    std::vector<int64_t> dims;
    switch (s) {
      case Stage::kSplit: dims = {1, nh, b.wh, nw, b.ww, c}; break;
      case Stage::kWindows: dims = {1, nh, nw, b.wh, b.ww, c}; break;
      case Stage::kTokens: dims = {b.windows, seq, c}; break;
      case Stage::kQkv: dims = {b.windows, seq, b.qkv_cols}; break;
      case Stage::kQkv5:
        dims = {b.windows, seq, nparts, heads, d};
        break;
      case Stage::kQkvT:
        dims = b.unbind_axis == 2 ? std::vector<int64_t>{b.windows, heads, nparts, seq, d}
                                  : std::vector<int64_t>{nparts, b.windows, heads, seq, d};
        break;
      case Stage::kQ1:
      case Stage::kK1:
      case Stage::kV1:
        dims = b.unbind_axis == 2 ? std::vector<int64_t>{b.windows, heads, 1, seq, d}
                                  : std::vector<int64_t>{1, b.windows, heads, seq, d};
        break;
      case Stage::kMerge: dims = {1, nh, nw, b.ww, b.wh, c}; break;
      case Stage::kWin4: dims = {b.windows, b.wh, b.ww, c}; break;
      case Stage::kKf: dims = {b.windows * heads, seq, d}; break;
      case Stage::kQkvH: dims = {b.windows, seq, heads, width}; break;
      case Stage::kQs:
      case Stage::kKs: dims = {b.windows, seq, heads, d}; break;
      case Stage::kVs: dims = {b.windows, seq, heads, dv}; break;
      case Stage::kConvQkv: dims = {1, b.qkv_cols, b.wh, b.ww}; break;
      case Stage::kQkvC5:
        dims = {1, 3, heads, d, seq};
        break;
      case Stage::kQkvC: dims = {1, heads, width, seq}; break;
      case Stage::kQc: dims = {1, heads, d, seq}; break;
      case Stage::kVc:
      case Stage::kHeadsC: dims = {1, heads, dv, seq}; break;
      case Stage::kQkvHT: dims = {b.windows, heads, seq, width}; break;
      case Stage::kKft: dims = {b.windows * heads, d, seq}; break;
      case Stage::kProj4: dims = {b.windows, b.wh, b.ww, b.out}; break;
      case Stage::kQ:
      case Stage::kK: dims = {b.windows, heads, seq, d}; break;
      case Stage::kV:
      case Stage::kHeads: dims = {b.windows, heads, seq, dv}; break;
      case Stage::kKt: dims = {b.windows, heads, d, seq}; break;
      case Stage::kScores:
      case Stage::kProbs: dims = {b.windows, heads, seq, seq}; break;
      case Stage::kScores5: dims = {1, b.windows, heads, seq, seq}; break;
      case Stage::kHeadsT: dims = {b.windows, seq, heads, dv}; break;
      case Stage::kMerged:
        dims = b.merged4 ? std::vector<int64_t>{b.windows, b.wh, b.ww, heads * dv}
                         : std::vector<int64_t>{b.windows, seq, heads * dv};
        break;
      case Stage::kProj:
        dims = b.merged4 ? std::vector<int64_t>{b.windows, b.wh, b.ww, b.out} : std::vector<int64_t>{b.windows, seq, b.out};
        break;
      case Stage::kRev6: dims = {1, nh, nw, b.wh, b.ww, b.out}; break;
      case Stage::kRev: dims = {1, nh, b.wh, nw, b.ww, b.out}; break;
      case Stage::kQNorm:
      case Stage::kKNorm: dims = {b.windows, heads, seq, 1}; break;
      case Stage::kQFlat:
      case Stage::kKFlat:
      case Stage::kVFlat: dims = {b.windows, seq, b.qkv_cols / 3}; break;
      case Stage::kQ5:
      case Stage::kK5:
      case Stage::kV5: dims = {b.windows, seq, heads, d}; break;
      case Stage::kHeadsRev6:
        dims = {1, nh, nw, b.wh, b.ww, heads * dv};
        break;
      case Stage::kHeadsRev:
        dims = {1, nh, b.wh, nw, b.ww, heads * dv};
        break;
    }
    const bool kept = s != Stage::kSplit && s != Stage::kWindows && s != Stage::kRev6 && s != Stage::kRev &&
                      s != Stage::kHeadsRev6 && s != Stage::kHeadsRev;
    if ((b.maxvit || b.twins) && kept) dims.insert(dims.begin(), 1);  // MaxViT and Twins keep the batch axis
    if (b.twins) {  // the heads' axes after the batch's; Q/K/V projected and merged on the image's layout
      const int64_t hw = b.in.full[0] * b.in.full[1], out = s == Stage::kProj ? b.out : heads * dv;
      if (s == Stage::kQkv) dims = {1, nh, nw, b.wh, b.ww, b.qkv_cols};
      if (s == Stage::kQkvT) dims = {3, 1, b.windows, heads, seq, d};
      if (s == Stage::kQ1 || s == Stage::kK1 || s == Stage::kV1) dims = {1, 1, b.windows, heads, seq, d};
      if (s == Stage::kMerged || s == Stage::kProj)
        dims = b.merged_image ? std::vector<int64_t>{1, b.in.full[0], b.in.full[1], out}
                              : std::vector<int64_t>{1, hw, out};
    }
    if (b.nest) {  // the batch axis kept, the heads before the windows
      switch (s) {
        case Stage::kQkv:
          dims = {1, b.windows, seq, b.qkv_cols};
          break;
        case Stage::kQkv5:
          dims = {1, b.windows, seq, 3, heads, d};
          break;
        case Stage::kQkvT:
          dims = {3, 1, heads, b.windows, seq, d};
          break;
        case Stage::kQ1:
        case Stage::kK1:
        case Stage::kV1:
          dims = {1, 1, heads, b.windows, seq, d};
          break;
        case Stage::kQ:
        case Stage::kK:
        case Stage::kV:
        case Stage::kHeads:
          dims = {1, heads, b.windows, seq, d};
          break;
        case Stage::kKt:
          dims = {1, heads, b.windows, d, seq};
          break;
        case Stage::kScores:
        case Stage::kProbs:
          dims = {1, heads, b.windows, seq, seq};
          break;
        case Stage::kHeadsT:
          dims = {1, b.windows, seq, dv, heads};
          break;
        case Stage::kMerged:
          dims = {1, b.windows, seq, heads * dv};
          break;
        case Stage::kProj:
          dims = {1, b.windows, seq, b.out};
          break;
        default:
          break;
      }
    }
    return set_ints(n, shape_slice(dims, attr_int(n, "start", 0), attr_int(n, "end", INT64_MAX)));
  }
  // The constant operand of a binary node whose other operand is this stage's value.
  auto other_const = [&]() -> const onnx::TensorProto* {
    return n.input_size() == 2 ? constant(n.input(1 - vi)) : nullptr;
  };
  switch (s) {
    case Stage::kSplit:
      // Grid (dltrain's export of Partition grid): the split was (1, wh, H/wh, ww, W/ww, C).
      if (perm_is({0, 2, 4, 1, 3, 5}) && whole(b.in) && b.in.full[0] == b.in.src.shape[0] &&
          b.in.full[1] == b.in.src.shape[1]) {
        b.grid = true;
        b.wh = b.in.full[0] / b.wh;
        b.ww = b.in.full[1] / b.ww;
        b.windows = (b.in.full[0] / b.wh) * (b.in.full[1] / b.ww);
        return next(Stage::kWindows);
      }
      if (b.wh == 2 && b.ww == 2 && perm_is({0, 1, 3, 4, 2, 5})) return next(Stage::kMerge);  // timm's patch merging
      if (!perm_is({0, 1, 3, 2, 4, 5})) refuse();
      return next(Stage::kWindows);
    case Stage::kMerge: {
      if (op != "Reshape") refuse();
      const auto t = target();
      if (t.size() != 4 || !one_image(t[0]) || t[1] * 2 != b.in.full[0] || t[2] * 2 != b.in.full[1] ||
          (t[3] != 4 * c && t[3] != -1) || !whole(b.in) || b.in.full != b.in.src_hw())
        fail(n, "reads 2x2 patches of a channels-last image transposed (0, 1, 3, 4, 2, 5); dltrain reads them as timm's "
                "patch merging of the whole unpadded image: a Reshape to (1, H/2, W/2, 4 C)");
      merge_split(n, b.in.src, true);
      return;
    }
    case Stage::kWindows: {
      if (op == "MatMul" && constant(n.input(1))) {  // Twins: Q/K/V of the 6-D windows
        if (!whole(b.in) || b.in.full != b.in.src_hw())
          fail(n,
               "projects the windows of a padded, rolled or cropped image; dltrain reads Twins' locally-grouped "
               "attention on whole windows of the image (its sides multiples of the window)");
        b.twins = true;
        return qkv_matmul();
      }
      if (op != "Reshape") refuse();
      auto t = target();
      // (1, H/2, W/2, 4 C): the 2x2 patches' channels side by side, spaceToDepth's order
      if (t.size() == 4 && b.wh == 2 && b.ww == 2 && one_image(t[0]) && t[1] * 2 == b.in.full[0] &&
          t[2] * 2 == b.in.full[1] && (t[3] == 4 * c || t[3] == -1) && whole(b.in) && b.in.full == b.in.src_hw()) {
        merge_split(n, b.in.src, false);
        return;
      }
      if (t.size() == 4 && (t[0] == b.windows || t[0] == -1) && t[1] == b.wh && t[2] == b.ww && (t[3] == c || t[3] == -1))
        return next(Stage::kWin4);  // TorchScript's timm: (windows, wh, ww, C) first
      if (t.size() == 4 && one_image(t[0]) && t[1] == b.windows && (t[2] == seq || t[2] == -1) && t[3] == c &&
          !b.grid && whole(b.in) && b.in.full == b.in.src_hw()) {
        // NesT's blocks (1, windows, S, C), the batch axis kept: MaxViT's partition of the image,
        // read by per-token layers and an attention as MaxViT's (maxvit_node)
        set_out(n, b.in.src);
        partitions_[n.output(0)] = Partition{false, b.wh, b.ww};
        return;
      }
      if (t.size() != 3 || (t[0] != b.windows && t[0] != -1) || t[1] != seq || (t[2] != c && t[2] != -1)) refuse();
      return next(Stage::kTokens);
    }
    case Stage::kWin4: {
      if (op == "MatMul" && constant(n.input(1))) return qkv_matmul();  // timm's MaxViT: on (windows, wh, ww, C)
      if (op != "Reshape") refuse();
      const auto t = target();
      if (t.size() != 3 || (t[0] != b.windows && t[0] != -1) || t[1] != seq || (t[2] != c && t[2] != -1)) refuse();
      return next(Stage::kTokens);
    }
    case Stage::kTokens: {
      if (op == "LayerNormalization") {  // TinyViT normalizes the window tokens inside its attention
        if (!whole(b.in) || b.in.full != b.in.src_hw())
          fail(n, "normalizes the window tokens of a padded image; dltrain reads a LayerNormalization inside the "
                  "window attention only where no padding is, as the same layer on the image before it");
        const LayerType* ln = layer_type_for_onnx("LayerNormalization");
        if (!ln) refuse();
        values_[n.input(0)] = b.in.src;  // the image, whose tokens the windows hold
        read_layer(*ln, n);
        b.in.src = values_.at(n.output(0));
        values_.erase(n.input(0));
        values_.erase(n.output(0));
        return next(Stage::kTokens);
      }
      if (op != "MatMul" || !constant(n.input(1))) refuse();
      return qkv_matmul();
    }
    case Stage::kQkv:
    case Stage::kProj: {
      const bool qkv = s == Stage::kQkv;
      std::vector<float>& bias = qkv ? b.qkv_b : b.proj_b;
      if (op == "Add") {
        const onnx::TensorProto* t = other_const();
        if (!t) refuse();
        std::vector<float> v = floats_of(*t, what);
        if (v.size() == 1) v.assign(bias.size(), v[0]);
        if (v.size() != bias.size())
          fail(n, "adds " + std::to_string(v.size()) + " values to a projection of " + std::to_string(bias.size()));
        for (size_t i = 0; i < v.size(); ++i) bias[i] += v[i];
        return next(s);
      }
      if (qkv && b.maxvit && op == "Split") {  // MaxViT: Q, K and V side by side along the channels
        int64_t axis = attr_int(n, "axis", 0);
        if (axis < 0) axis += 4;
        const std::vector<int64_t> sizes = n.input_size() > 1 && !n.input(1).empty()
                                               ? ints_of(need_const(n, 1, "split"), what)
                                               : attr_ints(n, "split", {});
        const int64_t third = b.qkv_cols / 3;
        if (axis != 3 || n.output_size() != 3 || b.qkv_cols % 3 != 0 ||
            (!sizes.empty() && sizes != std::vector<int64_t>{third, third, third}))
          fail(n, "splits MaxViT's joint Q/K/V projection other than into three equal parts along the channels");
        const Stage parts[3] = {Stage::kQFlat, Stage::kKFlat, Stage::kVFlat};
        for (int i = 0; i < 3; ++i) win_[define(n, i)] = WinValue{w.block, parts[i]};
        return;
      }
      if (qkv && b.maxvit && op == "Slice") {  // TorchScript's chunk: one third of the channels each
        const SliceArgs a = slice_args(n);
        const int64_t third = b.qkv_cols / 3;
        const int64_t axis = a.axes.size() == 1 ? (a.axes[0] < 0 ? a.axes[0] + 4 : a.axes[0]) : -1;
        const int64_t start = a.starts.empty() ? -1 : a.starts[0];
        if (axis != 3 || a.steps[0] != 1 || start < 0 || b.qkv_cols % 3 != 0 || start % third != 0 ||
            start / third > 2 || std::min(a.ends[0], b.qkv_cols) != start + third)
          fail(n, "slices MaxViT's joint Q/K/V projection other than into thirds along the channels");
        const Stage parts[3] = {Stage::kQFlat, Stage::kKFlat, Stage::kVFlat};
        return next(parts[start / third]);
      }
      if (op != "Reshape") refuse();
      auto t = target();
      if (qkv && t.size() == 4 && t[3] == -1 && t[2] >= 1 && t[0] != -1 && t[1] != -1 && b.qkv_cols % t[2] == 0)
        t[3] = b.qkv_cols / t[2];  // TinyViT's (windows, S, heads, -1)
      if (qkv && t.size() == 4 && (t[0] == b.windows || t[0] == -1) && (t[1] == seq || (t[1] == -1 && t[0] != -1)) &&
          t[2] >= 1 && t[3] >= 3 && times_is(t[2], t[3], b.qkv_cols)) {
        // timm's head-first layout (maxvit_*_rw, TinyViT, EfficientFormer): each head's Q, K and V
        // side by side; their widths come with the split, the columns' order at the close
        b.heads = t[2];
        b.head_first = true;
        b.head_width = t[3];
        b.head_dim = t[3] % 3 == 0 ? t[3] / 3 : 0;
        return next(Stage::kQkvH);
      }
      if (qkv && (b.twins || b.nest)) {  // (1, windows, S, 3, heads, d): the batch axis kept
        if (t.size() != 6 || !one_image(t[0]) || t[1] != b.windows || t[2] != seq || t[3] != 3 || t[4] < 1 ||
            (t[5] != -1 && !(b.qkv_cols % 3 == 0 && times_is(t[4], t[5], b.qkv_cols / 3))))
          fail(n, "reshapes " + std::string(b.nest ? "NesT's" : "Twins'") + " joint Q/K/V projection to " +
                      ints_str(t) + "; dltrain reads (1, " + std::to_string(b.windows) + ", " + std::to_string(seq) +
                      ", 3, heads, d)");
        t.erase(t.begin());
      }
      if (qkv && t.size() == 5 && t[2] == 2) {  // GC ViT's K and V only: (windows, S, 2, heads, d)
        if (t[4] == -1 && t[3] >= 1 && b.qkv_cols % (2 * t[3]) == 0) t[4] = b.qkv_cols / (2 * t[3]);
        if ((t[0] != b.windows && t[0] != -1) || t[1] != seq || t[3] < 1 || t[4] < 1 || t[3] * t[4] * 2 != b.qkv_cols)
          fail(n, "reshapes a K/V projection to " + ints_str(t) + "; dltrain reads (windows, " + std::to_string(seq) +
                      ", 2, heads, d)");
        b.kv_only = true;
        b.heads = t[3];
        b.head_dim = t[4];
        return next(Stage::kQkv5);
      }
      if (qkv) {
        // timm writes the head dimension as -1
        if (t.size() == 5 && t[4] == -1 && t[3] >= 1 && b.qkv_cols % (3 * t[3]) == 0) t[4] = b.qkv_cols / (3 * t[3]);
        if (t.size() == 5 && t[0] == b.windows && t[1] == -1) t[1] = seq;  // timm's MaxViT
        if (t.size() != 5 || (t[0] != b.windows && t[0] != -1) || t[1] != seq || t[2] != 3 || t[3] < 1 || t[4] < 1 ||
            t[3] * t[4] * 3 != b.qkv_cols)
          fail(n, "reshapes the joint Q/K/V projection to " + ints_str(t) + "; dltrain reads (windows, " +
                      std::to_string(seq) + ", 3, heads, d)");
        b.heads = t[3];
        b.head_dim = t[4];
        return next(Stage::kQkv5);
      }
      if (t.size() == 4 && (t[0] == b.windows || t[0] == -1) && t[1] == b.wh && t[2] == b.ww &&
          (t[3] == b.out || t[3] == -1))
        return next(Stage::kProj4);  // TorchScript's timm: (windows, wh, ww, C) first
      return reverse(t);
    }
    case Stage::kProj4:
      if (op != "Reshape") refuse();
      return reverse(target());
    case Stage::kQkv5:
      if (b.nest) {  // (3, 1, heads, windows, S, d)
        if (!perm_is({3, 0, 4, 1, 2, 5})) refuse();
        return next(Stage::kQkvT);
      }
      if (b.twins) {  // (3, 1, windows, heads, S, d)
        if (!perm_is({3, 0, 1, 4, 2, 5})) refuse();
        return next(Stage::kQkvT);
      }
      if (perm_is({0, 3, 2, 1, 4})) {  // timm's MaxViT: (windows, heads, 3, S, d), unbound along axis 2
        b.unbind_axis = 2;
        return next(Stage::kQkvT);
      }
      if (!perm_is({2, 0, 3, 1, 4})) refuse();
      return next(Stage::kQkvT);
    case Stage::kQFlat:
    case Stage::kKFlat:
    case Stage::kVFlat: {
      if (op != "Reshape") refuse();
      auto t = target();
      if (t.size() != 5 || !one_image(t[0]) || t[1] != b.windows || t[2] != seq || t[3] < 1 || t[4] < 1 ||
          t[3] * t[4] * 3 != b.qkv_cols || (b.heads && (t[3] != b.heads || t[4] != b.head_dim)))
        fail(n, "reshapes MaxViT's Q, K or V to " + ints_str(t) + "; dltrain reads (1, " + std::to_string(b.windows) +
                    ", " + std::to_string(seq) + ", heads, d), the same heads for all three");
      b.heads = t[3];
      b.head_dim = t[4];
      return next(s == Stage::kQFlat ? Stage::kQ5 : s == Stage::kKFlat ? Stage::kK5 : Stage::kV5);
    }
    case Stage::kQ1:
    case Stage::kK1:
    case Stage::kV1: {
      if (op != "Squeeze") refuse();
      const std::vector<int64_t> axes = n.input_size() > 1 && !n.input(1).empty()
                                            ? ints_of(need_const(n, 1, "axes"), what)
                                            : attr_ints(n, "axes", {});
      if (axes != std::vector<int64_t>{b.unbind_axis} && axes != std::vector<int64_t>{b.unbind_axis - qkv_rank})
        refuse();
      return next(s == Stage::kQ1 ? Stage::kQ : s == Stage::kK1 ? Stage::kK : Stage::kV);
    }
    case Stage::kQ5:
    case Stage::kK5:
    case Stage::kV5:
      if (!perm_is({0, 1, 3, 2, 4})) refuse();
      return next(s == Stage::kQ5 ? Stage::kQ : s == Stage::kK5 ? Stage::kK : Stage::kV);
    case Stage::kQkvT: {
      if (op == "Split") {  // TorchScript's unbind(0): three parts of one along axis 0, each Squeezed
        const std::vector<int64_t> sizes = n.input_size() > 1 && !n.input(1).empty()
                                               ? ints_of(need_const(n, 1, "split"), what)
                                               : attr_ints(n, "split", {});
        if (attr_int(n, "axis", 0) != b.unbind_axis || n.output_size() != nparts ||
            (!sizes.empty() && sizes != std::vector<int64_t>(static_cast<size_t>(nparts), 1)))
          fail(n, "splits the Q/K/V heads other than into " + std::string(b.kv_only ? "K and V" : "Q, K and V") +
                      " along axis " + std::to_string(b.unbind_axis));
        const Stage one[3] = {Stage::kQ1, Stage::kK1, Stage::kV1};
        for (int i = 0; i < nparts; ++i) win_[define(n, i)] = WinValue{w.block, one[i + 3 - nparts]};
        return;
      }
      if (op == "Slice") {  // timm's unbind(0): a Slice of one along axis 0, then its Squeeze
        const SliceArgs a = slice_args(n);
        const int64_t start = a.starts.size() == 1 ? a.starts[0] : -1;
        if (a.axes.size() != 1 || (a.axes[0] != b.unbind_axis && a.axes[0] != b.unbind_axis - qkv_rank) ||
            a.steps[0] != 1 || start < 0 || start >= nparts || std::min<int64_t>(a.ends[0], nparts) != start + 1)
          fail(n, "slices the Q/K/V heads other than one of " + std::string(b.kv_only ? "K or V" : "Q, K or V") +
                      " along axis " + std::to_string(b.unbind_axis));
        const Stage one[3] = {Stage::kQ1, Stage::kK1, Stage::kV1};
        return next(one[start + 3 - nparts]);
      }
      if (op != "Gather" || attr_int(n, "axis", 0) != b.unbind_axis) refuse();
      const onnx::TensorProto& t = need_const(n, 1, "indices");
      const auto idx = ints_of(t, what);
      if (t.dims_size() != 0 || idx.size() != 1 || idx[0] < 0 || idx[0] >= nparts)
        fail(n, "gathers " + ints_str(idx) + " of the Q/K/V heads; dltrain reads one index, " +
                    std::string(b.kv_only ? "0 (K) or 1 (V)" : "0, 1 or 2") + ", as a scalar");
      const Stage one[3] = {Stage::kQ, Stage::kK, Stage::kV};
      return next(one[idx[0] + 3 - nparts]);
    }
    case Stage::kQ:
    case Stage::kK:
      // F.normalize (Swin V2's cosine attention): ReduceL2 over the channels, Clip, Expand, Div.
      if (op == "ReduceL2") {
        const std::vector<int64_t> axes = opset_ >= 18 && n.input_size() > 1
                                              ? ints_of(need_const(n, 1, "axes"), what)
                                              : attr_ints(n, "axes", {});
        if ((axes != std::vector<int64_t>{-1} && axes != std::vector<int64_t>{3}) || attr_int(n, "keepdims", 1) != 1)
          fail(n, "takes the norm of the queries or keys over axes " + ints_str(axes) +
                      "; dltrain reads the norm of each head's channels (axes [-1], keepdims 1)");
        return next(s == Stage::kQ ? Stage::kQNorm : Stage::kKNorm);
      }
      if (op == "Div") {
        const bool norm = n.input_size() == 2 && vi == 0 && win_.count(n.input(1)) &&
                          win_.at(n.input(1)).block == w.block &&
                          win_.at(n.input(1)).stage == (s == Stage::kQ ? Stage::kQNorm : Stage::kKNorm);
        bool& unit = s == Stage::kQ ? b.q_unit : b.k_unit;
        if (!norm || unit || (s == Stage::kQ && b.scale != 1))
          fail(n, "divides the queries or keys by something other than their own norm, once and before any scale");
        unit = true;
        return next(s);
      }
      if (op == "Mul") {  // a scale of Q (Swin) or K (MaxViT): the scores' scale either way
        const onnx::TensorProto* t = other_const();
        const std::vector<float> f = t ? floats_of(*t, what) : std::vector<float>{};
        if (f.size() != 1 || b.q_unit || b.k_unit)
          fail(n, "multiplies the queries or keys by something other than one constant, or after their normalization");
        b.scale *= f[0];
        return next(s);
      }
      if (s == Stage::kK) {
        if (op == "Reshape") {  // the dynamo exporter's K^T: (windows heads, S, d), Transpose, back
          const auto t = target();
          if (t.size() != 3 || (t[0] != b.windows * b.heads && t[0] != -1) || t[1] != seq || t[2] != b.head_dim)
            refuse();
          return next(Stage::kKf);
        }
        if (!perm_is(b.twins || b.nest ? std::vector<int64_t>{0, 1, 2, 4, 3} : std::vector<int64_t>{0, 1, 3, 2}))
          refuse();
        return next(Stage::kKt);
      }
      if (op == "Einsum") {  // MaxViT: Q K^T per window and head
        if (equation() != "bghid,bghjd->bghij" || n.input_size() != 2 || vi != 0 || !win_.count(n.input(1)) ||
            win_.at(n.input(1)).block != w.block || win_.at(n.input(1)).stage != Stage::kK)
          fail(n, "is an Einsum '" + attr_string(n, "equation", "") +
                      "' of the queries; dltrain reads MaxViT's 'B G H I D, B G H J D -> B G H I J' of Q and K");
        return next(Stage::kScores);
      }
      if (op != "MatMul" || n.input_size() != 2 || !win_.count(n.input(1)) ||
          win_.at(n.input(1)).block != w.block || win_.at(n.input(1)).stage != Stage::kKt)
        refuse();
      return next(Stage::kScores);
    case Stage::kQNorm:
    case Stage::kKNorm: {
      if (op == "Clip") {  // clamp_min(eps): a floor of at most 1e-6, no ceiling
        const std::vector<float> lo = n.input_size() > 1 && !n.input(1).empty() ? need_floats(n, 1, "min")
                                                                                 : std::vector<float>{};
        if (lo.size() != 1 || lo[0] < 0 || lo[0] > 1e-6f || (n.input_size() > 2 && !n.input(2).empty()))
          fail(n, "clips a norm other than F.normalize's (a floor of at most 1e-6, no ceiling)");
        return next(s);
      }
      if (op == "Expand") return next(s);
      return refuse();
    }
    case Stage::kScores:
    case Stage::kScores5: {
      const bool by_window = s == Stage::kScores5;
      if (op == "Add") {
        const onnx::TensorProto* t = other_const();
        if (!t) refuse();
        std::vector<float> v = floats_of(*t, what);
        const std::vector<int64_t> d = dims_of(*t);
        const int64_t plane = seq * seq;
        if (!by_window && static_cast<int64_t>(v.size()) == b.heads * plane && b.bias.empty() && d.size() >= 3 &&
            d[d.size() - 3] == b.heads) {
          b.bias = std::move(v);
          b.bias_node = node_name(n);
          return next(s);
        }
        if (by_window && static_cast<int64_t>(v.size()) == b.windows * plane && b.mask.empty() && d.size() >= 4 &&
            d[d.size() - 3] == 1 && d[d.size() - 4] == b.windows) {
          b.mask = std::move(v);
          return next(s);
        }
        fail(n, "adds a " + ints_str(d) + " constant to the window scores; dltrain reads the relative position bias (" +
                    std::to_string(b.heads) + ", " + std::to_string(seq) + ", " + std::to_string(seq) +
                    ") once, and the shift's mask (" + std::to_string(b.windows) + ", 1, " + std::to_string(seq) + ", " +
                    std::to_string(seq) + ") once, after a Reshape to (1, windows, heads, S, S)");
      }
      if (op == "Reshape") {
        const auto t = target();
        if (!by_window && t.size() == 5 && one_image(t[0]) && t[1] == b.windows && t[2] == b.heads && t[3] == seq &&
            t[4] == seq)
          return next(Stage::kScores5);
        if (by_window && t.size() == 4 && (t[0] == -1 || t[0] == b.windows) && t[1] == b.heads && t[2] == seq &&
            t[3] == seq)
          return next(Stage::kScores);
        fail(n, "reshapes the window scores to " + ints_str(t) +
                    "; dltrain reads (1, windows, heads, S, S) and back (windows, heads, S, S)");
      }
      if (op == "Mul" && !by_window) {
        const onnx::TensorProto* t = other_const();
        std::vector<float> v = t ? floats_of(*t, what) : std::vector<float>{};
        // Not cosine attention: one constant is the scores' scale (EfficientFormer's (q @ k^T) * scale).
        if (v.size() == 1 && !b.q_unit && !b.k_unit && b.logit.empty() && b.bias.empty()) {
          b.scale *= v[0];
          return next(s);
        }
        if (v.size() == 1) v.assign(static_cast<size_t>(b.heads), v[0]);
        if (static_cast<int64_t>(v.size()) != b.heads || !b.logit.empty() || !b.bias.empty())
          fail(n, "multiplies the window scores by something other than one factor per head, once, before the bias");
        b.logit = std::move(v);
        return next(s);
      }
      if (op == "Softmax" && !by_window) {
        const int64_t axis = attr_int(n, "axis", opset_ >= 13 ? -1 : 1);
        if (axis != -1 && axis != (b.nest || b.twins || b.maxvit ? 4 : 3))
          fail(n, "takes the softmax over axis " + std::to_string(axis) + ", not the keys (-1)");
        return next(Stage::kProbs);
      }
      return refuse();
    }
    case Stage::kProbs: {
      if (op == "Einsum") {
        if (equation() != "bghij,bghjd->bghid")
          fail(n, "is an Einsum '" + attr_string(n, "equation", "") +
                      "' of the probabilities; dltrain reads MaxViT's 'B G H I J, B G H J D -> B G H I D'");
      } else if (op != "MatMul") {
        refuse();
      }
      if (n.input_size() != 2 || vi != 0 || !win_.count(n.input(1)) || win_.at(n.input(1)).block != w.block ||
          win_.at(n.input(1)).stage != Stage::kV)
        refuse();
      return next(Stage::kHeads);
    }
    case Stage::kHeads:
      if (b.image2d) {
        if (!perm_is({0, 1, 3, 2})) refuse();
        return next(Stage::kHeadsC);
      }
      if (b.nest && !perm_is({0, 2, 3, 4, 1}))
        fail(n, "transposes NesT's heads' output (1, heads, windows, S, d) by " + ints_str(attr_ints(n, "perm", {})) +
                    "; dltrain reads (0, 2, 3, 4, 1), each channel's heads side by side as NesT merges them");
      if (!perm_is(b.nest                ? std::vector<int64_t>{0, 2, 3, 4, 1}
                   : b.maxvit || b.twins ? std::vector<int64_t>{0, 1, 3, 2, 4}
                                         : std::vector<int64_t>{0, 2, 1, 3}))
        refuse();
      return next(Stage::kHeadsT);
    case Stage::kHeadsT: {
      if (op != "Reshape") refuse();
      std::vector<int64_t> t = target();
      if (b.twins) {  // the reverse partition of the merged heads: (1, H/wh, W/ww, wh, ww, C)
        const int64_t nh = b.in.full[0] / b.wh, nw = b.in.full[1] / b.ww;
        if (t.size() != 6 || !one_image(t[0]) || t != std::vector<int64_t>{t[0], nh, nw, b.wh, b.ww, b.heads * b.vd()})
          fail(n, "reshapes Twins' merged heads to " + ints_str(t) + "; dltrain reads the reverse partition (1, " +
                      std::to_string(nh) + ", " + std::to_string(nw) + ", " + std::to_string(b.wh) + ", " +
                      std::to_string(b.ww) + ", " + std::to_string(b.heads * b.vd()) + ")");
        return next(Stage::kHeadsRev6);
      }
      if (b.maxvit || b.nest) {
        if (t.size() != 4 || !one_image(t[0])) refuse();
        t.erase(t.begin());
      } else if (t.size() == 4 && (t[0] == b.windows || t[0] == -1) && t[1] == b.wh && t[2] == b.ww) {
        t = {t[0], seq, t[3]};  // timm's MaxViT: the merged heads as (windows, wh, ww, C)
        b.merged4 = true;
      }
      if (t.size() != 3 || (t[0] != b.windows && t[0] != -1) || t[1] != seq ||
          (t[2] != b.heads * b.vd() && (t[2] != -1 || t[0] == -1)))
        refuse();
      return next(Stage::kMerged);
    }
    case Stage::kHeadsRev6:
      if (!perm_is({0, 1, 3, 2, 4, 5})) refuse();
      return next(Stage::kHeadsRev);
    case Stage::kHeadsRev: {  // the image (1, H, W, C), or its pixels as tokens (1, H*W, C)
      if (op != "Reshape") refuse();
      const auto t = target();
      const int64_t h = b.in.full[0], w = b.in.full[1], k = b.heads * b.vd();
      const bool image = t.size() == 4 && one_image(t[0]) && t[1] == h && t[2] == w && (t[3] == k || t[3] == -1);
      if (!image && !(t.size() == 3 && one_image(t[0]) && t[1] == h * w && (t[2] == k || t[2] == -1)))
        fail(n, "reshapes Twins' merged heads to " + ints_str(t) + "; dltrain reads (1, " + std::to_string(h) + ", " +
                    std::to_string(w) + ", " + std::to_string(k) + ") or (1, " + std::to_string(h * w) + ", " +
                    std::to_string(k) + ")");
      b.merged_image = image;
      return next(Stage::kMerged);
    }
    case Stage::kMerged: {
      if (b.twins && b.merged_image && op == "Reshape") {  // the image's pixels as tokens
        const auto t = target();
        const int64_t hw = b.in.full[0] * b.in.full[1], k = b.heads * b.vd();
        if (t.size() != 3 || !one_image(t[0]) || t[1] != hw || (t[2] != k && t[2] != -1))
          fail(n, "reshapes Twins' merged heads to " + ints_str(t) + "; dltrain reads (1, " + std::to_string(hw) +
                      ", " + std::to_string(k) + ")");
        b.merged_image = false;
        return next(Stage::kMerged);
      }
      if (b.image2d) {  // the output projection: a 1x1 Conv (+ its bias)
        const int64_t key = b.heads * b.vd();
        const onnx::TensorProto* wt = op == "Conv" && n.input_size() >= 2 ? constant(n.input(1)) : nullptr;
        const auto d = wt ? dims_of(*wt) : std::vector<int64_t>{};
        if (!wt || d.size() != 4 || d[1] != key || d[2] != 1 || d[3] != 1 || attr_int(n, "group", 1) != 1 ||
            attr_ints(n, "strides", {1, 1}) != std::vector<int64_t>{1, 1} ||
            attr_ints(n, "pads", {0, 0, 0, 0}) != std::vector<int64_t>{0, 0, 0, 0})
          fail(n, "projects the merged heads other than by a 1x1 Conv of " + std::to_string(key) + " input channels");
        const std::vector<float> wv = need_floats(n, 1, "weight");
        b.out = d[0];
        b.proj_w.assign(static_cast<size_t>(key * b.out), 0.f);
        for (int64_t o = 0; o < b.out; ++o)
          for (int64_t i = 0; i < key; ++i)
            b.proj_w[static_cast<size_t>(i * b.out + o)] = wv[static_cast<size_t>(o * key + i)];
        b.proj_b = n.input_size() > 2 && !n.input(2).empty() ? need_floats(n, 2, "bias")
                                                              : std::vector<float>(static_cast<size_t>(b.out), 0.f);
        if (static_cast<int64_t>(b.proj_b.size()) != b.out) fail(n, "has a bias of the wrong length");
        return next(Stage::kProj);
      }
      if (op != "MatMul" || !constant(n.input(1))) refuse();
      const auto d = dims_of(*constant(n.input(1)));
      if (d.size() != 2 || d[0] != b.heads * b.vd() || d[1] < 1)
        fail(n, "projects the merged heads with a " + ints_str(d) + " weight; dltrain reads (" +
                    std::to_string(b.heads * b.vd()) + ", OutputSize)");
      b.proj_w = need_floats(n, 1, "weight");
      b.out = d[1];
      b.proj_b.assign(static_cast<size_t>(d[1]), 0.f);
      return next(Stage::kProj);
    }
    case Stage::kRev6:
      if (!perm_is(b.grid ? std::vector<int64_t>{0, 3, 1, 4, 2, 5} : std::vector<int64_t>{0, 1, 3, 2, 4, 5})) refuse();
      return next(Stage::kRev);
    case Stage::kRev: {
      if (op != "Reshape") refuse();
      auto t = target();
      if (t.size() == 3 && one_image(t[0]) && t[1] == b.in.full[0] * b.in.full[1] && (t[2] == b.out || t[2] == -1) &&
          whole(b.in) && b.in.full == b.in.src_hw()) {  // DaViT: straight to the pixels as tokens (1, H*W, C)
        const Value y = window_emit(n, b);
        set_out(n, y);
        partitions_[n.output(0)] = Partition{false, y.shape[0], y.shape[1], true};
        return;
      }
      if (t.size() != 4 || !one_image(t[0]) || t[1] != b.in.full[0] || t[2] != b.in.full[1] ||
          (t[3] != b.out && t[3] != -1))
        fail(n, "reshapes the reversed windows to " + ints_str(t) + "; dltrain reads (1, " +
                    std::to_string(b.in.full[0]) + ", " + std::to_string(b.in.full[1]) + ", " + std::to_string(b.out) +
                    ")");
      ImageView out = b.in;
      out.src = window_emit(n, b);
      out.zero_pad = false;
      return set_image_view(n, out);
    }
    case Stage::kQkvH:
      if (op == "Split" || op == "Slice")  // TinyViT: split into Q, K and V first, each transposed
        return thirds(3, {Stage::kQs, Stage::kKs, Stage::kVs}, "the head-first Q/K/V");
      if (!perm_is({0, 2, 1, 3})) refuse();
      return next(Stage::kQkvHT);
    case Stage::kQs:
    case Stage::kKs:
    case Stage::kVs:
      if (s == Stage::kKs && perm_is({0, 2, 3, 1})) return next(Stage::kKt);  // TorchScript: K^T in one Transpose
      if (!perm_is({0, 2, 1, 3})) refuse();
      return next(s == Stage::kQs ? Stage::kQ : s == Stage::kKs ? Stage::kK : Stage::kV);
    case Stage::kConvQkv: {
      if (op != "Reshape") refuse();
      const auto t = target();
      if (!b.head_first) {  // Visformer's
        if (t.size() != 5 || !one_image(t[0]) || t[1] != 3 || t[2] != b.heads || t[3] != b.head_dim ||
            (t[4] != seq && t[4] != -1))
          fail(n, "reshapes an image's Q/K/V to " + ints_str(t) + "; dltrain reads (1, 3, " + std::to_string(b.heads) +
                      ", " + std::to_string(b.head_dim) + ", " + std::to_string(seq) + ")");
        return next(Stage::kQkvC5);
      }
      if (t.size() != 4 || !one_image(t[0]) || t[1] != b.heads || t[2] != b.head_width || (t[3] != seq && t[3] != -1))
        fail(n, "reshapes an image's Q/K/V to " + ints_str(t) + "; dltrain reads (1, " + std::to_string(b.heads) + ", " +
                    std::to_string(b.head_width) + ", " + std::to_string(seq) + ")");
      return next(Stage::kQkvC);
    }
    case Stage::kQkvC5:  // on to ViT's (3, 1, heads, H W, d), unbound along axis 0
      if (!perm_is({1, 0, 2, 4, 3})) refuse();
      return next(Stage::kQkvT);
    case Stage::kQkvC:  // Q, K and V of each head side by side along axis 2; K comes out as K^T
      return thirds(2, {Stage::kQc, Stage::kKt, Stage::kVc}, "an image's Q/K/V");
    case Stage::kQc:
    case Stage::kVc:
      if (!perm_is({0, 1, 3, 2})) refuse();
      return next(s == Stage::kQc ? Stage::kQ : Stage::kV);
    case Stage::kHeadsC: {
      if (op != "Reshape") refuse();
      const auto t = target();
      if (t.size() != 4 || !one_image(t[0]) || (t[1] != b.heads * b.vd() && t[1] != -1) || t[2] != b.wh ||
          t[3] != b.ww)
        fail(n, "reshapes the heads' output (1, heads, d, H W) to " + ints_str(t) + "; dltrain reads (1, " +
                    std::to_string(b.heads * b.vd()) + ", " + std::to_string(b.wh) + ", " + std::to_string(b.ww) + ")");
      return next(Stage::kMerged);
    }
    case Stage::kQkvHT:
      return thirds(3, {Stage::kQ, Stage::kK, Stage::kV}, "the head-first Q/K/V");
    case Stage::kKf:
      if (!perm_is({0, 2, 1})) refuse();
      return next(Stage::kKft);
    case Stage::kKft: {
      if (op != "Reshape") refuse();
      const auto t = target();
      if (t.size() != 4 || (t[0] != b.windows && t[0] != -1) || t[1] != b.heads || t[2] != b.head_dim || t[3] != seq)
        refuse();
      return next(Stage::kKt);
    }
    case Stage::kKt: {
      if (b.image2d && perm_is({0, 1, 3, 2})) return next(Stage::kK);  // CoAtNet's K^T transposed to K
      if (op != "Mul") refuse();  // the dynamo exporter scales Q and K^T by the root of the scale each
      const onnx::TensorProto* t = other_const();
      const std::vector<float> f = t ? floats_of(*t, what) : std::vector<float>{};
      if (f.size() != 1 || b.q_unit || b.k_unit) fail(n, "multiplies the transposed keys by something other than one constant");
      b.scale *= f[0];
      return next(s);
    }
    case Stage::kV:
      refuse();
  }
  refuse();
}

// The whole chain read: one windowAttention layer on the unpadded, unrolled image (channels-last
// out). Swin's output is seen through the same padding and roll until the graph rolls it back
// and crops it; MaxViT's in the same partition as its input.
Value Importer::window_emit(const onnx::NodeProto& n, const WindowBlock& b) {
  const int64_t seq = b.wh * b.ww, c = b.in.src.shape[2], key = b.heads * b.head_dim, plane = seq * seq;
  const int64_t value = b.heads * b.vd();
  const int64_t win[2] = {b.wh, b.ww};
  if (b.head_first && (!b.head_dim || 2 * key + value != b.qkv_cols))
    fail(n, "closes a window attention whose head-first Q/K/V was never split into Q, K and V");
  if (b.kv_only && !b.global_query)
    fail(n, "closes a window attention whose projection gives K and V only, without a global query for its queries");
  if (b.kv_only && (b.global_query->shape[2] != key || b.q_unit || b.k_unit))
    fail(n, "closes a global query attention whose query image " + b.global_query->shape.str() +
                " does not have the keys' " + std::to_string(key) +
                " channels, or that normalizes its queries or keys; dltrain reads GC ViT's");
  for (int k = 0; k < 2; ++k) {
    const int64_t r = b.in.roll[k];
    if (r != 0 && (r >= win[k] || b.in.full[k] <= win[k]))
      fail(n, "closes a window attention whose image was rolled by " + std::to_string(r) + " along axis " +
                  std::to_string(k + 1) + " (padded size " + std::to_string(b.in.full[k]) + ", window " +
                  std::to_string(win[k]) + "); dltrain shifts by less than the window, and only a dimension larger "
                  "than it");
  }
  const bool shifted = b.in.roll[0] > 0 || b.in.roll[1] > 0;
  if (shifted != !b.mask.empty())
    fail(n, shifted ? "closes a shifted window attention without the shift's mask"
                    : "closes an unshifted window attention that adds a mask by window");
  if (shifted) {  // the mask must be the one the layer computes
    const std::vector<float> want =
        window::shift_mask(b.in.full[0], b.in.full[1], b.wh, b.ww, b.in.roll[0], b.in.roll[1]);
    for (size_t k = 0; k < want.size(); ++k)
      if (std::fabs(b.mask[k] - want[k]) > 1e-3f) {
        const int64_t wnd = static_cast<int64_t>(k) / plane, i = static_cast<int64_t>(k) % plane / seq,
                      j = static_cast<int64_t>(k) % seq;
        fail(n, "adds a shift mask that differs from torchvision's (window " + std::to_string(wnd) + ", tokens " +
                    std::to_string(i) + " and " + std::to_string(j) + "): dltrain computes the mask itself");
      }
  }
  // The dense bias back into its table: row (dy + wh - 1) (2 ww - 1) + dx + ww - 1, one column per head.
  const int64_t rows = (2 * b.wh - 1) * (2 * b.ww - 1);
  std::vector<float> table(static_cast<size_t>(rows * b.heads), 0.f);
  if (!b.bias.empty()) {
    std::vector<bool> set(table.size(), false);
    for (int64_t h = 0; h < b.heads; ++h)
      for (int64_t i = 0; i < seq; ++i)
        for (int64_t j = 0; j < seq; ++j) {
          const size_t at = static_cast<size_t>(window::relative_row(i, j, b.wh, b.ww) * b.heads + h);
          const float v = b.bias[static_cast<size_t>((h * seq + i) * seq + j)];
          if (set[at] && std::fabs(table[at] - v) > 1e-6f * std::max(1.f, std::fabs(v)))
            fail(n, "closes a window attention whose score bias (node '" + b.bias_node +
                        "') is not a relative position bias (head " + std::to_string(h) + ", tokens " +
                        std::to_string(i) + " and " + std::to_string(j) +
                        " differ from another pair at the same offset)");
          table[at] = v;
          set[at] = true;
        }
  }
  // Cosine: unit Q and K, the scores times exp(LogitScale) per head (unscaled otherwise).
  const bool cosine = b.q_unit || b.k_unit;
  if (cosine && !(b.q_unit && b.k_unit))
    fail(n, "closes a window attention that normalizes only its " + std::string(b.q_unit ? "queries" : "keys") +
                "; dltrain's cosine attention normalizes both");
  std::vector<float> logit;
  if (cosine) {
    for (float v : b.logit.empty() ? std::vector<float>(static_cast<size_t>(b.heads), 1.f) : b.logit) {
      if (!(v > 0) || v > 100.f * (1 + 1e-6f))
        fail(n, "scales the cosine scores by " + std::to_string(v) + "; dltrain reads exp(LogitScale) in (0, 100]");
      logit.push_back(std::log(v));
    }
  } else if (!b.logit.empty()) {
    fail(n, "scales the window scores per head without normalizing the queries and keys (cosine attention)");
  }
  // dltrain scales the scores by 1 / sqrt(d); another scale goes into the queries.
  const double want = cosine ? 1.0 : 1.0 / std::sqrt(static_cast<double>(b.head_dim));
  const float f = std::fabs(b.scale / want - 1) < 1e-6 ? 1.f : static_cast<float>(b.scale / want);
  // Head-first: head h's columns are [h w, h w + d) for Q, then K, then dv for V (w = 2 d + dv);
  // dltrain's projection reads Q of every head, then K, then V.
  std::vector<float> qkv_w = b.qkv_w, qkv_b = b.qkv_b;
  if (b.head_first)
    for (int64_t h = 0; h < b.heads; ++h)
      for (int64_t i = 0; i < b.head_width; ++i) {
        const int64_t d = b.head_dim, from = h * b.head_width + i;
        const int64_t to = i < d ? h * d + i : i < 2 * d ? key + h * d + i - d : 2 * key + h * b.vd() + i - 2 * d;
        qkv_b[static_cast<size_t>(to)] = b.qkv_b[static_cast<size_t>(from)];
        for (int64_t r = 0; r < c; ++r)
          qkv_w[static_cast<size_t>(r * b.qkv_cols + to)] = b.qkv_w[static_cast<size_t>(r * b.qkv_cols + from)];
      }
  auto take = [&](int64_t col, int64_t count, float g, std::vector<float>& wt, std::vector<float>& bias) {
    projection_rows(qkv_w, qkv_b, c, b.qkv_cols, col, count, g, wt, bias);
  };
  std::vector<float> qw, qb, kw, kb, vw, vb;
  if (b.kv_only) {  // the global query as it is: another scale goes into the keys
    take(0, key, f, kw, kb);
    take(key, value, 1.f, vw, vb);
  } else {
    take(0, key, f, qw, qb);
    take(key, key, 1.f, kw, kb);
    take(2 * key, value, 1.f, vw, vb);
  }
  // NesT merges the heads channel by channel: its channel i heads + h is head h's channel i.
  auto merged = [&](int64_t i) { return b.nest ? (i % b.vd()) * b.heads + i / b.vd() : i; };
  std::vector<float> ow(static_cast<size_t>(b.out * value));
  for (int64_t o = 0; o < b.out; ++o)
    for (int64_t i = 0; i < value; ++i)
      ow[static_cast<size_t>(o * value + i)] = b.proj_w[static_cast<size_t>(merged(i) * b.out + o)];
  std::vector<std::string> inputs{b.in.src.name};
  if (b.kv_only) inputs.push_back(b.global_query->name);
  LayerSpec& s = add_layer("windowAttention", unique_name(n), inputs);
  if (b.kv_only) s.set("GlobalQuery", "true");
  s.set("NumHeads", std::to_string(b.heads));
  set_list(s, "WindowSize", {b.wh, b.ww});
  if (shifted) set_list(s, "ShiftSize", {b.in.roll[0], b.in.roll[1]});
  if (b.grid) s.set("Partition", "grid");
  s.set("NumKeyChannels", std::to_string(key));
  s.set("NumValueChannels", std::to_string(value));
  s.set("OutputSize", std::to_string(b.out));
  if (b.bias.empty()) s.set("RelativePositionBias", "false");
  if (cosine) s.set("CosineAttention", "true");
  const std::string name = s.name;
  last_layer_op_ = n.op_type();
  if (!b.kv_only) add_param(name, "QueryWeights", Shape{key, c}, std::move(qw));
  add_param(name, "KeyWeights", Shape{key, c}, std::move(kw));
  add_param(name, "ValueWeights", Shape{value, c}, std::move(vw));
  add_param(name, "OutputWeights", Shape{b.out, value}, std::move(ow));
  if (!b.kv_only) add_param(name, "QueryBias", Shape{key}, std::move(qb));
  add_param(name, "KeyBias", Shape{key}, std::move(kb));
  add_param(name, "ValueBias", Shape{value}, std::move(vb));
  add_param(name, "OutputBias", Shape{b.out}, b.proj_b);
  if (!b.bias.empty()) add_param(name, "RelativePositionBias", Shape{rows, b.heads}, std::move(table));
  if (cosine) add_param(name, "LogitScale", Shape{b.heads}, std::move(logit));
  Value y{name, Shape{b.in.src.shape[0], b.in.src.shape[1], b.out}, false};
  y.channels_last = true;
  return y;
}

}  // namespace dlt::onnx_detail
