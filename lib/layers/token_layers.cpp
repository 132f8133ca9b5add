// The token layers of MATLAB's vision transformers (R2023b): patchEmbedding,
// embeddingConcatenation, positionEmbedding, indexing1d, globalAveragePooling1d and
// globalMaxPooling1d; and dltrain's tokenSlice. A token sequence is SCB (layers/data_format.h): (S, 1, C) per image,
// the same memory as (S, C), so a patch grid becomes tokens without moving data (row-major) and per-token layers
// (fullyConnected with OperationDimension channel, layerNormalization, the activations) run on it as on pixels. The
// data movement of these layers is backend/token_ops.h's.
#include <algorithm>
#include <cctype>
#include <memory>
#include <string>

#include "backend/token_ops.h"
#include "layers/layer_util.h"

namespace dlt {

namespace {

// Token layers take SCB data; patchEmbedding takes images.
bool is_tokens(DataFormat f) { return f == DataFormat::kSCB; }
// embeddingConcatenation and positionEmbedding also take an image as the sequence of its pixels
// in row order (H * W tokens, the same memory: PiT's tokens are its feature map's pixels).
bool tokens_or_image(DataFormat f) { return f == DataFormat::kSCB || f == DataFormat::kSSCB; }

// patchEmbedding: a convolution with FilterSize = Stride = PatchSize (no padding) whose
// (H / ph, W / pw) grid of OutputSize channels is flattened into S = (H / ph) (W / pw) tokens.
// SpatialFlattenMode column-major (MATLAB's default) numbers the patches down the columns
// (token w * H' + h), row-major along the rows (token h * W' + w: PyTorch's flatten(2), and
// dltrain's memory order, so it moves no data). Weights (OutputSize, ph, pw, C), Bias
// (OutputSize), initialized as convolution2d's.
class PatchEmbeddingLayer final : public Layer {
 public:
  explicit PatchEmbeddingLayer(const LayerSpec& spec) : Layer(spec) {
    const std::vector<int64_t> p = spec_.get_ints("PatchSize", {0, 0}, 2, 1);
    if (p[0] == 0) throw ConfigError(spec.where() + "option PatchSize is required (e.g. PatchSize: 16)");
    ph_ = p[0];
    pw_ = p[1];
    k_ = spec_.get_int("OutputSize", 0, 1);
    if (k_ == 0) throw ConfigError(spec.where() + "option OutputSize is required (e.g. OutputSize: 768)");
    column_major_ =
        spec_.get_choice("SpatialFlattenMode", "column-major", {"column-major", "row-major"}) == "column-major";
    weight_ = make_param(spec_, "Weight", Shape{}, parse_initializer(spec_, "WeightsInitializer", "glorot"), 1.f);
    bias_ = make_param(spec_, "Bias", Shape{}, parse_initializer(spec_, "BiasInitializer", "zeros"), 0.f);
  }

  bool takes(DataFormat f) const override { return f == DataFormat::kSSCB; }
  DataFormat output_format() const override { return DataFormat::kSCB; }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    const Shape& in = inputs[0];
    h_ = in[0];
    w_ = in[1];
    c_ = in[2];
    if (h_ % ph_ != 0 || w_ % pw_ != 0)
      shape_error(spec_, "PatchSize [" + std::to_string(ph_) + " " + std::to_string(pw_) +
                             "] does not divide the input's " + std::to_string(h_) + "x" + std::to_string(w_) +
                             " pixels (resize the input or choose a patch size that divides it)");
    params_ = weights_and_bias(weight_, bias_, Shape{k_, ph_, pw_, c_}, k_, ph_ * pw_ * c_, ph_ * pw_ * k_);
    return Shape{grid_h() * grid_w(), 1, k_};
  }

  void setup(int64_t n, Backend& be) override {
    ConvDesc d;
    d.n = n;
    d.h = h_;
    d.w = w_;
    d.c = c_;
    d.k = k_;
    d.kh = d.stride_h = ph_;
    d.kw = d.stride_w = pw_;
    d.bf16 = mixed_;
    conv_ = be.make(d);
    transpose_.reset();
    if (transposes()) {
      transpose_ = be.make(SpatialTransposeDesc{n, grid_h(), grid_w(), k_});
      grid_ = Tensor(Shape{n, grid_h(), grid_w(), k_}, be.device());
    }
  }

  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    if (!transpose_) return conv_->forward(*x[0], params_[0].value, params_[1].value, y);
    conv_->forward(*x[0], params_[0].value, params_[1].value, grid_);
    transpose_->forward(grid_, y);  // (h, w) -> (w, h): the tokens column by column
  }

