// maxPooling2d, averagePooling2d, globalAveragePooling2d and globalMaxPooling2d on the
// backend's PoolOp (a global pooling is one window of the whole input). MATLAB defaults:
// Stride 1, Padding 0; average pooling counts padding as zeros (PaddingValue 0) or leaves it
// out of each window's divisor (PaddingValue mean); max pooling's gradient goes to the first
// maximum of each window, rows first.
#include <algorithm>
#include <functional>
#include <memory>

#include "layers/layer_util.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace dlt {

namespace {

class PoolingLayer final : public Layer {
 public:
  // An image layer: not on token sequences.
  bool takes(DataFormat f) const override { return f != DataFormat::kSCB; }
  PoolingLayer(const LayerSpec& spec, PoolKind kind, bool global) : Layer(spec), kind_(kind), global_(global) {
    if (!global_) {
      auto ps = spec_.get_ints("PoolSize", {}, 2, 1);
      if (ps.empty()) throw ConfigError(spec.where() + "option PoolSize is required (e.g. PoolSize: 2)");
      kh_ = ps[0];
      kw_ = ps[1];
      auto st = spec_.get_ints("Stride", {1, 1}, 2, 1);
      sh_ = st[0];
      sw_ = st[1];
      spec_.get("Padding");
      // MATLAB's PaddingValue: 0 (the padding counts as zeros) or "mean" (padded with each
      // window's mean: the average over the taps inside the input; ONNX's count_include_pad 0).
      if (kind_ == PoolKind::kAverage)
        exclude_padding_ = spec_.get_choice("PaddingValue", "0", {"0", "mean"}) == "mean";
      // SegNet: keep where each maximum came from, for a maxUnpooling2d (MATLAB's 'indices'
      // and 'size' outputs; here the unpooling layer names this layer).
      if (kind_ == PoolKind::kMax) keep_indices_ = spec_.get_bool("HasUnpoolingOutputs", false);
    }
    traits_.takes_relu_backward = kind_ == PoolKind::kMax && !global_;
  }

  bool keeps_indices() const { return keep_indices_; }
  // int32 (N, Ho, Wo, C): the input-plane position h * W + w of each output's maximum, from
  // the last forward (training or inference).
  const Tensor& indices() const { return indices_; }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    h_ = inputs[0][0];
    w_ = inputs[0][1];
    c_ = inputs[0][2];
    if (global_) {
      kh_ = h_;
      kw_ = w_;
    } else {
      auto pad = parse_padding(spec_, h_, w_, kh_, kw_, sh_, sw_);
      pt_ = pad[0];
      pb_ = pad[1];
      pl_ = pad[2];
      pr_ = pad[3];
      if (h_ + pt_ + pb_ < kh_ || w_ + pl_ + pr_ < kw_)
        shape_error(spec_, "input is " + inputs[0].str() + " but PoolSize is " + std::to_string(kh_) + "x" +
                               std::to_string(kw_) + " (use a smaller PoolSize or add Padding)");
      if (pt_ >= kh_ || pb_ >= kh_ || pl_ >= kw_ || pr_ >= kw_)
        shape_error(spec_, "Padding must be smaller than PoolSize");
    }
    PoolDesc d = desc(1);
    // Max pooling without padding whose indices no unpooling layer reads, windows of at most
    // 256 values: a batchNormalization with a ReLU may run it (FusionTraits::plain_max_pool).
    traits_.plain_max_pool =
        kind_ == PoolKind::kMax && !global_ && !keep_indices_ && !(pt_ || pb_ || pl_ || pr_) && kh_ * kw_ <= 256;
    if (traits_.plain_max_pool) traits_.max_pool = d;
    return Shape{d.out_h(), d.out_w(), c_};
  }

