// batchNormalization (batch_norm_layer.h): plain, synchronized (data parallel) and with the
// max pooling after it as one op (Fusion::with_max_pool); the ONNX BatchNormalization node
// both ways.
#include "layers/batch_norm_layer.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "backend/collectives.h"
#include "layers/batch_norm_sync.h"
#include "layers/layer_util.h"

namespace dlt {

BatchNormLayer::BatchNormLayer(const LayerSpec& spec) : Layer(spec) {
  epsilon_ = spec_.get_double("Epsilon", 1e-5);
  if (epsilon_ <= 0) throw ConfigError(spec.where() + "option Epsilon must be > 0");
  mean_decay_ = spec_.get_double("MeanDecay", 0.1);
  var_decay_ = spec_.get_double("VarianceDecay", 0.1);
  if (mean_decay_ < 0 || mean_decay_ > 1 || var_decay_ < 0 || var_decay_ > 1)
    throw ConfigError(spec.where() + "options MeanDecay and VarianceDecay must be in [0, 1]");
  scale_ = make_param(spec_, "Scale", Shape{}, Init::kOnes, 1.f);
  offset_ = make_param(spec_, "Offset", Shape{}, Init::kZeros, 1.f);
  spec_.get("NumChannels");
  traits_.relu_in_op = true;
}

Shape BatchNormLayer::infer(const std::vector<Shape>& inputs) {
  expect_inputs(spec_, inputs, 1);
  shape_ = inputs[0];
  c_ = shape_[2];
  int64_t nc = spec_.get_int("NumChannels", c_, 1);
  if (nc != c_)
    shape_error(spec_,
                "NumChannels is " + std::to_string(nc) + " but the input has " + std::to_string(c_) + " channels");
  Param s = scale_, o = offset_;
  s.shape = Shape{c_};
  o.shape = Shape{c_};
  params_ = {s, o};
  states_ = {State{"TrainedMean", Shape{c_}, 0.f, {}}, State{"TrainedVariance", Shape{c_}, 1.f, {}}};
  traits_.batch_norm_op = true;
  traits_.batch_norm = BatchNormDesc{1, shape_[0], shape_[1], c_, static_cast<float>(epsilon_)};
  traits_.affine_in_inference = true;
  return shape_;
}

void BatchNormLayer::setup(int64_t n, Backend& be) {
  n_ = n;
  BatchNormDesc d;
  d.n = n;
  d.h = shape_[0];
  d.w = shape_[1];
  d.c = c_;
  d.epsilon = static_cast<float>(epsilon_);
  d.fuse_relu = fusion_.relu;
  op_ = be.make(d);
  sync_op_.reset();  // made on first synchronized use
  fused_op_.reset();
  if (fusion_.with_max_pool) {  // with the max pooling after it (the plan asked the backend)
    BnReluMaxPoolDesc f;
    f.bn = d;
    f.kh = fusion_.max_pool.kh;
    f.kw = fusion_.max_pool.kw;
    f.stride_h = fusion_.max_pool.stride_h;
    f.stride_w = fusion_.max_pool.stride_w;
    fused_op_ = be.make(f);
  }
  be_ = &be;
  Device dev = be.device();
  if (!batch_mean_.defined()) {
    batch_mean_ = Tensor(Shape{c_}, dev);
    batch_var_ = Tensor(Shape{c_}, dev);
  }
}

void BatchNormLayer::forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) {
  Param& s = params_[0];
  Param& o = params_[1];
  if (!ctx.training) {
    op_->forward_inference(*x[0], s.value, o.value, states_[0].value, states_[1].value, y);
    return;
  }
  int64_t m = n_ * shape_[0] * shape_[1];  // positions the statistics are over
  if (with_max_pool(ctx)) {                // y is the max pooling's output
    fused_op_->forward_training(*x[0], s.value, o.value, y, batch_mean_, batch_var_);
  } else if (synchronized(ctx)) {
    forward_synchronized(*x[0], y, ctx);
    m = ctx.global_images * shape_[0] * shape_[1];
  } else {
    op_->forward_training(*x[0], s.value, o.value, y, batch_mean_, batch_var_);
  }
  if (ctx.population_statistics)
    accumulate_population(m);
  else
    update_trained(m);
}

void BatchNormLayer::start_population_statistics() {
  pop_count_ = 0;  // the sums start at the pass's first batch (accumulate_population)
}

// Chan's pairwise update of the running mean and sum of squared deviations M2 with a batch of m
// positions (mean mu, biased variance v): delta = mu - mean, mean += delta m / (count + m),
// M2 += v m + delta^2 count m / (count + m).
void BatchNormLayer::accumulate_population(int64_t m) {
  if (m <= 0) return;
  Backend& be = *be_;
  if (pop_count_ == 0)
    for (Tensor* t : {&pop_mean_, &pop_m2_, &pop_delta_, &pop_square_}) {
      if (!t->defined()) *t = Tensor(Shape{c_}, be.device());
      be.fill(*t, 0.f);
    }
  const double n = pop_count_, total = n + static_cast<double>(m);
  be.copy(batch_mean_, pop_delta_);
  be.axpby(-1.f, pop_mean_, 1.f, pop_delta_);
  be.axpby(static_cast<float>(static_cast<double>(m) / total), pop_delta_, 1.f, pop_mean_);
  be.multiply(pop_delta_, pop_delta_, pop_square_);
  be.axpby(static_cast<float>(m), batch_var_, 1.f, pop_m2_);
  be.axpby(static_cast<float>(n * static_cast<double>(m) / total), pop_square_, 1.f, pop_m2_);
  pop_count_ = total;
}

