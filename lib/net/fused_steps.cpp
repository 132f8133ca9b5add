// FusionPlan's fused inference steps (fusion_plan.h): the convolution ops they run, made from
// the fused descriptors the backend accepted when the plan was made, on the parameters the
// layers expose (Layer::params(): a convolution's Weights and Bias; Layer::inference_affine:
// the normalization it folds). Where an op has no kernel for the batch (depthwise_ready,
// scaled_ready), the step runs the layers apart.
#include "net/fusion_plan.h"

#include "util/check.h"

namespace dlt {

void FusionPlan::setup(size_t i, int64_t n, Backend& be, bool mixed) {
  Node& node = nodes_[i];
  const Fusion& f = fusion_[i];
  if (!node.conv || !(node.folds || f.depthwise.kernel > 0 || f.scaled_input)) {
    node.op.reset();
    return;
  }
  const FusionTraits& t = node.conv->fusion_traits();
  ConvDesc d = fused_conv(t.conv, f);
  d.n = n;
  d.bf16 = mixed;
  // One op for the layer's passes and the fused steps: its descriptor extends the layer's, so
  // the layer's own op (made in its setup just before) gives way to it.
  node.op = be.make(d);
  if (t.op) *t.op = node.op;
  if (f.folds_affine && !node.folded_w.defined()) {
    node.folded_w = Tensor(Shape{d.k, d.kh, d.kw, d.group_c()}, be.device());
    node.folded_b = Tensor(Shape{d.k}, be.device());
  }
}

bool FusionPlan::depthwise_ready(size_t conv) const {
  const Node& node = nodes_[conv];
  return node.dw >= 0 && node.op && node.op->depthwise_ready();
}

bool FusionPlan::scaled_ready(size_t conv) const {
  const Node& node = nodes_[conv];
  return node.mul && node.op && node.op->scaled_ready();
}

// w * s and b * s + t per output channel (host values: folding runs on host memory). Each
// filter's row of weights belongs to its one output channel, grouped or not.
FusionPlan::Params FusionPlan::inference_params(size_t i) {
  Node& node = nodes_[i];
  std::vector<Param>& params = node.conv->params();
  const Tensor& wt = params[0].value;
  const Tensor& bt = params[1].value;
  if (!node.affine) return {&wt, &bt};
  node.affine->inference_affine(scale_, shift_);
  const int64_t k = bt.numel();
  DLT_CHECK(node.folded_w.defined() && static_cast<int64_t>(scale_.size()) == k &&
                static_cast<int64_t>(shift_.size()) == k && wt.numel() == node.folded_w.numel(),
            "fusion plan: node " << i << " ('" << node.conv->name() << "') has nothing to fold");
  const int64_t row = wt.numel() / k;
  const float* w = wt.data();
  const float* b = bt.data();
  float* fw = node.folded_w.data();
  float* fb = node.folded_b.data();
  for (int64_t c = 0; c < k; ++c) {
    const float s = scale_[static_cast<size_t>(c)];
    for (int64_t j = 0; j < row; ++j) fw[c * row + j] = w[c * row + j] * s;
    fb[c] = b[c] * s + shift_[static_cast<size_t>(c)];
  }
  return {&node.folded_w, &node.folded_b};
}

void FusionPlan::forward_folded(size_t i, const Tensor& x, Tensor& y, const Tensor* residual) {
  Node& node = nodes_[i];
  DLT_CHECK(node.folds && node.op, "fusion plan: node " << i << " folds nothing");
  const Fusion& f = fusion_[i];
  DLT_CHECK(f.summed == (residual != nullptr),
            "fusion plan: node " << i << ": the residual input does not match the plan");
  const Params p = inference_params(i);
  if (f.summed)
    node.op->forward_sum(x, *p.w, *p.b, *residual, y);
  else
    node.op->forward(x, *p.w, *p.b, y, f.folded_relu || f.folded_act);
}

void FusionPlan::run_alone(size_t i, const Tensor& x, Tensor& y, const RunContext& ctx) {
  if (nodes_[i].folds)
    forward_folded(i, x, y);
  else
    nodes_[i].conv->forward({&x}, y, ctx);
}

void FusionPlan::forward_depthwise(size_t i, const Tensor& x, Tensor& mid, Tensor* pj_mid, Tensor& y,
                                   const RunContext& ctx) {
  Node& node = nodes_[i];
  DLT_CHECK(node.dw >= 0, "fusion plan: node " << i << " runs no depthwise convolution");
  DLT_CHECK((pj_mid != nullptr) == (node.pj >= 0),
            "fusion plan: node " << i << ": the projection's input does not match the plan");
  const size_t dw = static_cast<size_t>(node.dw);
  if (!depthwise_ready(i)) {  // no fused kernel here (or mixed precision): apart
    run_alone(i, x, mid, ctx);
    run_alone(dw, mid, pj_mid ? *pj_mid : y, ctx);
    if (pj_mid) run_alone(static_cast<size_t>(node.pj), *pj_mid, y, ctx);
    return;
  }
  const Params own = inference_params(i);
  const Params dwp = inference_params(dw);
  const Tensor none;
  const Params pj = node.pj >= 0 ? inference_params(static_cast<size_t>(node.pj)) : Params{&none, &none};
  node.op->forward_depthwise(x, *own.w, *own.b, *dwp.w, *dwp.b, *pj.w, *pj.b, y);
}

void FusionPlan::forward_scaled(size_t i, const std::vector<const Tensor*>& xs, Tensor& mid, Tensor& y,
                                const RunContext& ctx) {
  Node& node = nodes_[i];
  DLT_CHECK(node.mul && xs.size() == 2, "fusion plan: node " << i << " runs no multiplication");
  if (!scaled_ready(i)) {  // no kernel here (or mixed precision, or a large scale): apart
    node.mul->forward(xs, mid, ctx);
    run_alone(i, mid, y, ctx);
    return;
  }
  const Tensor& x = *xs[static_cast<size_t>(1 - node.scale_input)];
  const Tensor& s = *xs[static_cast<size_t>(node.scale_input)];
  const Params p = inference_params(i);
  node.op->forward_scaled(x, s, *p.w, *p.b, y);
}

}  // namespace dlt