  void setup(int64_t n, Backend& be) override {
    op_ = be.make(desc(n));
    be_ = &be;
    n_ = n;
    if (keep_indices_) indices_ = Tensor(Shape{n, desc(1).out_h(), desc(1).out_w(), c_}, be.device(), DType::kI32);
    if (fusion_.takes_relu_backward)
      relu_ = be.make(ActDesc{n * desc(1).out_h() * desc(1).out_w() * c_, ActKind::kRelu, 0.f});
  }

  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    op_->forward(*x[0], y, ctx.training);
    if (keep_indices_) be_->max_pool_indices(*x[0], indices_, desc(n_));
  }

  void backward(const std::vector<const Tensor*>&, const Tensor& y, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (!dx[0]) return;
    if (fusion_.takes_relu_backward) relu_->backward(y, y, dy, dy);  // the producer's fused ReLU (Fusion)
    op_->backward(dy, *dx[0]);
  }

  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    OnnxValue x = g.image(n, inputs.at(0));
    if (global_) {
      g.add_node(kind_ == PoolKind::kMax ? "GlobalMaxPool" : "GlobalAveragePool", n, {x.name}, n);
      return OnnxValue{n, out, false};
    }
    const bool avg = kind_ == PoolKind::kAverage;
    std::string src = x.name;
    std::vector<int64_t> pads = {pt_, pl_, pb_, pr_};
    if (avg && !exclude_padding_ && (pt_ || pb_ || pl_ || pr_)) {
      // Zeros counted in the average: an explicit Pad, as PyTorch exports it (OpenCV 4.6
      // gets AveragePool with pads and count_include_pad wrong).
      g.add_ints(n + "_pads", {8}, {0, 0, pt_, pl_, 0, 0, pb_, pr_});
      g.add_node("Pad", n + "_pad", {src, n + "_pads"}, n + "_padded");
      src = n + "_padded";
      pads = {0, 0, 0, 0};
    }
    const std::vector<OnnxAttr> attrs = {OnnxAttr("kernel_shape", std::vector<int64_t>{kh_, kw_}),
                                         OnnxAttr("strides", std::vector<int64_t>{sh_, sw_}), OnnxAttr("pads", pads)};
    if (keep_indices_)  // MaxPool's Indices output, which the maxUnpooling2d's MaxUnpool reads
      g.add_node_outputs("MaxPool", n, {src}, {n, indices_onnx_name()}, attrs);
    else
      g.add_node(avg ? "AveragePool" : "MaxPool", n, {src}, n, attrs);
    return OnnxValue{n, out, false};
  }

  std::string indices_onnx_name() const { return name() + "_indices"; }

  // MaxPool / AveragePool; a preceding zero Pad folds into an AveragePool's padding (it
  // counts padding as zeros), ceil_mode into extra bottom / right padding of a MaxPool. An
  // AveragePool with pads and count_include_pad 0 is PaddingValue mean. A
  // MaxPool's Indices output makes a maxPooling2d with HasUnpoolingOutputs (read by MaxUnpool).
  static void from_onnx(OnnxNodeReader& r) {
    bool avg = r.op() == "AveragePool";
    const OnnxValue in = r.input(0, avg);
    r.need_image(in);
    auto ks = r.attr_ints("kernel_shape", {});
    auto st = r.attr_ints("strides", {1, 1});
    if (ks.size() != 2 || st.size() != 2) r.fail("kernel_shape and strides must have 2 values (2-D pooling only)");
    for (int64_t d : r.attr_ints("dilations", {1, 1}))
      if (d != 1) r.fail("dilated pooling is not supported");
    auto p = r.pads(in.shape, ks[0], ks[1], st[0], st[1]);
    const bool exclude = avg && (p[0] || p[1] || p[2] || p[3]) && r.attr_int("count_include_pad", 0) == 0;
    if (exclude && (in.pad[0] || in.pad[1] || in.pad[2] || in.pad[3]))
      r.fail(
          "count_include_pad is 0 after a Pad node: the Pad's zeros would count in the average and the "
          "pads would not, which one averagePooling2d cannot do");
    for (int i = 0; i < 4; ++i) p[i] += in.pad[i];  // a Pad node's zeros count in the average
    int64_t h = in.shape[0], w = in.shape[1];
    auto size = [](int64_t x, int64_t a, int64_t b, int64_t k, int64_t s, bool ceil_mode) {
      int64_t span = x + a + b - k;
      int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
      if (ceil_mode && (o - 1) * s >= x + a) --o;  // the last window must start inside the input
      return o;
    };
    bool ceil_mode = r.attr_int("ceil_mode", 0) != 0;
    int64_t oh = size(h, p[0], p[2], ks[0], st[0], ceil_mode), ow = size(w, p[1], p[3], ks[1], st[1], ceil_mode);
    int64_t eb = std::max<int64_t>((oh - 1) * st[0] + ks[0] - (h + p[0] + p[2]), 0);
    int64_t er = std::max<int64_t>((ow - 1) * st[1] + ks[1] - (w + p[1] + p[3]), 0);
    if (eb || er) {
      if (avg)
        r.fail(
            "ceil_mode 1 changes the output size, which dltrain's average pooling cannot reproduce (export with "
            "ceil_mode=False)");
      p[2] += eb;  // max pooling: extra bottom / right padding never wins the max
      p[3] += er;
    }
    LayerSpec& s = r.add_layer(avg ? "averagePooling2d" : "maxPooling2d", {in.name});
    set_list(s, "PoolSize", ks);
    set_list(s, "Stride", st);
    set_list(s, "Padding", {p[0], p[2], p[1], p[3]});
    if (exclude) s.set("PaddingValue", "mean");
    r.set_output(OnnxValue{s.name, Shape{oh, ow, in.shape[2]}, false});
    if (!avg && r.has_output(1)) {
      s.set("HasUnpoolingOutputs", "true");
      OnnxValue idx{s.name, in.shape, false};
      idx.indices = true;
      r.set_output_at(1, idx);
    }
  }

  // GlobalAveragePool / GlobalMaxPool, and ReduceMean / ReduceMax over H and W (axes an input
  // from opset 18): of an image (axes 2, 3) or of a channels-last value (axes 1, 2); keepdims
  // 0 gives (N, C).
  static void global_from_onnx(OnnxNodeReader& r) {
    const std::string& op = r.op();
    const bool reduce = op == "ReduceMean" || op == "ReduceMax";
    const bool max = op == "GlobalMaxPool" || op == "ReduceMax";
    const OnnxValue in = r.input(0, false, reduce);
    r.need_image(in);
    OnnxValue out{"", Shape{1, 1, in.shape[2]}, false};
    if (reduce) {
      const std::string verb = max ? "takes the maximum" : "averages";
      if (in.flat)
        r.fail(verb + " of a flat (N, K) value; only the " + (max ? "maximum" : "mean") +
               " over height and width of an image is supported");
      std::vector<int64_t> axes = r.axes(1, 18, {});
      for (int64_t& a : axes)
        if (a < 0) a += 4;
      std::sort(axes.begin(), axes.end());
      const std::vector<int64_t> spatial = in.channels_last ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{2, 3};
      if (axes != spatial)
        r.fail(verb + " over axes other than height and width (" +
               std::string(in.channels_last ? "1, 2 of a channels-last value" : "2, 3") + "); only global " +
               (max ? "max" : "average") + " pooling is supported");
      out.flat = r.attr_int("keepdims", 1) == 0;
      out.channels_last = in.channels_last && !out.flat;
    }
    out.name = r.add_layer(max ? "globalMaxPooling2d" : "globalAveragePooling2d", {in.name}).name;
    r.set_output(out);
  }

  PoolDesc desc(int64_t n) const {
    PoolDesc d;
    d.n = n;
    d.h = h_;
    d.w = w_;
    d.c = c_;
    d.kh = kh_;
    d.kw = kw_;
    d.stride_h = global_ ? 1 : sh_;
    d.stride_w = global_ ? 1 : sw_;
    d.pad_t = pt_;
    d.pad_b = pb_;
    d.pad_l = pl_;
    d.pad_r = pr_;
    d.kind = kind_;
    d.exclude_padding = exclude_padding_;
    return d;
  }

 private:
  PoolKind kind_;
  bool global_;
  bool keep_indices_ = false;
  bool exclude_padding_ = false;  // average pooling: PaddingValue mean
  Tensor indices_;
  Backend* be_ = nullptr;
  int64_t n_ = 0;
  int64_t kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, pt_ = 0, pb_ = 0, pl_ = 0, pr_ = 0;
  int64_t h_ = 0, w_ = 0, c_ = 0;
  std::unique_ptr<PoolOp> op_;
  std::unique_ptr<ActOp> relu_;  // the producer's ReLU backward (Fusion::takes_relu_backward)
};