// TrainedMean = the population mean, TrainedVariance = M2 / (count - 1) (unbiased, as the moving
// averages).
void BatchNormLayer::finish_population_statistics() {
  if (pop_count_ <= 0) return;
  Backend& be = *be_;
  be.copy(pop_mean_, states_[0].value);
  be.axpby(static_cast<float>(1.0 / std::max(pop_count_ - 1, 1.0)), pop_m2_, 0.f, states_[1].value);
}

// trained = (1 - decay) * trained + decay * batch statistic (unbiased variance over m).
void BatchNormLayer::update_trained(int64_t m) {
  Backend& be = *be_;
  float unbias = m > 1 ? static_cast<float>(m) / static_cast<float>(m - 1) : 1.f;
  be.axpby(static_cast<float>(mean_decay_), batch_mean_, static_cast<float>(1 - mean_decay_), states_[0].value);
  be.axpby(static_cast<float>(var_decay_) * unbias, batch_var_, static_cast<float>(1 - var_decay_), states_[1].value);
}

void BatchNormLayer::backward(const std::vector<const Tensor*>& x, const Tensor& y, Tensor& dy,
                              const std::vector<Tensor*>& dx, const RunContext& ctx) {
  if (with_max_pool(ctx)) {  // y and dy are the max pooling's output and gradient
    Tensor none;
    fused_op_->backward(*x[0], y, dy, params_[0].value, dx[0] ? *dx[0] : none, params_[0].grad, params_[1].grad);
    return;
  }
  if (synchronized(ctx)) {
    backward_synchronized(*x[0], dy, dx[0], ctx);
    return;
  }
  Param& s = params_[0];
  Param& o = params_[1];
  // oneDNN/cuDNN compute dx together with dscale/doffset; a scratch dx when none is needed.
  Tensor* out = dx[0];
  if (!out) {
    if (!scratch_dx_.defined() || scratch_dx_.numel() < x[0]->numel())
      scratch_dx_ = Tensor(x[0]->shape(), x[0]->device());
    scratch_dx_.resize(x[0]->shape());
    out = &scratch_dx_;
  }
  op_->backward(*x[0], dy, s.value, batch_mean_, batch_var_, *out, s.grad, o.grad);
}

// Forward and backward of this rank's n images (n = 0 for an empty share: it only joins
// the collectives) with the global statistics, for rank weight w = n / N, M_l = n * H * W:
//   forward:  global mean / var from every rank's moments; normalize with them.
//   backward: the op gives dx0 = scale / sigma * dy' and this rank's dscale, dshift;
//             D = sum w dshift, S = sum w dscale over ranks;
//             dx = dx0 - scale / (sigma * M_l) * (D + xhat * S),
// the exact gradient of this rank's mean loss through the global statistics (dy' is the
// gradient after the fused relu's mask). Parameter gradients stay this rank's own: the
// weighted gradient all-reduce makes them global.
bool BatchNormLayer::synchronized(const RunContext& ctx) { return ctx.comm && ctx.comm->size() > 1; }

void BatchNormLayer::forward_synchronized(const Tensor& x, Tensor& y, const RunContext& ctx) {
  const bool empty = x.shape()[0] == 0;
  if (empty) {
    be_->fill(batch_mean_, 0.f);
    be_->fill(batch_var_, 0.f);
  } else {
    be_->channel_moments(x, batch_mean_, batch_var_);
  }
  if (!sync_scratch_.defined()) sync_scratch_ = Tensor(Shape{c_}, batch_mean_.device());
  sync_batch_norm_moments(*ctx.comm, ctx.weight, batch_mean_, batch_var_, sync_scratch_);
  if (empty) return;
  global_op().forward_training(x, params_[0].value, params_[1].value, y, batch_mean_, batch_var_);
}