  void backward(const std::vector<const Tensor*>& x, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    const Tensor* g = &dy;
    if (transpose_) {
      transpose_->backward(dy, grid_);  // grid_ now holds the gradient of the convolution's output
      g = &grid_;
    }
    Param& w = params_[0];
    Param& b = params_[1];
    if (!w.frozen() || !b.frozen()) conv_->backward_weights(*x[0], *g, w.grad, b.grad);
    if (dx[0]) conv_->backward_data(*g, w.value, *dx[0]);
  }

  int64_t flops_per_image() const override { return 2 * grid_h() * grid_w() * k_ * ph_ * pw_ * c_; }
  std::vector<std::string> learnable_options() const override { return {"Weight", "Bias"}; }

  // Conv (kernel = stride), the grid transposed for column-major order, Reshape (N, K, S) and
  // Transpose (0, 2, 1): the tokens (N, S, K).
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const OnnxValue x = g.image(n, inputs.at(0));
    g.add_floats(n + "_W", {k_, c_, ph_, pw_}, ohwi_to_oihw(host_values(params_[0].value), k_, c_, ph_, pw_));
    g.add_floats(n + "_B", {k_}, host_values(params_[1].value));
    g.add_node("Conv", n + "_conv", {x.name, n + "_W", n + "_B"}, n + "_grid",
               {OnnxAttr("kernel_shape", std::vector<int64_t>{ph_, pw_}),
                OnnxAttr("strides", std::vector<int64_t>{ph_, pw_})});
    std::string grid = n + "_grid";
    if (transposes()) {
      g.add_node("Transpose", n + "_columns", {grid}, n + "_grid_t",
                 {OnnxAttr("perm", std::vector<int64_t>{0, 1, 3, 2})});
      grid = n + "_grid_t";
    }
    g.add_ints(n + "_shape", {3}, {0, k_, grid_h() * grid_w()});
    g.add_node("Reshape", n + "_flatten", {grid, n + "_shape"}, n + "_channels_first");
    g.add_node("Transpose", n, {n + "_channels_first"}, n, {OnnxAttr("perm", std::vector<int64_t>{0, 2, 1})});
    return OnnxValue{n, out, false};
  }

 private:
  int64_t grid_h() const { return h_ / ph_; }
  int64_t grid_w() const { return w_ / pw_; }
  // Column-major order differs from the memory's only with more than one row and column.
  bool transposes() const { return column_major_ && grid_h() > 1 && grid_w() > 1; }

  int64_t ph_ = 1, pw_ = 1, k_ = 1, h_ = 0, w_ = 0, c_ = 0;
  bool column_major_ = true;
  Param weight_, bias_;
  std::unique_ptr<ConvOp> conv_;
  std::unique_ptr<SpatialTransposeOp> transpose_;
  Tensor grid_;  // (n, H', W', OutputSize): the convolution's output, then its gradient
};

// embeddingConcatenation: prepends one learnable token, Weights (C), to every sequence
// (ViT's class token): (S, 1, C) -> (S + 1, 1, C); of an image (H, W, C), to its pixels
// (dltrain's extension: PiT's class token): (H * W + 1, 1, C).
class EmbeddingConcatenationLayer final : public Layer {
 public:
  explicit EmbeddingConcatenationLayer(const LayerSpec& spec) : Layer(spec) {
    weight_ =
        make_param(spec_, "Weight", Shape{}, parse_initializer(spec_, "WeightsInitializer", "narrow-normal"), 1.f);
  }

