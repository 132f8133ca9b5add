// FusionPlan (fusion_plan.h): the rules, decided from FusionTraits and the layers' types, and
// the two-layer steps run through the same layer methods and backend ops as ever.
#include "net/fusion_plan.h"

#include "layers/batch_norm_layer.h"
#include "layers/conv_layer_base.h"
#include "util/error.h"

namespace dlt {

namespace {

// conv's weights and bias for inference: with bn folded in (scale and shift its per-channel
// affine, copied into the layer's folded weights), or, without bn, its own.
ConvLayerBase::InferenceParams params(ConvLayerBase& conv, BatchNormLayer* bn, std::vector<float>& scale,
                                      std::vector<float>& shift) {
  if (!bn) return conv.inference_params(nullptr, nullptr);
  bn->inference_affine(scale, shift);
  return conv.inference_params(&scale, &shift);
}

}  // namespace

FusionPlan::FusionPlan(const std::vector<Layer*>& layers, const std::vector<std::vector<int>>& inputs, bool cpu,
                       bool gpu_clipped_relu)
    : nodes_(layers.size()) {
  const size_t n = layers.size();
  std::vector<std::vector<int>> users(n);
  for (size_t j = 0; j < n; ++j)
    for (int p : inputs[j]) users[static_cast<size_t>(p)].push_back(static_cast<int>(j));
  auto traits = [&](int i) -> const FusionTraits& { return layers[static_cast<size_t>(i)]->fusion_traits(); };
  std::vector<Fusion> fusion(n);
  auto only_user = [&](size_t i) { return users[i].size() == 1 ? users[i][0] : -1; };

  // A ReLU that is its producer's only consumer runs in the producer's op; a max pooling that
  // is the ReLU's only consumer applies that ReLU's backward when the producer's is separate.
  for (size_t p = 0; p < n; ++p) {
    const int r = only_user(p);
    if (!layers[p]->fusion_traits().relu_in_op || r < 0 || !traits(r).relu) continue;
    fusion[p].relu = true;
    nodes_[static_cast<size_t>(r)].training = nodes_[static_cast<size_t>(r)].inference = {Kind::kAbsorbed,
                                                                                          static_cast<int>(p)};
    const int q = only_user(static_cast<size_t>(r));
    if (q >= 0 && layers[p]->fusion_traits().separate_relu_backward && traits(q).takes_relu_backward) {
      fusion[p].relu_backward_handed_over = true;
      fusion[static_cast<size_t>(q)].takes_relu_backward = true;
    }
  }
  // A clipped ReLU (MobileNet's ReLU6) that is a convolution's only consumer, on the CPU: the
  // convolution's oneDNN op clips as a post-op (on the GPU under CudaFusedClippedRelu: in the bias
  // epilogue). Its backward stays the convolution's (a max pooling's output cannot tell
  // y = ceiling from y inside, so no hand-over).
  if (cpu || gpu_clipped_relu) {
    for (size_t p = 0; p < n; ++p) {
      const int r = only_user(p);
      if (!layers[p]->fusion_traits().clipped_relu_in_op || r < 0 || !traits(r).clipped_relu) continue;
      fusion[p].relu = true;
      fusion[p].relu_ceiling = traits(r).ceiling;
      nodes_[static_cast<size_t>(r)].training = nodes_[static_cast<size_t>(r)].inference = {Kind::kAbsorbed,
                                                                                            static_cast<int>(p)};
    }
  }
  if (cpu) {
    // Training: batchNormalization -> (absorbed) ReLU -> plain max pooling.
    for (size_t p = 0; p < n; ++p) {
      auto* bn = dynamic_cast<BatchNormLayer*>(layers[p]);
      const int r = only_user(p);
      if (!bn || !fusion[p].relu || r < 0) continue;
      const int q = only_user(static_cast<size_t>(r));
      if (q < 0 || inputs[static_cast<size_t>(q)].size() != 1 || !traits(q).plain_max_pool) continue;
      fusion[p].with_max_pool = true;
      fusion[p].max_pool = traits(q).max_pool;
      nodes_[p].training = {Kind::kInMaxPool, q};
      nodes_[p].bn = bn;
      nodes_[static_cast<size_t>(q)].training = {Kind::kBnReluMaxPool, static_cast<int>(p)};
      nodes_[static_cast<size_t>(q)].bn = bn;
    }
    // Inference: a convolution and the batchNormalization that is its only consumer.
    for (size_t p = 0; p < n; ++p) {
      auto* conv = dynamic_cast<ConvLayerBase*>(layers[p]);
      const int q = only_user(p);
      if (!conv || q < 0 || inputs[static_cast<size_t>(q)].size() != 1) continue;
      auto* bn = dynamic_cast<BatchNormLayer*>(layers[static_cast<size_t>(q)]);
      if (!bn) continue;
      fusion[p].folds_affine = true;
      fusion[p].folded_relu = fusion[static_cast<size_t>(q)].relu;
      nodes_[p].output = q;
      // A clippedRelu or a swish that is the normalization's only consumer folds in too (the
      // convolution's clip or swish post-op), and the convolution writes its output.
      const int r = only_user(static_cast<size_t>(q));
      if (!fusion[static_cast<size_t>(q)].relu && r >= 0 && (traits(r).clipped_relu || traits(r).swish) &&
          inputs[static_cast<size_t>(r)].size() == 1) {
        if (traits(r).swish) {
          fusion[p].folded_swish = true;
        } else {
          fusion[p].folded_relu = true;
          fusion[p].relu_ceiling = traits(r).ceiling;
        }
        nodes_[static_cast<size_t>(r)].inference = {Kind::kFoldedAway, static_cast<int>(p)};
        nodes_[p].output = r;
      }
      nodes_[p].inference = {Kind::kFoldedConv, q};
      nodes_[p].folds = true;
      nodes_[p].conv = conv;
      nodes_[p].bn = bn;
      nodes_[static_cast<size_t>(q)].inference = {Kind::kFoldedAway, static_cast<int>(p)};
    }
    // Inference: a convolution and the swish that is its only consumer (EfficientNet's
    // convolutions with their normalization folded in by the exporter, its squeeze-and-excitation
    // reduction): the swish as the convolution's post-op.
    for (size_t p = 0; p < n; ++p) {
      auto* conv = dynamic_cast<ConvLayerBase*>(layers[p]);
      const int r = only_user(p);
      if (!conv || r < 0 || fusion[p].relu || fusion[p].folds_affine || !traits(r).swish ||
          inputs[static_cast<size_t>(r)].size() != 1)
        continue;
      fusion[p].folded_swish = true;
      nodes_[p].inference = {Kind::kFoldedConv, r};
      nodes_[p].folds = true;
      nodes_[p].conv = conv;
      nodes_[p].output = r;
      nodes_[static_cast<size_t>(r)].inference = {Kind::kFoldedAway, static_cast<int>(p)};
    }
    plan_depthwise(layers, inputs, users, fusion);
    plan_scaled(layers, users, fusion);
  }
  for (size_t i = 0; i < n; ++i) layers[i]->set_fusion(fusion[i]);
}

// Inference: a 1x1 convolution and the depthwise convolution that reads its output (after the
// normalization and activation the 1x1 one folds or absorbs), each with its own folding and
// activation, as the 1x1 convolution's op with a depthwise post-op: MobileNet's and
// EfficientNet's expansions, whose expanded tensor is the largest of their block.
void FusionPlan::plan_depthwise(const std::vector<Layer*>& layers, const std::vector<std::vector<int>>& inputs,
                                const std::vector<std::vector<int>>& users, std::vector<Fusion>& fusion) {
  auto only_user = [&](int i) {
    return users[static_cast<size_t>(i)].size() == 1 ? users[static_cast<size_t>(i)][0] : -1;
  };
  // The node whose output a convolution's inference writes (its folded normalization or
  // activation, or the ReLU its op absorbs, or itself).
  auto chain_end = [&](int c) {
    const Node& node = nodes_[static_cast<size_t>(c)];
    int e = node.inference.kind == Kind::kFoldedConv ? node.output : c;
    const int r = only_user(e);
    if (r >= 0 && nodes_[static_cast<size_t>(r)].inference.kind == Kind::kAbsorbed &&
        nodes_[static_cast<size_t>(r)].inference.partner == e)
      e = r;
    return e;
  };
  for (size_t p = 0; p < layers.size(); ++p) {
    auto* pw = dynamic_cast<ConvLayerBase*>(layers[p]);
    Node& pn = nodes_[p];
    if (!pw || !pw->is_pointwise() || (pn.inference.kind != Kind::kLayer && pn.inference.kind != Kind::kFoldedConv))
      continue;
    const int mid = chain_end(static_cast<int>(p));
    const int d = only_user(mid);
    if (d < 0 || inputs[static_cast<size_t>(d)].size() != 1) continue;
    auto* dw = dynamic_cast<ConvLayerBase*>(layers[static_cast<size_t>(d)]);
    Node& dn = nodes_[static_cast<size_t>(d)];
    if (!dw || !dw->is_plain_depthwise() ||
        (dn.inference.kind != Kind::kLayer && dn.inference.kind != Kind::kFoldedConv))
      continue;
    const Fusion& df = fusion[static_cast<size_t>(d)];
    DepthwisePostOp op = dw->depthwise_geometry();
    op.relu = df.relu || (df.folds_affine && df.folded_relu);
    op.relu_ceiling = df.relu_ceiling;
    op.swish = df.folded_swish;
    fusion[p].depthwise = op;
    pn.conv = pw;
    pn.dw_conv = dw;
    pn.dw_bn = dn.bn;
    pn.dw_folds = dn.folds;
    pn.mid = mid;
    pn.output = chain_end(d);
    pn.inference = {Kind::kConvDepthwise, d};
    dn.inference = {Kind::kFoldedAway, static_cast<int>(p)};
    // The projection: a 1x1 convolution, folded or not but with no activation, that is the
    // depthwise output's only consumer.
    const int q = only_user(pn.output);
    if (q < 0 || inputs[static_cast<size_t>(q)].size() != 1) continue;
    ConvLayerBase* pj = linear_pointwise(layers, fusion, q);
    if (!pj) continue;
    Node& qn = nodes_[static_cast<size_t>(q)];
    fusion[p].depthwise.project_k = pj->num_filters();
    pn.pj_conv = pj;
    pn.pj_bn = qn.bn;
    pn.pj_folds = qn.folds;
    pn.pj_mid = pn.output;
    pn.output = qn.inference.kind == Kind::kFoldedConv ? qn.output : q;
    qn.inference = {Kind::kFoldedAway, static_cast<int>(p)};
  }
}

// Node q's layer as a 1x1 convolution without activation (folded with its normalization or
// not) that no other inference step has taken, or null.
ConvLayerBase* FusionPlan::linear_pointwise(const std::vector<Layer*>& layers, const std::vector<Fusion>& fusion,
                                            int q) const {
  auto* conv = dynamic_cast<ConvLayerBase*>(layers[static_cast<size_t>(q)]);
  const Node& qn = nodes_[static_cast<size_t>(q)];
  const Fusion& qf = fusion[static_cast<size_t>(q)];
  if (!conv || !conv->is_pointwise() || qf.relu || qf.folded_relu || qf.folded_swish ||
      (qn.inference.kind != Kind::kLayer && qn.inference.kind != Kind::kFoldedConv))
    return nullptr;
  return conv;
}

// Inference: a multiplication by a per-channel scale (FusionTraits::channel_scale_input) and
// the 1x1 convolution without activation that is its only consumer (folded or not):
// squeeze-and-excitation's product and the projection after it (EfficientNet's blocks).
void FusionPlan::plan_scaled(const std::vector<Layer*>& layers, const std::vector<std::vector<int>>& users,
                             std::vector<Fusion>& fusion) {
  for (size_t m = 0; m < layers.size(); ++m) {
    const int scale = layers[m]->fusion_traits().channel_scale_input;
    if (scale < 0 || users[m].size() != 1 || nodes_[m].inference.kind != Kind::kLayer) continue;
    const int q = users[m][0];
    ConvLayerBase* conv = linear_pointwise(layers, fusion, q);
    if (!conv) continue;
    Node& qn = nodes_[static_cast<size_t>(q)];
    fusion[static_cast<size_t>(q)].scaled_input = true;
    qn.conv = conv;
    if (qn.inference.kind == Kind::kLayer) qn.output = q;
    qn.mul = layers[m];
    qn.scale_input = scale;
    qn.inference = {Kind::kScaledConv, static_cast<int>(m)};
    nodes_[m].inference = {Kind::kFoldedAway, q};
  }
}

FusionPlan::Step FusionPlan::step(size_t i, const RunContext& ctx, bool folding) const {
  const Node& node = nodes_[i];
  if (!ctx.training) {
    const Kind k = node.inference.kind;
    if ((k == Kind::kFoldedConv || k == Kind::kFoldedAway || k == Kind::kConvDepthwise || k == Kind::kScaledConv) &&
        !folding)
      return {};
    return node.inference;
  }
  const Kind k = node.training.kind;
  if (k == Kind::kInMaxPool || k == Kind::kBnReluMaxPool) {
    if (!node.bn->fused_max_pool_active(ctx)) return {};
  }
  return node.training;
}

void FusionPlan::forward_folded(size_t i, const Tensor& x, Tensor& y) {
  Node& node = nodes_[i];
  DLT_CHECK(node.conv, "fusion plan: node " << i << " folds nothing");
  run_folded(*node.conv, node.bn, x, y);
}

void FusionPlan::run_folded(ConvLayerBase& conv, BatchNormLayer* bn, const Tensor& x, Tensor& y) {
  if (!bn) {  // a swish alone
    conv.forward_with_swish(x, y);
    return;
  }
  bn->inference_affine(scale_, shift_);
  conv.forward_folded(x, y, scale_, shift_);
}

void FusionPlan::forward_depthwise(size_t i, const Tensor& x, Tensor& mid, Tensor* pj_mid, Tensor& y,
                                   const RunContext& ctx) {
  Node& node = nodes_[i];
  DLT_CHECK(node.dw_conv, "fusion plan: node " << i << " runs no depthwise convolution");
  DLT_CHECK((pj_mid != nullptr) == (node.pj_conv != nullptr),
            "fusion plan: node " << i << ": the projection's input does not match the plan");
  if (!node.conv->depthwise_ready()) {  // no fused kernel here (or mixed precision): apart
    run_alone(*node.conv, node.bn, node.folds, x, mid, ctx);
    run_alone(*node.dw_conv, node.dw_bn, node.dw_folds, mid, pj_mid ? *pj_mid : y, ctx);
    if (pj_mid) run_alone(*node.pj_conv, node.pj_bn, node.pj_folds, *pj_mid, y, ctx);
    return;
  }
  const ConvLayerBase::InferenceParams own = params(*node.conv, node.bn, scale_, shift_);
  const ConvLayerBase::InferenceParams dw = params(*node.dw_conv, node.dw_bn, scale_, shift_);
  const ConvLayerBase::InferenceParams pj =
      node.pj_conv ? params(*node.pj_conv, node.pj_bn, scale_, shift_) : ConvLayerBase::InferenceParams{};
  node.conv->forward_depthwise(x, own, dw, node.pj_conv ? &pj : nullptr, y);
}

void FusionPlan::run_alone(ConvLayerBase& conv, BatchNormLayer* bn, bool folds, const Tensor& x, Tensor& y,
                           const RunContext& ctx) {
  if (folds)
    run_folded(conv, bn, x, y);
  else
    conv.forward({&x}, y, ctx);
}

void FusionPlan::forward_scaled(size_t i, const std::vector<const Tensor*>& xs, Tensor& mid, Tensor& y,
                                const RunContext& ctx) {
  Node& node = nodes_[i];
  DLT_CHECK(node.mul && xs.size() == 2, "fusion plan: node " << i << " runs no multiplication");
  if (!node.conv->scaled_ready()) {  // no kernel here (or mixed precision, or a large scale): apart
    node.mul->forward(xs, mid, ctx);
    run_alone(*node.conv, node.bn, node.folds, mid, y, ctx);
    return;
  }
  const Tensor& x = *xs[static_cast<size_t>(1 - node.scale_input)];
  const Tensor& s = *xs[static_cast<size_t>(node.scale_input)];
  node.conv->forward_scaled(x, s, params(*node.conv, node.bn, scale_, shift_), y);
}

void FusionPlan::forward_bn_relu_max_pool(size_t i, const Tensor& x, Tensor& pooled, const RunContext& ctx) {
  DLT_CHECK(nodes_[i].bn, "fusion plan: node " << i << " runs no batch normalization");
  nodes_[i].bn->forward_fused_max_pool(x, pooled, ctx);
}

void FusionPlan::backward_bn_relu_max_pool(size_t i, const Tensor& x, const Tensor& pooled, const Tensor& dpooled,
                                           Tensor* dx, const RunContext& ctx) {
  DLT_CHECK(nodes_[i].bn, "fusion plan: node " << i << " runs no batch normalization");
  nodes_[i].bn->backward_fused_max_pool(x, pooled, dpooled, dx, ctx);
}

}  // namespace dlt
