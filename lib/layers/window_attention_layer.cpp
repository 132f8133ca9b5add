// windowAttention: dltrain's own layer (MATLAB has none; torchvision's ShiftedWindowAttention,
// the attention of Swin Transformer) on images (SSCB): multi-head self-attention within
// WindowSize windows of pixels, each pixel a token of C channels. Per image:
//   1. pad the bottom and right with zero pixels to whole windows, roll the padded image up and
//      left by ShiftSize (cyclic), cut it into windows of S = wh x ww tokens (row by row);
//   2. attention in every window (attention_core.h: the projections and learnables of
//      selfAttention), the scores plus a relative position bias B[h, i, j] = table[rel(i, j), h]
//      (RelativePositionBias, (2 wh - 1) (2 ww - 1) rows of NumHeads: the offset between tokens
//      i and j, (dy + wh - 1) (2 ww - 1) + dx + ww - 1) and, when shifted, -100 between tokens
//      that came from different regions of the unrolled image (torchvision's mask);
//   3. the windows back in place, rolled back, the padding cut off: (H, W, OutputSize).
// As torchvision: padded tokens take part in the attention (zero before the projections), and
// a dimension whose padded size is no larger than its window is not shifted.
// CosineAttention (Swin V2's ShiftedWindowAttentionV2): Q and K normalized per head, the scores
// their cosine times exp(min(LogitScale, log 100)) per head (a learnable, log(10) at first),
// unscaled otherwise (attention_core.h).
// Partition grid (MaxViT's grid attention) forms each window from pixels spaced apart instead:
// WindowSize must divide the image, and window (i, j) of the (H / wh) x (W / ww) windows holds
// the pixels (a H / wh + i, b W / ww + j), token a ww + b (torchvision's PartitionAttentionLayer
// with partition_type "grid": its partition and axis swap); no padding, no shift.
// GlobalQuery (GC ViT's global attention, timm's WindowAttentionGlobal): a second input, the
// image's global query, a WindowSize image of NumKeyChannels channels, gives the queries of
// every window of its image (token t of each window the query's pixel t, row by row), taken as
// they are: no query projection (no QueryWeights or QueryBias); its gradient sums the windows'.
// The partition, its reverse, the global query's copies and the table's spread to (heads, S, S)
// are row gathers (backend/token_ops.h); shifted, the spread table is added to each window's
// constant mask (a batch broadcast), and its gradient sums the windows' shares.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backend/token_ops.h"
#include "layers/attention_core.h"
#include "layers/layer_util.h"
#include "layers/window_geometry.h"

namespace dlt {

namespace {

class WindowAttentionLayer final : public Layer {
 public:
  explicit WindowAttentionLayer(const LayerSpec& spec) : Layer(spec) {
    heads_ = spec_.get_int("NumHeads", 0, 1);
    if (heads_ == 0) throw ConfigError(spec.where() + "option NumHeads is required (e.g. NumHeads: 3)");
    const std::vector<int64_t> w = spec_.get_ints("WindowSize", {0, 0}, 2, 1);
    if (w[0] == 0) throw ConfigError(spec.where() + "option WindowSize is required (e.g. WindowSize: 7)");
    win_h_ = w[0];
    win_w_ = w[1];
    const std::vector<int64_t> sh = spec_.get_ints("ShiftSize", {0, 0}, 2, 0);
    shift_h_ = sh[0];
    shift_w_ = sh[1];
    if (shift_h_ >= win_h_ || shift_w_ >= win_w_)
      throw ConfigError(spec.where() + "option ShiftSize [" + std::to_string(shift_h_) + " " +
                        std::to_string(shift_w_) + "] must be smaller than WindowSize [" + std::to_string(win_h_) +
                        " " + std::to_string(win_w_) + "] (Swin shifts by half a window)");
    grid_ = spec_.get_choice("Partition", "window", {"window", "grid"}) == "grid";
    global_ = spec_.get_bool("GlobalQuery", false);
    if (grid_ && (shift_h_ > 0 || shift_w_ > 0))
      throw ConfigError(spec.where() + "option ShiftSize must be 0 with Partition grid (grid windows are not shifted)");
    key_ = auto_int("NumKeyChannels", 0);  // 0: the input's channels
    value_ = auto_int("NumValueChannels", 0);
    out_ = auto_int("OutputSize", 0);
    relative_ = spec_.get_bool("RelativePositionBias", true);
    cosine_ = spec_.get_bool("CosineAttention", false);
    dropout_ = spec_.get_double("DropoutProbability", 0.0);
    if (dropout_ < 0 || dropout_ >= 1)
      throw ConfigError(spec.where() + "option DropoutProbability must be in [0, 1), got " + std::to_string(dropout_));
    weight_ = make_param(spec_, "Weight", Shape{}, parse_initializer(spec_, "WeightsInitializer", "glorot"), 1.f);
    bias_ = make_param(spec_, "Bias", Shape{}, parse_initializer(spec_, "BiasInitializer", "zeros"), 0.f);
    table_ = make_param(spec_, "RelativePositionBias", Shape{},
                        parse_initializer(spec_, "RelativePositionBiasInitializer", "narrow-normal"), 0.f);
    logit_ = make_param(spec_, "LogitScale", Shape{}, Init::kZeros, 0.f);  // init_params: log(10)
  }