  bool takes(DataFormat f) const override { return tokens_or_image(f); }
  DataFormat output_format() const override { return DataFormat::kSCB; }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    s_ = inputs[0][0] * inputs[0][1];
    c_ = inputs[0][2];
    Param w = weight_;
    w.name = "Weights";
    w.shape = Shape{c_};
    w.fan_in = w.fan_out = c_;
    params_ = {w};
    return Shape{s_ + 1, 1, c_};
  }

  void setup(int64_t n, Backend& be) override {
    broadcast_ = be.make(BatchBroadcastDesc{n, c_});
    concat_ = be.make(ConcatDesc{n, 1, 1, {c_, s_ * c_}});  // per image: [token, sequence]
    token_ = Tensor(Shape{n, c_}, be.device());
  }

  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    broadcast_->add(Tensor(), params_[0].value, token_);
    concat_->forward({&token_, x[0]}, y);
  }

  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    Param& w = params_[0];
    concat_->backward(dy, {w.frozen() ? nullptr : &token_, dx[0]});
    if (!w.frozen()) broadcast_->sum(token_, w.grad);
  }

  std::vector<std::string> learnable_options() const override { return {"Weight"}; }

  // The token (1, 1, C) expanded to (N, 1, C) (N from the input's Shape), then Concat on axis 1
  // (an image's pixels made tokens first).
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const std::string x = g.pixel_tokens(n, inputs.at(0));
    g.add_floats(n + "_token", {1, 1, c_}, host_values(params_[0].value));
    g.batch_expand(n + "_tokens", n + "_token", x, {1, c_});
    g.add_node("Concat", n, {n + "_tokens", x}, n, {OnnxAttr("axis", int64_t{1})});
    return OnnxValue{n, out, false};
  }

 private:
  int64_t s_ = 1, c_ = 1;
  Param weight_;
  std::unique_ptr<BatchBroadcastOp> broadcast_;
  std::unique_ptr<ConcatOp> concat_;
  Tensor token_;  // (n, C): the token per image, then its gradient
};

// positionEmbedding: MATLAB's positionEmbeddingLayer: the learnable vector of each position,
// Weights (MaxPosition, OutputSize) (MATLAB's OutputSize x MaxPosition), for the S <= MaxPosition
// positions of its input's sequence: y[s] = Weights[s], the same for every image (positions are
// token indices: PositionDimension auto or spatial on SCB data). On an image (H, W, C) (dltrain's
// extension: MATLAB embeds the positions of sequences and 1-D images) the positions are its
// pixels in row order and the output an image (H, W, OutputSize): PiT's learnable position
// table of its feature map. The input's values are not read (only its length), so it gets no
// gradient; an addition layer sums the embedding with the tokens, as in MATLAB's networks
// (positionEmbeddingLayer, then additionLayer(2) whose other input is the layer before it).
class PositionEmbeddingLayer final : public Layer {
 public:
  explicit PositionEmbeddingLayer(const LayerSpec& spec) : Layer(spec) {
    out_ = spec_.get_int("OutputSize", 0, 1);
    if (out_ == 0) throw ConfigError(spec.where() + "option OutputSize is required (e.g. OutputSize: 768)");
    max_ = spec_.get_int("MaxPosition", 0, 1);
    if (max_ == 0) throw ConfigError(spec.where() + "option MaxPosition is required (e.g. MaxPosition: 197)");
    const std::string dim = spec_.get_choice("PositionDimension", "auto", {"auto", "spatial", "temporal"});
    if (dim == "temporal")
      throw ConfigError(spec.where() +
                        "option PositionDimension is 'temporal', but dltrain's sequences have no time dimension "
                        "(use auto or spatial: the token index)");
    weight_ =
        make_param(spec_, "Weight", Shape{}, parse_initializer(spec_, "WeightsInitializer", "narrow-normal"), 1.f);
  }

