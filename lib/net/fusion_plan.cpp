// FusionPlan (fusion_plan.h): the rules, decided from the layers' FusionTraits and what the
// backend accepts (Backend::supports on the fused op's descriptor). The fused steps run in
// fused_steps.cpp.
#include "net/fusion_plan.h"

#include "backend/collectives.h"

namespace dlt {

namespace {

// A depthwise convolution a DepthwisePostOp can describe: one filter per channel, square,
// dense, the same stride both ways and the same padding on the top and left.
bool plain_depthwise(const ConvDesc& d) {
  return d.groups == d.c && d.k == d.c && d.kh == d.kw && d.stride_h == d.stride_w && d.dilation_h == 1 &&
         d.dilation_w == 1 && d.pad_t == d.pad_l;
}

// Its kernel, stride, top padding and output size as a DepthwisePostOp (no activation).
DepthwisePostOp depthwise_geometry(const ConvDesc& d) {
  DepthwisePostOp p;
  p.kernel = d.kh;
  p.stride = d.stride_h;
  p.pad = d.pad_t;
  p.out_h = d.out_h();
  p.out_w = d.out_w();
  return p;
}

}  // namespace

ConvDesc FusionPlan::fused_conv(const ConvDesc& conv, const Fusion& f) {
  ConvDesc d = conv;
  d.fuse_relu = f.relu;
  d.relu_ceiling = f.relu_ceiling;
  d.inference_relu = (f.folds_affine && f.folded_relu) || f.folded_act;
  d.inference_post_act = f.folded_act;
  d.inference_act = f.folded_kind;
  d.folded_affine = f.folds_affine;
  d.depthwise = f.depthwise;
  d.scaled_input = f.scaled_input;
  d.inference_sum = f.summed;
  d.sum_relu = f.sum_relu;
  return d;
}

FusionPlan::FusionPlan(const std::vector<Layer*>& layers, const std::vector<std::vector<int>>& inputs,
                       const Backend& backend)
    : nodes_(layers.size()), fusion_(layers.size()) {
  const size_t n = layers.size();
  std::vector<std::vector<int>> users(n);
  for (size_t j = 0; j < n; ++j)
    for (int p : inputs[j]) users[static_cast<size_t>(p)].push_back(static_cast<int>(j));
  auto traits = [&](size_t i) -> const FusionTraits& { return layers[i]->fusion_traits(); };
  auto only_user = [&](size_t i) { return users[i].size() == 1 ? users[i][0] : -1; };
  auto single_input = [&](int i) { return inputs[static_cast<size_t>(i)].size() == 1; };
  // Whether the backend runs convolution p with the decisions f.
  auto supports = [&](size_t p, const Fusion& f) { return backend.supports(fused_conv(traits(p).conv, f)); };
  std::vector<Fusion>& fusion = fusion_;

  // A ReLU that is its producer's only consumer runs in the producer's op; a max pooling that
  // is the ReLU's only consumer applies that ReLU's backward when the producer's is separate.
  for (size_t p = 0; p < n; ++p) {
    const int r = only_user(p);
    if (!traits(p).relu_in_op || r < 0 || !traits(static_cast<size_t>(r)).relu) continue;
    fusion[p].relu = true;
    nodes_[static_cast<size_t>(r)].training =
        nodes_[static_cast<size_t>(r)].inference = {Kind::kAbsorbed, static_cast<int>(p)};
    const int q = only_user(static_cast<size_t>(r));
    if (q >= 0 && traits(p).separate_relu_backward && traits(static_cast<size_t>(q)).takes_relu_backward) {
      fusion[p].relu_backward_handed_over = true;
      fusion[static_cast<size_t>(q)].takes_relu_backward = true;
    }
  }
  // A clipped ReLU (MobileNet's ReLU6) that is a convolution's only consumer, where the backend's
  // convolution clips (a post-op, or a bias epilogue). Its backward stays the convolution's (a
  // max pooling's output cannot tell y = ceiling from y inside, so no hand-over).
  for (size_t p = 0; p < n; ++p) {
    const int r = only_user(p);
    if (!traits(p).clipped_relu_in_op || !traits(p).conv_op || r < 0 || !traits(static_cast<size_t>(r)).clipped_relu)
      continue;
    Fusion f = fusion[p];
    f.relu = true;
    f.relu_ceiling = traits(static_cast<size_t>(r)).ceiling;
    if (!supports(p, f)) continue;
    fusion[p] = f;
    nodes_[static_cast<size_t>(r)].training =
        nodes_[static_cast<size_t>(r)].inference = {Kind::kAbsorbed, static_cast<int>(p)};
  }
  // Training: batchNormalization -> (absorbed) ReLU -> plain max pooling, as one op.
  for (size_t p = 0; p < n; ++p) {
    const int r = only_user(p);
    if (!traits(p).batch_norm_op || !fusion[p].relu || r < 0) continue;
    const int q = only_user(static_cast<size_t>(r));
    if (q < 0 || !single_input(q) || !traits(static_cast<size_t>(q)).plain_max_pool) continue;
    const PoolDesc& pool = traits(static_cast<size_t>(q)).max_pool;
    BnReluMaxPoolDesc f;
    f.bn = traits(p).batch_norm;
    f.bn.fuse_relu = true;
    f.kh = pool.kh;
    f.kw = pool.kw;
    f.stride_h = pool.stride_h;
    f.stride_w = pool.stride_w;
    if (!backend.supports(f)) continue;
    fusion[p].with_max_pool = true;
    fusion[p].max_pool = pool;
    nodes_[p].training = {Kind::kInMaxPool, q};
    nodes_[static_cast<size_t>(q)].training = {Kind::kBnReluMaxPool, static_cast<int>(p)};
  }
  // Inference: a convolution and the per-channel affine (batchNormalization) that is its only
  // consumer, folded into its weights and bias.
  // (A channel-wise 1x1 convolution is both: once folded into its producer, it folds nothing.)
  auto folded_away = [&](size_t i) { return nodes_[i].inference.kind == Kind::kFoldedAway; };
  for (size_t p = 0; p < n; ++p) {
    const int q = only_user(p);
    if (!traits(p).conv_op || folded_away(p) || q < 0 || !single_input(q) ||
        !traits(static_cast<size_t>(q)).affine_in_inference)
      continue;
    Fusion f = fusion[p];
    f.folds_affine = true;
    f.folded_relu = fusion[static_cast<size_t>(q)].relu;
    // A clippedRelu, a swish, a GELU or a hard swish that is the normalization's only consumer folds in too
    // (the convolution's clip or activation post-op), and the convolution writes its output.
    const int r = only_user(static_cast<size_t>(q));
    bool with_r = false;
    if (!fusion[static_cast<size_t>(q)].relu && r >= 0 && single_input(r)) {
      const FusionTraits& rt = traits(static_cast<size_t>(r));
      Fusion g = f;
      if (rt.post_act) {
        g.folded_act = true;
        g.folded_kind = rt.post_act_kind;
      } else if (rt.clipped_relu) {
        g.folded_relu = true;
        g.relu_ceiling = rt.ceiling;
      }
      if ((rt.post_act || rt.clipped_relu) && supports(p, g)) {
        f = g;
        with_r = true;
      }
    }
    if (!with_r && !supports(p, f)) continue;
    fusion[p] = f;
    Node& node = nodes_[p];
    node.output = q;
    if (with_r) {
      nodes_[static_cast<size_t>(r)].inference = {Kind::kFoldedAway, static_cast<int>(p)};
      node.output = r;
    }
    node.inference = {Kind::kFoldedConv, q};
    node.folds = true;
    node.conv = layers[p];
    node.affine = layers[static_cast<size_t>(q)];
    nodes_[static_cast<size_t>(q)].inference = {Kind::kFoldedAway, static_cast<int>(p)};
  }
  // Inference: a convolution and the swish, GELU or hard swish that is its only consumer
  // (EfficientNet's and MobileNetV3's convolutions with their normalization folded in by the
  // exporter, EfficientNet's squeeze-and-excitation reduction; PoolFormer's and EfficientFormer's
  // 1x1 MLPs): the activation as the convolution's post-op.
  for (size_t p = 0; p < n; ++p) {
    const int r = only_user(p);
    if (!traits(p).conv_op || folded_away(p) || r < 0 || fusion[p].relu || fusion[p].folds_affine ||
        !traits(static_cast<size_t>(r)).post_act || !single_input(r))
      continue;
    Fusion f = fusion[p];
    f.folded_act = true;
    f.folded_kind = traits(static_cast<size_t>(r)).post_act_kind;
    if (!supports(p, f)) continue;
    fusion[p] = f;
    Node& node = nodes_[p];
    node.inference = {Kind::kFoldedConv, r};
    node.folds = true;
    node.conv = layers[p];
    node.output = r;
    nodes_[static_cast<size_t>(r)].inference = {Kind::kFoldedAway, static_cast<int>(p)};
  }
  plan_depthwise(layers, inputs, users, backend);
  plan_scaled(layers, users, backend);
  plan_sum(layers, inputs, users, backend);
  for (size_t i = 0; i < n; ++i) layers[i]->set_fusion(fusion[i]);
}

// Inference: a 1x1 convolution and the depthwise convolution that reads its output (after the
// normalization and activation the 1x1 one folds or absorbs), each with its own folding and
// activation, as the 1x1 convolution's op with a depthwise post-op: MobileNet's and
// EfficientNet's expansions, whose expanded tensor is the largest of their block.
void FusionPlan::plan_depthwise(const std::vector<Layer*>& layers, const std::vector<std::vector<int>>& inputs,
                                const std::vector<std::vector<int>>& users, const Backend& backend) {
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
  auto own_step = [](const Node& node) {
    return node.inference.kind == Kind::kLayer || node.inference.kind == Kind::kFoldedConv;
  };
  for (size_t p = 0; p < layers.size(); ++p) {
    const FusionTraits& pt = layers[p]->fusion_traits();
    Node& pn = nodes_[p];
    if (!pt.conv_op || !pt.conv.is_pointwise() || !own_step(pn)) continue;
    const int mid = chain_end(static_cast<int>(p));
    const int d = only_user(mid);
    if (d < 0 || inputs[static_cast<size_t>(d)].size() != 1) continue;
    const FusionTraits& dt = layers[static_cast<size_t>(d)]->fusion_traits();
    Node& dn = nodes_[static_cast<size_t>(d)];
    if (!dt.conv_op || !plain_depthwise(dt.conv) || !own_step(dn)) continue;
    const Fusion& df = fusion_[static_cast<size_t>(d)];
    Fusion f = fusion_[p];
    f.depthwise = depthwise_geometry(dt.conv);
    f.depthwise.relu = df.relu || (df.folds_affine && df.folded_relu);
    f.depthwise.relu_ceiling = df.relu_ceiling;
    f.depthwise.post_act = df.folded_act;
    f.depthwise.act = df.folded_kind;
    const int end = chain_end(d);
    // The projection: a 1x1 convolution, folded or not but with no activation, that is the
    // depthwise output's only consumer.
    const int q = only_user(end);
    bool project = q >= 0 && inputs[static_cast<size_t>(q)].size() == 1 && linear_pointwise(layers, q);
    if (project) {
      Fusion g = f;
      g.depthwise.project_k = layers[static_cast<size_t>(q)]->fusion_traits().conv.k;
      project = backend.supports(fused_conv(pt.conv, g));
      if (project) f = g;
    }
    if (!project && !backend.supports(fused_conv(pt.conv, f))) continue;
    fusion_[p] = f;
    pn.conv = layers[p];
    dn.conv = layers[static_cast<size_t>(d)];
    pn.dw = d;
    pn.mid = mid;
    pn.output = end;
    pn.inference = {Kind::kConvDepthwise, d};
    dn.inference = {Kind::kFoldedAway, static_cast<int>(p)};
    if (!project) continue;
    Node& qn = nodes_[static_cast<size_t>(q)];
    qn.conv = layers[static_cast<size_t>(q)];
    pn.pj = q;
    pn.pj_mid = pn.output;
    pn.output = qn.inference.kind == Kind::kFoldedConv ? qn.output : q;
    qn.inference = {Kind::kFoldedAway, static_cast<int>(p)};
  }
}

bool FusionPlan::linear_pointwise(const std::vector<Layer*>& layers, int q) const {
  const FusionTraits& t = layers[static_cast<size_t>(q)]->fusion_traits();
  const Node& qn = nodes_[static_cast<size_t>(q)];
  const Fusion& qf = fusion_[static_cast<size_t>(q)];
  return t.conv_op && t.conv.is_pointwise() && !qf.relu && !qf.folded_relu && !qf.folded_act &&
         (qn.inference.kind == Kind::kLayer || qn.inference.kind == Kind::kFoldedConv);
}

// Inference: a multiplication by a per-channel scale (FusionTraits::channel_scale_input) and
// the 1x1 convolution without activation that is its only consumer (folded or not):
// squeeze-and-excitation's product and the projection after it (EfficientNet's blocks).
void FusionPlan::plan_scaled(const std::vector<Layer*>& layers, const std::vector<std::vector<int>>& users,
                             const Backend& backend) {
  for (size_t m = 0; m < layers.size(); ++m) {
    const int scale = layers[m]->fusion_traits().channel_scale_input;
    if (scale < 0 || users[m].size() != 1 || nodes_[m].inference.kind != Kind::kLayer) continue;
    const int q = users[m][0];
    if (!linear_pointwise(layers, q)) continue;
    Fusion f = fusion_[static_cast<size_t>(q)];
    f.scaled_input = true;
    if (!backend.supports(fused_conv(layers[static_cast<size_t>(q)]->fusion_traits().conv, f))) continue;
    fusion_[static_cast<size_t>(q)] = f;
    Node& qn = nodes_[static_cast<size_t>(q)];
    qn.conv = layers[static_cast<size_t>(q)];
    if (qn.inference.kind == Kind::kLayer) qn.output = q;
    qn.mul = layers[m];
    qn.scale_input = scale;
    qn.inference = {Kind::kScaledConv, static_cast<int>(m)};
    nodes_[m].inference = {Kind::kFoldedAway, q};
  }
}

// Inference: a convolution without an activation of its own, its normalization folded or not
// (ResNet's last convolution of a block, a branch's closing projection with its LayerScale
// folded), and the two-input addition that is the only consumer of its output: the addition,
// and the ReLU that is the addition's only consumer, run in the convolution's op
// (ConvDesc::inference_sum), which adds the addition's other input. That input must be computed
// before the convolution's step: a node before it (every node's output is written at its own
// step or an earlier one; the values a fused step leaves unwritten have only that step as
// consumer). A block's projection shortcut that comes after its last convolution takes the sum
// instead.
void FusionPlan::plan_sum(const std::vector<Layer*>& layers, const std::vector<std::vector<int>>& inputs,
                          const std::vector<std::vector<int>>& users, const Backend& backend) {
  auto only_user = [&](int i) {
    return users[static_cast<size_t>(i)].size() == 1 ? users[static_cast<size_t>(i)][0] : -1;
  };
  for (size_t p = 0; p < layers.size(); ++p) {
    const FusionTraits& t = layers[p]->fusion_traits();
    Node& pn = nodes_[p];
    const Fusion& pf = fusion_[p];
    if (!t.conv_op || pf.relu || pf.folded_relu || pf.folded_act || pf.depthwise.kernel > 0 || pf.scaled_input ||
        (pn.inference.kind != Kind::kLayer && pn.inference.kind != Kind::kFoldedConv))
      continue;
    const int e = pn.inference.kind == Kind::kFoldedConv ? pn.output : static_cast<int>(p);
    const int a = only_user(e);
    if (a < 0 || !layers[static_cast<size_t>(a)]->fusion_traits().residual_sum ||
        inputs[static_cast<size_t>(a)].size() != 2 || nodes_[static_cast<size_t>(a)].inference.kind != Kind::kLayer)
      continue;
    const std::vector<int>& in = inputs[static_cast<size_t>(a)];
    const int other = in[0] == e ? in[1] : in[0];
    if (other == e || other >= static_cast<int>(p)) continue;
    const int r = only_user(a);
    const bool relu = r >= 0 && inputs[static_cast<size_t>(r)].size() == 1 &&
                      layers[static_cast<size_t>(r)]->fusion_traits().relu &&
                      nodes_[static_cast<size_t>(r)].inference.kind == Kind::kLayer;
    Fusion f = pf;
    f.summed = true;
    f.sum_relu = relu;
    if (!backend.supports(fused_conv(t.conv, f))) continue;
    fusion_[p] = f;
    if (pn.inference.kind == Kind::kLayer) pn.inference = {Kind::kFoldedConv, a};
    pn.conv = layers[p];
    pn.folds = true;
    pn.sum = other;
    pn.output = relu ? r : a;
    nodes_[static_cast<size_t>(a)].inference = {Kind::kFoldedAway, static_cast<int>(p)};
    if (relu) nodes_[static_cast<size_t>(r)].inference = {Kind::kFoldedAway, static_cast<int>(p)};
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
  // BnReluMaxPoolOp normalizes with this rank's statistics: data-parallel training (synchronized
  // batch norm) runs the layers one by one.
  if ((k == Kind::kInMaxPool || k == Kind::kBnReluMaxPool) && ctx.comm && ctx.comm->size() > 1) return {};
  return node.training;
}

}  // namespace dlt