// averagePooling1d and maxPooling1d (MATLAB's averagePooling1dLayer and maxPooling1dLayer): the
// pooling of each channel over windows of PoolSize consecutive tokens, Stride apart, on the same
// PoolOp as a (S, 1) image with a (PoolSize, 1) window. A token sequence (S, 1, C) in, (S', 1, C)
// out; dltrain also takes an image (SSCB), its H x W pixels in row order as the tokens (NextViT's
// spatial reduction: AvgPool1d over the flattened feature map). Padding: a number, [left right]
// or "same" (output ceil(S / Stride) tokens, the odd one on the right, as MATLAB).
class Pooling1dLayer final : public Layer {
 public:
  bool takes(DataFormat f) const override { return f != DataFormat::kCB; }
  DataFormat output_format() const override { return DataFormat::kSCB; }
  Pooling1dLayer(const LayerSpec& spec, PoolKind kind) : Layer(spec), kind_(kind) {
    k_ = spec_.get_int("PoolSize", 0, 1);
    if (k_ == 0) throw ConfigError(spec.where() + "option PoolSize is required (e.g. PoolSize: 2)");
    stride_ = spec_.get_int("Stride", 1, 1);
    constexpr int64_t kMax = int64_t{1} << 31;  // no sequence is longer
    if (k_ > kMax || stride_ > kMax)
      throw ConfigError(spec.where() + "options PoolSize and Stride must be at most " + std::to_string(kMax));
    if (kind_ == PoolKind::kAverage) exclude_padding_ = spec_.get_choice("PaddingValue", "0", {"0", "mean"}) == "mean";
  }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    s_ = inputs[0][0] * inputs[0][1];  // a token sequence (S, 1, C), or an image's pixels in row order
    c_ = inputs[0][2];
    left_ = right_ = 0;
    if (const SpecValue* v = spec_.get("Padding")) {
      if (!v->is_list && v->items.size() == 1 && iequals(v->items[0], "same")) {
        const auto same = same_padding(s_, k_, stride_);
        left_ = same[0];
        right_ = same[1];
      } else {
        std::vector<int64_t> p;
        for (const auto& t : v->items) {
          int64_t x = 0;
          if (!parse_int(t, &x) || x < 0 || v->items.size() > 2)
            throw ConfigError(spec_.where() + "option Padding must be 'same', a number >= 0 or [left right], got '" +
                              v->str() + "'");
          p.push_back(x);
        }
        left_ = p[0];
        right_ = p.size() > 1 ? p[1] : p[0];
      }
    }
    if (left_ >= k_ || right_ >= k_) shape_error(spec_, "Padding must be smaller than PoolSize");
    if (s_ + left_ + right_ < k_)
      shape_error(spec_, "input has " + std::to_string(s_) + " tokens but PoolSize is " + std::to_string(k_) +
                             " (use a smaller PoolSize or add Padding)");
    return Shape{desc(1).out_h(), 1, c_};
  }

  void setup(int64_t n, Backend& be) override { op_ = be.make(desc(n)); }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    op_->forward(*x[0], y, ctx.training);
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) op_->backward(dy, *dx[0]);
  }
  int64_t flops_per_image() const override { return desc(1).out_h() * k_ * c_; }

  // The tokens (N, S, C) (an image's pixels made tokens first) transposed to (N, C, S), a 1-D
  // AveragePool / MaxPool (count_include_pad 1 unless PaddingValue mean), transposed back.
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const std::string tokens = g.pixel_tokens(n, inputs.at(0));
    g.add_node("Transpose", n + "_channels", {tokens}, n + "_cs", {OnnxAttr("perm", std::vector<int64_t>{0, 2, 1})});
    const bool avg = kind_ == PoolKind::kAverage;
    std::vector<OnnxAttr> attrs = {OnnxAttr("kernel_shape", std::vector<int64_t>{k_}),
                                   OnnxAttr("strides", std::vector<int64_t>{stride_}),
                                   OnnxAttr("pads", std::vector<int64_t>{left_, right_})};
    if (avg) attrs.emplace_back("count_include_pad", int64_t{exclude_padding_ ? 0 : 1});
    g.add_node(avg ? "AveragePool" : "MaxPool", n + "_pool", {n + "_cs"}, n + "_pooled", attrs);
    g.add_node("Transpose", n + "_tokens", {n + "_pooled"}, n, {OnnxAttr("perm", std::vector<int64_t>{0, 2, 1})});
    return OnnxValue{n, out, false};
  }

 private:
  PoolDesc desc(int64_t n) const {
    PoolDesc d;
    d.n = n;
    d.h = s_;
    d.w = 1;
    d.c = c_;
    d.kh = k_;
    d.kw = 1;
    d.stride_h = stride_;
    d.stride_w = 1;
    d.pad_t = left_;
    d.pad_b = right_;
    d.kind = kind_;
    d.exclude_padding = exclude_padding_;
    return d;
  }

  PoolKind kind_;
  bool exclude_padding_ = false;
  int64_t k_ = 1, stride_ = 1, left_ = 0, right_ = 0, s_ = 1, c_ = 1;
  std::unique_ptr<PoolOp> op_;
};