  bool takes(DataFormat f) const override { return tokens_or_image(f); }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    image_ = input_format(0) == DataFormat::kSSCB;
    h_ = inputs[0][0];
    w_ = image_ ? inputs[0][1] : 1;
    s_ = h_ * w_;
    if (s_ > max_)
      shape_error(spec_, (image_ ? "the image has " + std::to_string(s_) + " pixels (" + inputs[0].str() + ")"
                                 : "the sequence has " + std::to_string(s_) + " tokens") +
                             ", more than MaxPosition " + std::to_string(max_));
    Param w = weight_;
    w.name = "Weights";
    w.shape = Shape{max_, out_};
    w.fan_in = max_;
    w.fan_out = out_;
    params_ = {w};
    return Shape{h_, w_, out_};
  }

  void setup(int64_t n, Backend& be) override {
    be_ = &be;
    broadcast_ = be.make(BatchBroadcastDesc{n, s_ * out_});
  }

  void forward(const std::vector<const Tensor*>&, Tensor& y, const RunContext&) override {
    broadcast_->add(Tensor(), used(params_[0].value), y);
  }

  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    Param& w = params_[0];
    if (!w.frozen()) {
      Tensor g = used(w.grad);
      broadcast_->sum(dy, g);
      if (s_ < max_) {  // the positions past the sequence get no gradient
        Tensor rest = w.grad.view(Shape{(max_ - s_) * out_}, s_ * out_);
        be_->fill(rest, 0.f);
      }
    }
    if (dx[0]) be_->fill(*dx[0], 0.f);  // the output does not depend on the input's values
  }

  int64_t flops_per_image() const override { return 0; }
  std::vector<std::string> learnable_options() const override { return {"Weight"}; }

  // The table's first S rows (1, S, OutputSize) expanded to the input's batch: Expand by
  // (N, S, OutputSize), N from the input's Shape; on an image, the rows as the image
  // (1, OutputSize, H, W) expanded to (N, OutputSize, H, W).
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    std::vector<float> t = host_values(params_[0].value);
    t.resize(static_cast<size_t>(s_ * out_));
    if (!image_) {
      g.add_floats(n + "_table", {1, s_, out_}, t);
      g.batch_expand(n, n + "_table", inputs.at(0).name, {s_, out_});
      return OnnxValue{n, out, false};
    }
    std::vector<float> chw(t.size());
    for (int64_t p = 0; p < s_; ++p)
      for (int64_t o = 0; o < out_; ++o) chw[static_cast<size_t>(o * s_ + p)] = t[static_cast<size_t>(p * out_ + o)];
    g.add_floats(n + "_table", {1, out_, h_, w_}, chw);
    g.batch_expand(n, n + "_table", inputs.at(0).name, {out_, h_, w_});
    return OnnxValue{n, out, false};
  }

 private:
  // The rows of the table the sequence uses (its first S positions).
  Tensor used(const Tensor& table) const { return table.view(Shape{s_ * out_}, 0); }

  bool image_ = false;
  int64_t out_ = 1, max_ = 1, s_ = 1, h_ = 1, w_ = 1;
  Param weight_;
  Backend* be_ = nullptr;
  std::unique_ptr<BatchBroadcastOp> broadcast_;
};

// The token layers that copy a run of consecutive tokens of each sequence (crop2d on (S, 1, C);
// the backward writes zeros into the other tokens): indexing1d and tokenSlice.
class TokenRunLayer : public Layer {
 public:
  using Layer::Layer;
  bool takes(DataFormat f) const override { return is_tokens(f); }
  void setup(int64_t n, Backend& be) override {
    be_ = &be;
    d_.n = n;
  }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    be_->crop2d(*x[0], y, d_);
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (dx[0]) be_->crop2d_backward(dy, *dx[0], d_);
  }

 protected:
  // The run of `count` tokens from `first` (0-based) of a sequence of shape in (S, 1, C).
  void set_run(const Shape& in, int64_t first, int64_t count) {
    d_.h = in[0];
    d_.w = d_.out_w = 1;
    d_.c = in[2];
    d_.top = first;
    d_.left = 0;
    d_.out_h = count;
  }
  CropDesc d_;

 private:
  Backend* be_ = nullptr;
};

// indexing1d: the first or last token of each sequence (Index first / last; dltrain also takes
// a 1-based position, as DeiT's distillation token 2), as one vector: (S, 1, C) -> CB (1, 1, C).
class Indexing1dLayer final : public TokenRunLayer {
 public:
  explicit Indexing1dLayer(const LayerSpec& spec) : TokenRunLayer(spec) {
    std::string index = spec_.get_string("Index", "first");
    std::transform(index.begin(), index.end(), index.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (index == "first" || index == "last") {
      last_ = index == "last";
      return;
    }
    const bool digits = !index.empty() && index.size() <= 9 &&
                        std::all_of(index.begin(), index.end(), [](unsigned char ch) { return std::isdigit(ch); });
    if (!digits || std::stoll(index) < 1)
      throw ConfigError(spec_.where() + "option Index must be first, last or a token's position (1 or more), got '" +
                        index + "'");
    position_ = std::stoll(index);
  }

  DataFormat output_format() const override { return DataFormat::kCB; }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    const int64_t s = inputs[0][0];
    if (position_ > s)
      shape_error(spec_, "Index " + std::to_string(position_) + " is past the " + std::to_string(s) +
                             " tokens of the sequence");
    set_run(inputs[0], last_ ? s - 1 : position_ - 1, 1);
    return Shape{1, 1, d_.c};
  }