  int num_inputs() const override { return global_ ? 2 : 1; }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, global_ ? 2 : 1);
    h_ = inputs[0][0];
    w_ = inputs[0][1];
    s_.c = inputs[0][2];
    s_.heads = heads_;
    s_.query_input = global_;
    s_.key = key_ ? key_ : global_ ? inputs[1][2] : s_.c;
    if (global_ && (inputs[1][0] != win_h_ || inputs[1][1] != win_w_ || inputs[1][2] != s_.key))
      shape_error(spec_, "the global query (input 2) is " + inputs[1].str() +
                             "; GlobalQuery needs a WindowSize image of NumKeyChannels channels, " +
                             Shape{win_h_, win_w_, s_.key}.str());
    s_.value = value_ ? value_ : s_.key;
    s_.out = out_ ? out_ : s_.c;
    for (auto [what, n] : {std::pair<const char*, int64_t>{"NumKeyChannels", s_.key}, {"NumValueChannels", s_.value}})
      if (n % heads_ != 0)
        shape_error(spec_, std::string(what) + " (" + std::to_string(n) + ") must be a multiple of NumHeads (" +
                               std::to_string(heads_) + "): it is the total over the heads");
    if (global_ && s_.value != s_.key)
      shape_error(spec_, "NumValueChannels (" + std::to_string(s_.value) + ") must equal the global query's " +
                             std::to_string(s_.key) + " channels with GlobalQuery (GC ViT's keys and values)");
    if (grid_ && (h_ % win_h_ != 0 || w_ % win_w_ != 0))
      shape_error(spec_, "WindowSize [" + std::to_string(win_h_) + " " + std::to_string(win_w_) +
                             "] does not divide the input's " + std::to_string(h_) + "x" + std::to_string(w_) +
                             " pixels, which Partition grid needs");
    pad_h_ = (h_ + win_h_ - 1) / win_h_ * win_h_;
    pad_w_ = (w_ + win_w_ - 1) / win_w_ * win_w_;
    params_.clear();
    AttentionCore::add_params(params_, weight_, bias_, s_);
    if (relative_) {
      Param t = table_;
      t.name = "RelativePositionBias";
      t.shape = Shape{(2 * win_h_ - 1) * (2 * win_w_ - 1), heads_};
      t.fan_in = t.fan_out = heads_;
      params_.push_back(t);
    }
    if (cosine_) {
      Param t = logit_;
      t.shape = Shape{heads_};
      params_.push_back(t);
    }
    return Shape{h_, w_, s_.out};
  }

