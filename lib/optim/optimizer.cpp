#include "optim/optimizer.h"

#include <cmath>

#include "backend/async_device.h"
#include "backend/backend.h"
#include "util/check.h"

namespace dlt {

namespace {

bool clips_by_norm(const TrainingOptions& o) {
  const double t = o.gradient_threshold;
  return t > 0 && !std::isinf(t) && o.gradient_threshold_method != GradientThresholdMethod::kAbsoluteValue;
}

}  // namespace

Optimizer::Optimizer(const TrainingOptions& options, std::vector<Param*> params)
    : o_(options), params_(std::move(params)) {
  for (Param* p : params_) {
    Device dev = p->value.device();
    m_.push_back(o_.solver == Solver::kRmsprop ? Tensor() : Tensor::zeros(p->shape, dev));
    s_.push_back(o_.solver == Solver::kSgdm ? Tensor() : Tensor::zeros(p->shape, dev));
  }
  if (clips_by_norm(o_) && !params_.empty()) {
    const bool global = o_.gradient_threshold_method == GradientThresholdMethod::kGlobalL2Norm;
    norms_ = Tensor::zeros(Shape{global ? 1 : static_cast<int64_t>(params_.size())}, params_[0]->value.device());
  }
}

// Clipping by norm stays on the parameters' device: the L2 norms go to norms_ and the
// scale kernels read them there, so a GPU step waits for nothing and a CUDA graph can hold it.
void Optimizer::clip() {
  double t = o_.gradient_threshold;
  if (!(t > 0) || std::isinf(t)) return;
  const GradientThresholdMethod method = o_.gradient_threshold_method;
  if (method == GradientThresholdMethod::kAbsoluteValue) {
    const auto limit = static_cast<float>(t);
    for (Param* p : params_)
      if (!p->frozen()) backend_for(p->grad.device()).clamp(p->grad, -limit, limit);
    return;
  }
  if (method == GradientThresholdMethod::kGlobalL2Norm) {
    bool first = true;
    for (Param* p : params_) {
      if (p->frozen()) continue;
      backend_for(p->grad.device()).l2_norm_into(p->grad, norms_, 0, !first);
      first = false;
    }
    for (Param* p : params_)
      if (!p->frozen()) backend_for(p->grad.device()).clip_to_norm(p->grad, norms_, 0, t);
    return;
  }
  for (size_t i = 0; i < params_.size(); ++i) {  // l2norm: each learnable parameter on its own
    Param* p = params_[i];
    if (p->frozen()) continue;
    Backend& be = backend_for(p->grad.device());
    be.l2_norm_into(p->grad, norms_, static_cast<int64_t>(i), false);
    be.clip_to_norm(p->grad, norms_, static_cast<int64_t>(i), t);
  }
}

UpdateRule Optimizer::rule(const Param& p) const {
  UpdateRule r;
  r.solver = o_.solver;
  r.momentum = static_cast<float>(o_.momentum);
  r.b1 = static_cast<float>(o_.gradient_decay_factor);
  r.b2 = static_cast<float>(o_.squared_gradient_decay_factor);
  r.eps = static_cast<float>(o_.epsilon);
  r.l2 = static_cast<float>(o_.l2_regularization * p.l2_factor);
  // adamw's decoupled decay follows the same per-parameter factor (WeightL2Factor, BiasL2Factor, ...).
  if (o_.solver == Solver::kAdamW) r.wd = static_cast<float>(o_.weight_decay * p.l2_factor);
  return r;
}

void Optimizer::step(double lr) {
  if (device_scalars()) {
    prepare(lr);
    update();
    return;
  }
  clip();
  ++t_;
  for (size_t i = 0; i < params_.size(); ++i) {
    Param& p = *params_[i];
    if (p.frozen()) continue;
    const UpdateRule r = rule(p);
    const StepScalars k = StepScalars::at_step(r, static_cast<float>(lr * p.learn_rate_factor), t_);
    backend_for(p.value.device()).optimizer_update(r, k, p.value, p.grad, m_[i], s_[i]);
  }
}

void Optimizer::set_device_scalars(bool on) {
  prepared_step_ = -1;
  if (!on || params_.empty()) {
    scalars_ = scalars_host_ = Tensor();
    return;
  }
  const Shape shape{2 + static_cast<int64_t>(params_.size())};
  scalars_host_ = Tensor::zeros(shape, Device::cpu());
  scalars_ = Tensor::zeros(shape, params_[0]->value.device());
}

void Optimizer::prepare(double lr) {
  DLT_CHECK(device_scalars(), "Optimizer::prepare without set_device_scalars(true)");
  ++t_;
  float* h = scalars_host_.data();
  if (adam_family(o_.solver)) {
    h[0] = adam_correction(static_cast<float>(o_.gradient_decay_factor), t_);
    h[1] = adam_correction(static_cast<float>(o_.squared_gradient_decay_factor), t_);
  }
  for (size_t i = 0; i < params_.size(); ++i) h[2 + i] = static_cast<float>(lr * params_[i]->learn_rate_factor);
  if (AsyncDevice* dev = backend_for(scalars_.device()).async_device()) {
    dev->upload_begin(scalars_host_, scalars_);
    dev->upload_wait();
  } else {
    scalars_.copy_from(scalars_host_);
  }
  prepared_step_ = t_;
}

void Optimizer::update() {
  DLT_CHECK(device_scalars() && prepared_step_ == t_, "Optimizer::update without prepare() for this step");
  clip();
  for (size_t i = 0; i < params_.size(); ++i) {
    Param& p = *params_[i];
    if (p.frozen()) continue;
    StepScalars k;
    k.lr = StepScalar::at(scalars_, 2 + static_cast<int64_t>(i));
    k.c1 = StepScalar::at(scalars_, 0);
    k.c2 = StepScalar::at(scalars_, 1);
    backend_for(p.value.device()).optimizer_update(rule(p), k, p.value, p.grad, m_[i], s_[i]);
  }
}

std::vector<Optimizer::Slot> Optimizer::state() {
  std::vector<Slot> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (m_[i].defined()) out.push_back({"p" + std::to_string(i) + "/m", &m_[i]});
    if (s_[i].defined()) out.push_back({"p" + std::to_string(i) + "/s", &s_[i]});
  }
  return out;
}

}  // namespace dlt