  // Gather of one token on axis 1: (N, C).
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    g.add_ints(n + "_index", {}, {d_.top});
    g.add_node("Gather", n, {inputs.at(0).name, n + "_index"}, n, {OnnxAttr("axis", int64_t{1})});
    return OnnxValue{n, out, true};
  }

 private:
  bool last_ = false;
  int64_t position_ = 1;  // 1-based, unless last_
};

// globalAveragePooling1d / globalMaxPooling1d: the mean / the maximum of each channel over the
// tokens: (S, 1, C) -> CB (1, 1, C). PrefixTokens k (dltrain's own option; timm's
// num_prefix_tokens): over the tokens after the first k (a class token left out: BEiT's and
// DeiT III's global average pooling).
template <PoolKind kKind>
class GlobalPooling1dLayer final : public Layer {
 public:
  explicit GlobalPooling1dLayer(const LayerSpec& spec) : Layer(spec) { prefix_ = spec_.get_int("PrefixTokens", 0, 0); }

  bool takes(DataFormat f) const override { return is_tokens(f); }
  DataFormat output_format() const override { return DataFormat::kCB; }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    s_ = inputs[0][0];
    c_ = inputs[0][2];
    if (prefix_ >= s_)
      shape_error(spec_, "PrefixTokens " + std::to_string(prefix_) + " leaves none of the " + std::to_string(s_) +
                             " tokens to pool");
    return Shape{1, 1, c_};
  }

  void setup(int64_t n, Backend& be) override {
    be_ = &be;
    PoolDesc d;
    d.n = n;
    d.h = d.kh = s_ - prefix_;
    d.w = d.kw = 1;
    d.c = c_;
    d.kind = kKind;
    pool_ = be.make(d);
    if (prefix_ == 0) return;
    crop_.n = n;
    crop_.h = s_;
    crop_.w = 1;
    crop_.c = c_;
    crop_.out_h = s_ - prefix_;
    crop_.out_w = 1;
    crop_.top = prefix_;
    crop_.left = 0;
    rest_ = Tensor(Shape{n, s_ - prefix_, 1, c_}, be.device());
  }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    if (prefix_ == 0) return pool_->forward(*x[0], y, ctx.training);
    be_->crop2d(*x[0], rest_, crop_);
    pool_->forward(rest_, y, ctx.training);
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    if (!dx[0]) return;
    if (prefix_ == 0) return pool_->backward(dy, *dx[0]);
    pool_->backward(dy, rest_);
    be_->crop2d_backward(rest_, *dx[0], crop_);
  }
  int64_t flops_per_image() const override { return (s_ - prefix_) * c_; }

  // ReduceMean / ReduceMax over the tokens (axis 1): (N, C); after a Slice of the tokens from
  // PrefixTokens on.
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    std::string x = inputs.at(0).name;
    if (prefix_ > 0) {
      g.add_ints(n + "_start", {1}, {prefix_});
      g.add_ints(n + "_end", {1}, {s_});
      g.add_ints(n + "_axis", {1}, {1});
      g.add_node("Slice", n + "_tokens", {x, n + "_start", n + "_end", n + "_axis"}, n + "_rest");
      x = n + "_rest";
    }
    g.add_node(kKind == PoolKind::kMax ? "ReduceMax" : "ReduceMean", n, {x}, n,
               {OnnxAttr("axes", std::vector<int64_t>{1}), OnnxAttr("keepdims", int64_t{0})});
    return OnnxValue{n, out, true};
  }

 private:
  int64_t s_ = 1, c_ = 1, prefix_ = 0;
  std::unique_ptr<PoolOp> pool_;
  Backend* be_ = nullptr;
  CropDesc crop_;
  Tensor rest_;  // the tokens after the prefix, then their gradient
};