// maxUnpooling2d (MATLAB's maxUnpooling2dLayer): the inverse of the maxPooling2d named by
// PoolingLayer (which has HasUnpoolingOutputs: true): each input value goes back to where its
// pooling window's maximum was, the rest is zero. Its input has the pooling's output shape,
// its output the pooling's input shape (MATLAB connects the pooling's 'indices' and 'size'
// outputs; here the option names the layer).
class MaxUnpoolingLayer final : public Layer {
 public:
  // An image layer: not on token sequences.
  bool takes(DataFormat f) const override { return f != DataFormat::kSCB; }
  explicit MaxUnpoolingLayer(const LayerSpec& spec) : Layer(spec) {
    pool_name_ = spec_.get_string("PoolingLayer", "");
    if (pool_name_.empty())
      throw ConfigError(spec_.where() +
                        "option PoolingLayer is required: the name of the maxPooling2d layer "
                        "(with HasUnpoolingOutputs: true) whose indices this layer uses");
  }
  void link(const std::function<Layer*(const std::string&)>& find_earlier) override {
    Layer* l = find_earlier(pool_name_);
    if (!l)
      throw ConfigError(spec_.where() + "PoolingLayer '" + pool_name_ +
                        "' is not a layer above this one (name the maxPooling2d it undoes)");
    pool_ = dynamic_cast<PoolingLayer*>(l);
    if (!pool_ || !pool_->keeps_indices())
      throw ConfigError(spec_.where() + "PoolingLayer '" + pool_name_ + "' (" + l->type() +
                        ") must be a maxPooling2d with HasUnpoolingOutputs: true");
  }
  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    const PoolDesc d = pool_->desc(1);
    const Shape pooled{d.out_h(), d.out_w(), d.c};
    if (inputs[0] != pooled)
      shape_error(spec_, "input is " + inputs[0].str() + " but '" + pool_name_ + "' outputs " + pooled.str() +
                             " (unpooling takes the shape its pooling layer produced)");
    return Shape{d.h, d.w, d.c};
  }
  void setup(int64_t n, Backend& be) override {
    be_ = &be;
    d_ = pool_->desc(n);
  }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    be_->max_unpool(*x[0], pool_->indices(), y, d_);
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) be_->max_unpool_backward(dy, pool_->indices(), *dx[0], d_);
  }

  // MaxUnpool(x, the pooling's Indices) with its kernel, strides and pads; ONNX's default
  // output size must then be the pooling's input size (an odd size the pooling floored has
  // no such form here: MaxUnpool would need output_shape with the batch size).
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const PoolDesc d = pool_->desc(1);
    if ((d.out_h() - 1) * d.stride_h + d.kh - d.pad_t - d.pad_b != d.h ||
        (d.out_w() - 1) * d.stride_w + d.kw - d.pad_l - d.pad_r != d.w)
      throw ModelError(g.path() + ": layer '" + n + "' (maxUnpooling2d) restores " + std::to_string(d.h) + "x" +
                       std::to_string(d.w) +
                       ", which ONNX MaxUnpool's default output size for its pooling does not "
                       "give (use an input size the pooling divides)");
    OnnxValue x = g.image(n, inputs.at(0));
    std::vector<OnnxAttr> attrs = {OnnxAttr("kernel_shape", std::vector<int64_t>{d.kh, d.kw}),
                                   OnnxAttr("strides", std::vector<int64_t>{d.stride_h, d.stride_w})};
    if (d.pad_t || d.pad_l || d.pad_b || d.pad_r)  // only when needed: OpenCV 4.6 misreads 4 pads here
      attrs.emplace_back("pads", std::vector<int64_t>{d.pad_t, d.pad_l, d.pad_b, d.pad_r});
    g.add_node("MaxUnpool", n, {x.name, pool_->indices_onnx_name()}, n, attrs);
    return OnnxValue{n, out, false};
  }

  // MaxUnpool(X, I): I must be a MaxPool's Indices (that layer becomes PoolingLayer); ONNX's
  // default output size must be that pooling's input size (output_shape is refused).
  static void from_onnx(OnnxNodeReader& r) {
    const OnnxValue x = r.input(0);
    r.need_image(x);
    const OnnxValue idx = r.indices_input(1);  // name: the maxPooling2d; shape: its input
    if (r.has_input(2))
      r.fail(
          "output_shape is not read (dltrain's maxUnpooling2d restores its pooling's input size; "
          "export without it)");
    auto ks = r.attr_ints("kernel_shape", {});
    auto st = r.attr_ints("strides", {1, 1});
    auto p = r.attr_ints("pads", {0, 0, 0, 0});
    if (ks.size() != 2 || st.size() != 2 || p.size() != 4) r.fail("kernel_shape, strides and pads must be 2-D");
    for (int64_t v : {ks[0], ks[1], st[0], st[1]})
      if (v < 1 || v > kOnnxMaxWindow)
        r.fail("kernel_shape and strides must be in 1.." + std::to_string(kOnnxMaxWindow));
    const int64_t h = (x.shape[0] - 1) * st[0] + ks[0] - p[0] - p[2];
    const int64_t w = (x.shape[1] - 1) * st[1] + ks[1] - p[1] - p[3];
    if (h != idx.shape[0] || w != idx.shape[1])
      r.fail("the output is " + std::to_string(h) + "x" + std::to_string(w) +
             " but the MaxPool whose indices it uses "
             "pooled a " +
             std::to_string(idx.shape[0]) + "x" + std::to_string(idx.shape[1]) +
             " input (dltrain's "
             "maxUnpooling2d restores its pooling's input size)");
    LayerSpec& s = r.add_layer("maxUnpooling2d", {x.name});
    s.set("PoolingLayer", idx.name);
    r.set_output(OnnxValue{s.name, idx.shape, false});
  }

 private:
  std::string pool_name_;
  PoolingLayer* pool_ = nullptr;
  Backend* be_ = nullptr;
  PoolDesc d_;
};

}  // namespace