  void setup(int64_t n, Backend& be) override {
    be_ = &be;
    const int64_t seq = win_h_ * win_w_, windows = windows_per_image();
    if (global_) {  // window token r reads the global query's pixel r % S
      std::vector<int64_t> copies(static_cast<size_t>(windows * seq));
      for (size_t r = 0; r < copies.size(); ++r) copies[r] = static_cast<int64_t>(r) % seq;
      queries_ = be.make(RowGatherDesc{n, seq, windows * seq, s_.key, copies});
    }
    const std::vector<int64_t> part = partition_index();
    part_ = be.make(RowGatherDesc{n, h_ * w_, windows * seq, s_.c, part});
    std::vector<int64_t> back(static_cast<size_t>(h_ * w_), -1);
    for (size_t r = 0; r < part.size(); ++r)
      if (part[r] >= 0) back[static_cast<size_t>(part[r])] = static_cast<int64_t>(r);
    reverse_ = be.make(RowGatherDesc{n, windows * seq, h_ * w_, s_.out, back});
    const bool shifted = shift(true) > 0 || shift(false) > 0;
    bias_n_ = shifted ? windows : relative_ ? 1 : 0;
    core_.setup(be, s_, n * windows, seq, false, static_cast<float>(dropout_), bias_n_, mixed_, cosine_);
    xw_ = Tensor(Shape{n * windows * seq, s_.c}, be.device());
    yw_ = Tensor(Shape{n * windows * seq, s_.out}, be.device());
    dxw_ = Tensor(Shape{n * windows * seq, s_.c}, be.device());
    if (bias_n_ == 0) return;
    const int64_t plane = heads_ * seq * seq;
    if (shifted) fill_mask(windows, seq, plane);
    if (!relative_) return;
    // The table spread to (heads, S, S) once, then added to each window's mask.
    const int64_t rows = (2 * win_h_ - 1) * (2 * win_w_ - 1);
    spread_ = be.make(RowGatherDesc{1, rows * heads_, plane, 1, table_index(seq)});
    rel_ = Tensor(Shape{1, heads_, seq, seq}, be.device());
    drel_ = Tensor(Shape{1, heads_, seq, seq}, be.device());
    if (!shifted) return;
    broadcast_ = be.make(BatchBroadcastDesc{bias_n_, plane});
    dense_ = Tensor(Shape{bias_n_, heads_, seq, seq}, be.device());
    ddense_ = Tensor(Shape{bias_n_, heads_, seq, seq}, be.device());
  }

  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    part_->forward(*x[0], xw_);
    if (global_) queries_->forward(*x[1], core_.query());
    if (relative_) spread_->forward(table().value, rel_);
    if (relative_ && mask_.defined()) broadcast_->add(mask_, rel_, dense_);
    if (bias_n_ > 0) core_.attention().set_bias(!relative_ ? mask_ : mask_.defined() ? dense_ : rel_);
    const bool drop = ctx.training && dropout_ > 0;
    core_.forward(xw_, yw_, params_.data(), drop,
                  drop ? Rng::derive(ctx.seed, {dropout_stream(name(), ctx.iteration)}).next_u64() : 0,
                  cosine_ ? &params_.back() : nullptr);
    reverse_->forward(yw_, y);
  }

  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    reverse_->backward(dy, yw_);  // dY in windows (padded tokens 0), over the forward's windows
    const bool learn_table = relative_ && !table().frozen();
    Tensor* dbias = !learn_table ? nullptr : mask_.defined() ? &ddense_ : &drel_;
    core_.backward(xw_, yw_, dx[0] ? &dxw_ : nullptr, params_.data(), dbias, cosine_ ? &params_.back() : nullptr);
    if (learn_table && mask_.defined()) broadcast_->sum(ddense_, drel_);  // the windows' shares of the table
    if (learn_table) spread_->backward(drel_, table().grad);
    if (dx[0]) part_->backward(dxw_, *dx[0]);
    if (global_ && dx[1]) queries_->backward(core_.query_grad(), *dx[1]);  // the windows' shares summed
  }

  // ONNX: torchvision's shifted_window_attention as PyTorch's dynamo exporter writes it (and
  // dltrain's import reads it back) on the channels-last image: zero Pad, the roll as Slices
  // and a Concat per axis, the partition (Reshape, Transpose, Reshape), the joint Q/K/V MatMul,
  // the heads (Reshape, Transpose, Gather; keys and values of different widths: timm's head-first Reshape,
  // Transpose and Split), the scaled scores plus the spread table and the
  // shift's mask, Softmax, the output projection, the reverse, the roll back and the crop.
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    OnnxValue in = inputs.at(0);
    if (in.flat) in = g.image(n, in);
    const int64_t seq = win_h_ * win_w_, windows = windows_per_image(), key = s_.key, d = key / heads_, c = s_.c;
    const int64_t value = s_.value, dv = value / heads_;
    const int64_t sh = shift(true), sw = shift(false), gh = pad_h_ / win_h_, gw = pad_w_ / win_w_;
    auto node = [&](const std::string& op, const std::string& tag, const std::vector<std::string>& ins,
                    const std::vector<OnnxAttr>& attrs = {}) { return g.node(op, n + tag, ins, attrs); };
    auto reshape = [&](const std::string& x, const std::string& tag, const std::vector<int64_t>& dims) {
      return node("Reshape", tag, {x, g.add_ints(n + tag + "_shape", {static_cast<int64_t>(dims.size())}, dims)});
    };
    auto transpose = [&](const std::string& x, const std::string& tag, const std::vector<int64_t>& perm) {
      return node("Transpose", tag, {x}, {OnnxAttr("perm", perm)});
    };
    auto slice = [&](const std::string& x, const std::string& tag, const std::vector<int64_t>& start,
                     const std::vector<int64_t>& end, const std::vector<int64_t>& axes) {
      const int64_t k = static_cast<int64_t>(axes.size());
      return node("Slice", tag,
                  {x, g.add_ints(n + tag + "_starts", {k}, start), g.add_ints(n + tag + "_ends", {k}, end),
                   g.add_ints(n + tag + "_axes", {k}, axes)});
    };
    // x[at:] then x[:at] along axis: torch.roll by -at.
    auto roll = [&](const std::string& x, const std::string& tag, int64_t axis, int64_t at, int64_t len) {
      const std::string tail = slice(x, tag + "_tail", {at}, {len}, {axis});
      const std::string head = slice(x, tag + "_head", {0}, {at}, {axis});
      return node("Concat", tag, {tail, head}, {OnnxAttr("axis", axis)});
    };
    std::string x = transpose(in.name, "_hwc", {0, 2, 3, 1});
    if (pad_h_ > h_ || pad_w_ > w_)
      x = node("Pad", "_pad", {x, g.add_ints(n + "_pads", {8}, {0, 0, 0, 0, 0, pad_h_ - h_, pad_w_ - w_, 0})});
    if (sh) x = roll(x, "_roll_h", 1, sh, pad_h_);
    if (sw) x = roll(x, "_roll_w", 2, sw, pad_w_);
    if (grid_) {
      x = reshape(x, "_split", {-1, win_h_, gh, win_w_, gw, c});
      x = transpose(x, "_windows", {0, 2, 4, 1, 3, 5});
    } else {
      x = reshape(x, "_split", {-1, gh, win_h_, gw, win_w_, c});
      x = transpose(x, "_windows", {0, 1, 3, 2, 4, 5});
    }
    x = reshape(x, "_tokens", {-1, seq, c});
    std::vector<float> w, b;
    std::string part[3];
    // Q, K and V (K and V from `first` 1) of every head from one MatMul, then their heads.
    auto joint = [&](int64_t first, const std::string& names) {
      const int64_t parts = 3 - first, biases = AttentionCore::param_count(s_) / 2;
      for (int64_t p = 0; p < parts; ++p) {
        const std::vector<float> pw = host_values(params_[static_cast<size_t>(p)].value),
                                 pb = host_values(params_[static_cast<size_t>(biases + p)].value);
        w.insert(w.end(), pw.begin(), pw.end());
        b.insert(b.end(), pb.begin(), pb.end());
      }
      const std::string joined = "_" + names;
      x = g.tokens_linear(n + joined, x, w, parts * key, c, b);
      x = reshape(x, joined + "_heads", {-1, seq, parts, heads_, d});
      x = transpose(x, joined + "_t", {2, 0, 3, 1, 4});
      for (int64_t p = 0; p < parts; ++p) {
        const std::string tag = std::string("_") + names[static_cast<size_t>(p)];
        part[first + p] =
            node("Gather", tag, {x, g.add_ints(n + tag + "_index", {}, {p})}, {OnnxAttr("axis", int64_t{0})});
      }
    };
    if (global_) {  // timm's WindowAttentionGlobal: K and V of every head, then their heads
      joint(1, "kv");
      // The global query (N, K, wh, ww) channels-last, one copy per window of its image.
      OnnxValue gq = inputs.at(1);
      if (gq.flat) gq = g.image(n + "_gq", gq);
      std::string q = transpose(gq.name, "_gq_hwc", {0, 2, 3, 1});
      q = node("Unsqueeze", "_gq_one", {q, g.add_ints(n + "_gq_axis", {1}, {1})});
      q = node("Expand", "_gq_copies", {q, g.add_ints(n + "_gq_windows", {5}, {1, windows, 1, 1, 1})});
      q = reshape(q, "_gq_heads", {-1, seq, heads_, d});
      part[0] = transpose(q, "_q", {0, 2, 1, 3});
    } else if (key == value) {  // torchvision's: Q, K and V of every head, then their heads
      joint(0, "qkv");
    } else {  // keys and values of different widths: timm's head-first form (EfficientFormer), head h's Q, K, V side by
              // side
      const std::vector<float> pw[3] = {host_values(params_[0].value), host_values(params_[1].value),
                                        host_values(params_[2].value)};
      const std::vector<float> pb[3] = {host_values(params_[4].value), host_values(params_[5].value),
                                        host_values(params_[6].value)};
      for (int64_t h = 0; h < heads_; ++h)
        for (int64_t p = 0; p < 3; ++p) {
          const int64_t width = p == 2 ? dv : d, rows = h * width;  // rows of a (channels, C) weight
          w.insert(w.end(), pw[p].begin() + rows * c, pw[p].begin() + (rows + width) * c);
          b.insert(b.end(), pb[p].begin() + rows, pb[p].begin() + rows + width);
        }
      x = g.tokens_linear(n + "_qkv", x, w, 2 * key + value, c, b);
      x = reshape(x, "_qkv_heads", {-1, seq, heads_, 2 * d + dv});
      x = transpose(x, "_qkv_t", {0, 2, 1, 3});
      g.add_node_outputs("Split", n + "_qkv_split", {x, g.add_ints(n + "_qkv_sizes", {3}, {d, d, dv})},
                         {n + "_q", n + "_k", n + "_v"}, {OnnxAttr("axis", int64_t{3})});
      part[0] = n + "_q";
      part[1] = n + "_k";
      part[2] = n + "_v";
    }
    std::string q = part[0], k = part[1];
    if (cosine_) {  // F.normalize: x / max(|x|, eps) over each head's channels
      auto unit = [&](const std::string& x, const std::string& tag) {
        const std::string norm = node("ReduceL2", tag + "_norm", {x},
                                      {OnnxAttr("axes", std::vector<int64_t>{-1}), OnnxAttr("keepdims", int64_t{1})});
        const std::string eps = g.add_floats(n + tag + "_eps", {}, {HeadNormalizeDesc::kEps});
        return node("Div", tag + "_unit", {x, node("Clip", tag + "_clip", {norm, eps})});
      };
      q = unit(q, "_q");
      k = unit(k, "_k");
    } else {
      AttentionDesc desc;
      desc.key_dim = d;
      q = node("Mul", "_q_scaled", {q, g.add_floats(n + "_scale", {}, {desc.scale_or_default()})});
    }
    std::string scores = node("MatMul", "_scores", {q, transpose(k, "_k_t", {0, 1, 3, 2})});
    if (cosine_) {
      std::vector<float> scale = host_values(params_.back().value);
      for (float& v : scale) v = std::exp(std::min(v, static_cast<float>(HeadNormalizeDesc{}.max_log_scale)));
      scores = node("Mul", "_logit", {scores, g.add_floats(n + "_logit_scale", {heads_, 1, 1}, scale)});
    }
    if (relative_) {
      const std::vector<float> table = host_values(this->table().value);
      std::vector<float> dense;
      for (int64_t i : table_index(seq)) dense.push_back(table[static_cast<size_t>(i)]);
      scores = node("Add", "_biased", {scores, g.add_floats(n + "_bias", {1, heads_, seq, seq}, dense)});
    }
    if (sh || sw) {
      scores = reshape(scores, "_by_window", {-1, windows, heads_, seq, seq});
      scores = node("Add", "_masked", {scores, g.add_floats(n + "_mask", {1, windows, 1, seq, seq}, shift_mask())});
      scores = reshape(scores, "_unmasked", {-1, heads_, seq, seq});
    }
    x = node("Softmax", "_probs", {scores}, {OnnxAttr("axis", int64_t{-1})});
    x = node("MatMul", "_heads", {x, part[2]});
    x = transpose(x, "_heads_t", {0, 2, 1, 3});
    x = reshape(x, "_merged", {-1, seq, value});
    const size_t proj = global_ ? 2 : 3;  // the output projection's weights; its bias 3 (2) later
    x = g.tokens_linear(n + "_proj", x, host_values(params_[proj].value), s_.out, value,
                        host_values(params_[proj + (global_ ? 3 : 4)].value));
    if (grid_) {
      x = reshape(x, "_rev_split", {-1, gh, gw, win_h_, win_w_, s_.out});
      x = transpose(x, "_rev_t", {0, 3, 1, 4, 2, 5});
    } else {
      x = reshape(x, "_rev_split", {-1, gh, gw, win_h_, win_w_, s_.out});
      x = transpose(x, "_rev_t", {0, 1, 3, 2, 4, 5});
    }
    x = reshape(x, "_rev", {-1, pad_h_, pad_w_, s_.out});
    if (sh) x = roll(x, "_unroll_h", 1, pad_h_ - sh, pad_h_);
    if (sw) x = roll(x, "_unroll_w", 2, pad_w_ - sw, pad_w_);
    if (pad_h_ > h_ || pad_w_ > w_) x = slice(x, "_crop", {0, 0}, {h_, w_}, {1, 2});
    g.add_node("Transpose", n, {x}, n, {OnnxAttr("perm", std::vector<int64_t>{0, 3, 1, 2})});
    return OnnxValue{n, out, false};
  }

  int64_t flops_per_image() const override { return windows_per_image() * AttentionCore::flops(s_, win_h_ * win_w_); }
  std::vector<std::string> learnable_options() const override {
    return {"Weight", "Bias", "RelativePositionBias", "LogitScale"};
  }
  // Swin V2's logit scale starts at log(10) for every head.
  void init_params(Rng& rng) override {
    Layer::init_params(rng);
    if (!cosine_) return;
    Tensor h(Shape{heads_});
    std::fill(h.data(), h.data() + heads_, std::log(10.f));
    params_.back().value.copy_from(h);
  }
  bool stochastic() const override { return dropout_ > 0; }

 private:
  int64_t auto_int(const std::string& key, int64_t def) const {
    const SpecValue* v = spec_.get(key);
    if (v && !v->is_list && v->items.size() == 1 && v->items[0] == "auto") return def;
    return spec_.get_int(key, def, 1);
  }
  int64_t windows_per_image() const { return (pad_h_ / win_h_) * (pad_w_ / win_w_); }
  // The relative position table: after the projections' learnables.
  Param& table() { return params_[static_cast<size_t>(AttentionCore::param_count(s_))]; }
  const Param& table() const { return params_[static_cast<size_t>(AttentionCore::param_count(s_))]; }
  // The shift of a dimension: none where the padded size is no larger than the window.
  int64_t shift(bool rows) const {
    return rows ? (win_h_ >= pad_h_ ? 0 : shift_h_) : (win_w_ >= pad_w_ ? 0 : shift_w_);
  }
  // For each window token (window by window, row by row in each), the pixel it reads (y * W + x
  // of the unpadded image) or -1 (padding): the padded image rolled by -shift.
  std::vector<int64_t> partition_index() const {
    std::vector<int64_t> index;
    if (grid_) {  // window (i, j) of the (gh, gw) offsets, token (a, b): pixel (a gh + i, b gw + j)
      const int64_t gh = h_ / win_h_, gw = w_ / win_w_;
      for (int64_t i = 0; i < gh; ++i)
        for (int64_t j = 0; j < gw; ++j)
          for (int64_t a = 0; a < win_h_; ++a)
            for (int64_t b = 0; b < win_w_; ++b) index.push_back((a * gh + i) * w_ + b * gw + j);
      return index;
    }
    const int64_t sh = shift(true), sw = shift(false);
    for (int64_t wy = 0; wy < pad_h_ / win_h_; ++wy)
      for (int64_t wx = 0; wx < pad_w_ / win_w_; ++wx)
        for (int64_t y = 0; y < win_h_; ++y)
          for (int64_t x = 0; x < win_w_; ++x) {
            const int64_t py = (wy * win_h_ + y + sh) % pad_h_, px = (wx * win_w_ + x + sw) % pad_w_;
            index.push_back(py < h_ && px < w_ ? py * w_ + px : -1);
          }
    return index;
  }
  // The table row of each (head, i, j) of the spread bias: rel(i, j) * heads + head.
  std::vector<int64_t> table_index(int64_t seq) const {
    std::vector<int64_t> index;
    index.reserve(static_cast<size_t>(heads_ * seq * seq));
    for (int64_t h = 0; h < heads_; ++h)
      for (int64_t i = 0; i < seq; ++i)
        for (int64_t j = 0; j < seq; ++j) index.push_back(window::relative_row(i, j, win_h_, win_w_) * heads_ + h);
    return index;
  }
  // torchvision's mask (window_geometry.h): (windows, S, S), the same for every head.
  std::vector<float> shift_mask() const {
    return window::shift_mask(pad_h_, pad_w_, win_h_, win_w_, shift(true), shift(false));
  }
  void fill_mask(int64_t windows, int64_t seq, int64_t plane) {
    Tensor host(Shape{windows, heads_, seq, seq});
    const std::vector<float> m = shift_mask();
    for (int64_t wnd = 0; wnd < windows; ++wnd)
      for (int64_t h = 0; h < heads_; ++h)
        std::copy_n(m.begin() + wnd * seq * seq, seq * seq, host.data() + wnd * plane + h * seq * seq);
    mask_ = host.to(be_->device());
  }

  int64_t heads_ = 1, win_h_ = 1, win_w_ = 1, shift_h_ = 0, shift_w_ = 0, key_ = 0, value_ = 0, out_ = 0;
  int64_t h_ = 1, w_ = 1, pad_h_ = 1, pad_w_ = 1, bias_n_ = 0;
  bool relative_ = true, grid_ = false, cosine_ = false, global_ = false;
  double dropout_ = 0;
  AttentionSizes s_;
  Param weight_, bias_, table_, logit_;
  Backend* be_ = nullptr;
  AttentionCore core_;
  std::unique_ptr<RowGatherOp> part_, reverse_, spread_, queries_;  // queries_: the global query's copies
  std::unique_ptr<BatchBroadcastOp> broadcast_;  // the spread table onto each window's mask
  Tensor xw_, yw_, dxw_;                         // the windows' tokens, the attention's output, dX in windows
  Tensor rel_, drel_;                            // the table spread to (1, heads, S, S), and its gradient
  Tensor dense_, ddense_;  // shifted with a table: mask + rel_ (bias_n, heads, S, S), its gradient
  Tensor mask_;            // the shifted windows' mask (bias_n, heads, S, S), or undefined
};

}  // namespace

const LayerType& window_attention_layer_type() {
  static const LayerType t{
      "windowAttention",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<WindowAttentionLayer>(s); },
      {},
      nullptr};
  return t;
}

}  // namespace dlt