// tokenSlice (dltrain's own name; PyTorch's x[:, k:k + m]): the NumTokens tokens from StartToken
// (1-based) of each sequence, (S, 1, C) -> (NumTokens, 1, C); with ImageSize [H W] (H * W =
// NumTokens) handed on as the image (H, W, C) they are the pixels of, in row order (PiT: the
// tokens after the class token back into its feature map). The backward writes the gradient
// into those tokens and zeros into the others.
class TokenSliceLayer final : public TokenRunLayer {
 public:
  explicit TokenSliceLayer(const LayerSpec& spec) : TokenRunLayer(spec) {
    const int64_t start = spec_.get_int("StartToken", 0, 1);
    count_ = spec_.get_int("NumTokens", 0, 1);
    if (start == 0 || count_ == 0)
      throw ConfigError(spec_.where() +
                        "options StartToken (1-based) and NumTokens are required (e.g. StartToken: 2, NumTokens: 64)");
    first_ = start - 1;
    const std::vector<int64_t> image = spec_.get_ints("ImageSize", {}, 2);
    if (!image.empty()) {
      if (image[0] < 1 || image[1] < 1 || image[0] * image[1] != count_)
        throw ConfigError(spec_.where() + "option ImageSize [" + std::to_string(image[0]) + " " +
                          std::to_string(image[1]) + "] does not hold the " + std::to_string(count_) +
                          " tokens of NumTokens (its height times width must equal them)");
      image_h_ = image[0];
      image_w_ = image[1];
    }
  }

  DataFormat output_format() const override { return image_h_ ? DataFormat::kSSCB : DataFormat::kSCB; }

  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    if (first_ + count_ > inputs[0][0])
      shape_error(spec_, "StartToken " + std::to_string(first_ + 1) + " and NumTokens " + std::to_string(count_) +
                             " take tokens " + std::to_string(first_ + 1) + ".." + std::to_string(first_ + count_) +
                             " of a sequence of " + std::to_string(inputs[0][0]));
    set_run(inputs[0], first_, count_);
    return image_h_ ? Shape{image_h_, image_w_, d_.c} : Shape{count_, 1, d_.c};
  }

  // Slice of axis 1 (opset 13: inputs); with ImageSize, Reshape (N, H, W, C) and Transpose
  // (0, 3, 1, 2) into the image.
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override {
    const std::string& n = name();
    const std::string tokens = image_h_ ? n + "_tokens" : n;
    g.add_ints(n + "_starts", {1}, {d_.top});
    g.add_ints(n + "_ends", {1}, {d_.top + count_});
    g.add_ints(n + "_axes", {1}, {1});
    g.add_node("Slice", n + "_slice", {inputs.at(0).name, n + "_starts", n + "_ends", n + "_axes"}, tokens);
    return image_h_ ? g.tokens_image(n, tokens, out) : OnnxValue{n, out, false};
  }

 private:
  int64_t first_ = 0, count_ = 1, image_h_ = 0, image_w_ = 0;
};

// The LayerType of L under its MATLAB name (one static per layer class).
template <class L>
const LayerType& type_of(const char* name) {
  static const LayerType t{
      name, [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<L>(s); }, {}, nullptr};
  return t;
}

}  // namespace

const LayerType& patch_embedding_layer_type() { return type_of<PatchEmbeddingLayer>("patchEmbedding"); }
const LayerType& embedding_concatenation_layer_type() {
  return type_of<EmbeddingConcatenationLayer>("embeddingConcatenation");
}
const LayerType& position_embedding_layer_type() { return type_of<PositionEmbeddingLayer>("positionEmbedding"); }
const LayerType& indexing1d_layer_type() { return type_of<Indexing1dLayer>("indexing1d"); }
const LayerType& global_average_pooling1d_layer_type() {
  return type_of<GlobalPooling1dLayer<PoolKind::kAverage>>("globalAveragePooling1d");
}
const LayerType& global_max_pooling1d_layer_type() {
  return type_of<GlobalPooling1dLayer<PoolKind::kMax>>("globalMaxPooling1d");
}
const LayerType& token_slice_layer_type() { return type_of<TokenSliceLayer>("tokenSlice"); }

}  // namespace dlt