const LayerType& max_unpooling_layer_type() {
  static const LayerType t{
      "maxUnpooling2d",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<MaxUnpoolingLayer>(s); },
      {"MaxUnpool"},
      MaxUnpoolingLayer::from_onnx};
  return t;
}

const LayerType& max_pooling_layer_type() {
  static const LayerType t{"maxPooling2d",
                           [](const LayerSpec& s) -> std::unique_ptr<Layer> {
                             return std::make_unique<PoolingLayer>(s, PoolKind::kMax, false);
                           },
                           {"MaxPool"},
                           PoolingLayer::from_onnx};
  return t;
}

const LayerType& average_pooling_layer_type() {
  static const LayerType t{"averagePooling2d",
                           [](const LayerSpec& s) -> std::unique_ptr<Layer> {
                             return std::make_unique<PoolingLayer>(s, PoolKind::kAverage, false);
                           },
                           {"AveragePool"},
                           PoolingLayer::from_onnx};
  return t;
}

const LayerType& global_average_pooling_layer_type() {
  static const LayerType t{"globalAveragePooling2d",
                           [](const LayerSpec& s) -> std::unique_ptr<Layer> {
                             return std::make_unique<PoolingLayer>(s, PoolKind::kAverage, true);
                           },
                           {"GlobalAveragePool", "ReduceMean"},
                           PoolingLayer::global_from_onnx};
  return t;
}

const LayerType& global_max_pooling_layer_type() {
  static const LayerType t{"globalMaxPooling2d",
                           [](const LayerSpec& s) -> std::unique_ptr<Layer> {
                             return std::make_unique<PoolingLayer>(s, PoolKind::kMax, true);
                           },
                           {"GlobalMaxPool", "ReduceMax"},
                           PoolingLayer::global_from_onnx};
  return t;
}

const LayerType& average_pooling1d_layer_type() {
  static const LayerType t{"averagePooling1d",
                           [](const LayerSpec& s) -> std::unique_ptr<Layer> {
                             return std::make_unique<Pooling1dLayer>(s, PoolKind::kAverage);
                           },
                           {},
                           nullptr};
  return t;
}

const LayerType& max_pooling1d_layer_type() {
  static const LayerType t{
      "maxPooling1d",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<Pooling1dLayer>(s, PoolKind::kMax); },
      {},
      nullptr};
  return t;
}

}  // namespace dlt