void BatchNormLayer::backward_synchronized(const Tensor& x, Tensor& dy, Tensor* dx, const RunContext& ctx) {
  Param& s = params_[0];
  Param& o = params_[1];
  const int64_t n = x.shape()[0];
  if (n > 0) {
    Tensor* out = dx;
    if (!out) {
      if (!scratch_dx_.defined() || scratch_dx_.numel() < x.numel()) scratch_dx_ = Tensor(x.shape(), x.device());
      scratch_dx_.resize(x.shape());
      out = &scratch_dx_;
    }
    global_op().backward(x, dy, s.value, batch_mean_, batch_var_, *out, s.grad, o.grad);
  }
  if (!dx) return;  // no input gradient: dscale / doffset are final (same on every rank)
  if (!sum_shift_.defined()) {
    sum_shift_ = Tensor(Shape{c_}, s.value.device());
    sum_scale_ = Tensor(Shape{c_}, s.value.device());
  }
  if (n > 0) {
    be_->copy(o.grad, sum_shift_);
    be_->copy(s.grad, sum_scale_);
  } else {
    be_->fill(sum_shift_, 0.f);
    be_->fill(sum_scale_, 0.f);
  }
  sync_batch_norm_sums(*ctx.comm, ctx.weight, sum_shift_, sum_scale_);
  if (n == 0) return;
  be_->batch_norm_dx_correction(x, batch_mean_, batch_var_, s.value, static_cast<float>(epsilon_),
                                static_cast<double>(n * shape_[0] * shape_[1]), sum_shift_, sum_scale_, *dx);
}

BatchNormOp& BatchNormLayer::global_op() {
  if (!sync_op_) {
    BatchNormDesc d;
    d.n = n_;
    d.h = shape_[0];
    d.w = shape_[1];
    d.c = c_;
    d.epsilon = static_cast<float>(epsilon_);
    d.fuse_relu = fusion_.relu;
    d.global_stats = true;
    sync_op_ = be_->make(d);
  }
  return *sync_op_;
}

void BatchNormLayer::inference_affine(std::vector<float>& scale, std::vector<float>& shift) const {
  const float* g = params_[0].value.data();
  const float* o = params_[1].value.data();
  const float* mean = states_[0].value.data();
  const float* var = states_[1].value.data();
  scale.resize(static_cast<size_t>(c_));
  shift.resize(static_cast<size_t>(c_));
  for (int64_t c = 0; c < c_; ++c) {
    const float s = g[c] / std::sqrt(var[c] + static_cast<float>(epsilon_));
    scale[static_cast<size_t>(c)] = s;
    shift[static_cast<size_t>(c)] = o[c] - mean[c] * s;
  }
}

OnnxValue BatchNormLayer::to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const {
  const std::string& n = name();
  const OnnxValue& x = inputs.at(0);
  g.add_floats(n + "_scale", {c_}, host_values(params_[0].value));
  g.add_floats(n + "_offset", {c_}, host_values(params_[1].value));
  g.add_floats(n + "_mean", {c_}, host_values(states_[0].value));
  g.add_floats(n + "_var", {c_}, host_values(states_[1].value));
  if (input_format(0) == DataFormat::kSCB) {  // tokens (N, S, C): over (N, C, S), transposed there and back
    g.add_node("Transpose", n + "_channels", {x.name}, n + "_cs", {OnnxAttr("perm", std::vector<int64_t>{0, 2, 1})});
    g.add_node("BatchNormalization", n + "_norm", {n + "_cs", n + "_scale", n + "_offset", n + "_mean", n + "_var"},
               n + "_normed", {OnnxAttr("epsilon", static_cast<float>(epsilon_))});
    g.add_node("Transpose", n + "_tokens", {n + "_normed"}, n, {OnnxAttr("perm", std::vector<int64_t>{0, 2, 1})});
    return OnnxValue{n, out, false};
  }
  g.add_node("BatchNormalization", n, {x.name, n + "_scale", n + "_offset", n + "_mean", n + "_var"}, n,
             {OnnxAttr("epsilon", static_cast<float>(epsilon_))});
  return OnnxValue{n, out, x.flat};
}

void BatchNormLayer::from_onnx(OnnxNodeReader& r) {
  const OnnxValue in = r.input(0);
  int64_t c = in.shape[2];
  if (in.flat && in.shape[0] * in.shape[1] > 1)
    r.fail("its input is flattened; batch normalization needs (N, C, H, W) or (N, C)");
  std::vector<std::vector<float>> t;
  const char* roles[] = {"scale", "bias", "mean", "var"};
  for (int i = 0; i < 4; ++i) {
    t.push_back(r.floats(i + 1, roles[i]));
    if (static_cast<int64_t>(t.back().size()) != c)
      r.fail(std::string(roles[i]) + " has " + std::to_string(t.back().size()) + " values for " + std::to_string(c) +
             " channels");
  }
  LayerSpec& s = r.add_layer("batchNormalization", {in.name});
  s.set("Epsilon", onnx_number(r.attr_float("epsilon", 1e-5f)));
  const std::string name = s.name;
  r.add_param(name, "Scale", Shape{c}, t[0]);
  r.add_param(name, "Offset", Shape{c}, t[1]);
  r.add_state(name, "TrainedMean", Shape{c}, t[2]);
  r.add_state(name, "TrainedVariance", Shape{c}, t[3]);
  r.set_output(OnnxValue{name, in.shape, in.flat});
}

const LayerType& batch_normalization_layer_type() {
  static const LayerType t{
      "batchNormalization",
      [](const LayerSpec& s) -> std::unique_ptr<Layer> { return std::make_unique<BatchNormLayer>(s); },
      {"BatchNormalization"},
      BatchNormLayer::from_onnx};
  return t;
}

}  // namespace dlt
