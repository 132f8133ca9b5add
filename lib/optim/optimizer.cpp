#include "optim/optimizer.h"

#include <cmath>

#include "backend/backend.h"
#include "util/check.h"

namespace dlt {

double learn_rate_at(const TrainingOptions& o, int64_t epoch) {
  if (o.learn_rate_schedule != "piecewise" || o.learn_rate_drop_period <= 0) return o.initial_learn_rate;
  return o.initial_learn_rate * std::pow(o.learn_rate_drop_factor, static_cast<double>(epoch / o.learn_rate_drop_period));
}

namespace {

bool clips_by_norm(const TrainingOptions& o) {
  const double t = o.gradient_threshold;
  return t > 0 && !std::isinf(t) && o.gradient_threshold_method != "absolute-value";
}

}  // namespace

Optimizer::Optimizer(const TrainingOptions& options, std::vector<Param*> params)
    : o_(options), params_(std::move(params)) {
  for (Param* p : params_) {
    Device dev = p->value.device();
    m_.push_back(o_.solver == "rmsprop" ? Tensor() : Tensor::zeros(p->shape, dev));
    s_.push_back(o_.solver == "sgdm" ? Tensor() : Tensor::zeros(p->shape, dev));
  }
  if (clips_by_norm(o_) && !params_.empty()) {
    const bool global = o_.gradient_threshold_method == "global-l2norm";
    norms_ = Tensor::zeros(Shape{global ? 1 : static_cast<int64_t>(params_.size())},
                           params_[0]->value.device());
  }
}

// Clipping by norm stays on the parameters' device: the L2 norms go to norms_ and the
// scale kernels read them there, so a GPU step waits for nothing and a CUDA graph can hold it.
void Optimizer::clip() {
  double t = o_.gradient_threshold;
  if (!(t > 0) || std::isinf(t)) return;
  const std::string& method = o_.gradient_threshold_method;
  if (method == "absolute-value") {
    const auto limit = static_cast<float>(t);
    for (Param* p : params_)
      if (!p->frozen()) backend_for(p->grad.device()).clamp(p->grad, -limit, limit);
    return;
  }
  if (method == "global-l2norm") {
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
    Backend& be = backend_for(p.value.device());
    float plr = static_cast<float>(lr * p.learn_rate_factor);
    float l2 = static_cast<float>(o_.l2_regularization * p.l2_factor);
    if (o_.solver == "sgdm") {
      be.sgdm_update(p.value, p.grad, m_[i], plr, static_cast<float>(o_.momentum), l2);
    } else if (o_.solver == "adam") {
      be.adam_update(p.value, p.grad, m_[i], s_[i], plr, static_cast<float>(o_.gradient_decay_factor),
                     static_cast<float>(o_.squared_gradient_decay_factor), static_cast<float>(o_.epsilon), t_, l2);
    } else {
      be.rmsprop_update(p.value, p.grad, s_[i], plr, static_cast<float>(o_.squared_gradient_decay_factor),
                        static_cast<float>(o_.epsilon), l2);
    }
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
  if (o_.solver == "adam") {
    h[0] = Backend::adam_correction(static_cast<float>(o_.gradient_decay_factor), t_);
    h[1] = Backend::adam_correction(static_cast<float>(o_.squared_gradient_decay_factor), t_);
  }
  for (size_t i = 0; i < params_.size(); ++i) h[2 + i] = static_cast<float>(lr * params_[i]->learn_rate_factor);
  Backend& be = backend_for(scalars_.device());
  be.upload_begin(scalars_host_, scalars_);  // the CPU copies at once
  be.upload_wait();
  prepared_step_ = t_;
}

void Optimizer::update() {
  DLT_CHECK(device_scalars() && prepared_step_ == t_, "Optimizer::update without prepare() for this step");
  clip();
  for (size_t i = 0; i < params_.size(); ++i) {
    Param& p = *params_[i];
    if (p.frozen()) continue;
    Backend& be = backend_for(p.value.device());
    Backend::StepScalars k{&scalars_, 2 + static_cast<int64_t>(i), 0, 1};
    float l2 = static_cast<float>(o_.l2_regularization * p.l2_factor);
    if (o_.solver == "sgdm") {
      be.sgdm_update_from(p.value, p.grad, m_[i], k, static_cast<float>(o_.momentum), l2);
    } else if (o_.solver == "adam") {
      be.adam_update_from(p.value, p.grad, m_[i], s_[i], k, static_cast<float>(o_.gradient_decay_factor),
                          static_cast<float>(o_.squared_gradient_decay_factor), static_cast<float>(o_.epsilon), l2);
    } else {
      be.rmsprop_update_from(p.value, p.grad, s_[i], k, static_cast<float>(o_.squared_gradient_decay_factor),
                             static_cast<float>(o_.epsilon), l2);
    }
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
