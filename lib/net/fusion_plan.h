// FusionPlan: which neighbouring layers of a Network run as one op, decided once when the
// network is built from what the layers publish (FusionTraits, layers/fusion.h: plain facts and
// their ops' descriptors per image) and what the network's backend accepts: each rule builds
// the descriptor of the fused op it wants and keeps the fusion only where
// Backend::supports(desc). The plan knows no layer class and no device. The layers declare
// what they allow and obey the Fusion the plan sets; the fused inference steps run on ops the
// plan makes (net/fused_steps.cpp). The fusions, each between a layer and its only consumer:
//  - ReLU: a producer whose op can apply a ReLU (FusionTraits::relu_in_op: the fuse_relu of
//    every backend's convolution, fully-connected and batch-norm ops) absorbs it; the ReLU's
//    node runs nothing and shares the producer's tensors.
//  - clipped ReLU: a convolution absorbs a clippedRelu the same way where the backend accepts
//    ConvDesc::relu_ceiling (a clip post-op).
//  - ReLU backward hand-over: a producer whose ReLU backward is a pass of its own hands it to
//    the max pooling after the ReLU, which applies it to its smaller gradient.
//  - batchNormalization + ReLU + max pooling as one op in training (BnReluMaxPoolDesc); the
//    layers run one by one in data-parallel training (the op has only this rank's statistics).
//  - convolution + batchNormalization or a channel-wise 1x1 convolution (an imported LayerScale)
//    (+ a clippedRelu, swish, GELU or hard swish after it) folded into one convolution in inference
//    (ConvDesc::folded_affine, inference_relu, inference_post_act); a convolution + swish, GELU or hard swish
//    the same way without a normalization.
//  - a 1x1 convolution and the depthwise convolution after it, each as folded, as one op in
//    inference (ConvDesc::depthwise; apart where the op has no kernel for the batch), with the
//    linear 1x1 projection after them where one follows (MobileNetV2's blocks).
//  - a multiplication by a per-channel scale (squeeze-and-excitation) and the linear 1x1
//    convolution that is its only consumer, as that convolution with per-image weights in
//    inference (ConvDesc::scaled_input; apart where the op has no kernel for the batch).
//  - a convolution without an activation (its normalization folded or not), the two-input
//    addition that is its only consumer and the ReLU after that, as the convolution with the
//    addition's other input added in its op in inference (ConvDesc::inference_sum; a residual
//    connection), where that input is computed before the convolution runs.
// Adding a fusion: what the rule needs of a layer as FusionTraits data (an op descriptor, a
// fact), its decision in Fusion, a rule in fusion_plan.cpp that asks Backend::supports for the
// fused op's descriptor, and, for a step that runs two layers, a Kind, its run in
// fused_steps.cpp and its case in Network::forward / backward_node and in
// Network::inference_step_io (the outputs the step reads and writes). A backend that fuses the
// pattern accepts the descriptor in its kernel's `accepts` (op_registry.h).
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "layers/layer.h"

namespace dlt {

class FusionPlan {
 public:
  // What a node runs in one pass.
  enum class Kind {
    kLayer,          // its layer's own forward / backward
    kAbsorbed,       // nothing: a ReLU its producer's op (partner) applies
    kFoldedAway,     // inference: nothing, the convolution partner computes this batchNormalization
                     // (or the clippedRelu or swish after one, or a swish after it)
    kFoldedConv,     // inference: the convolution also computes batchNormalization partner (or
                     // swish partner, or the residual addition after it)
    kConvDepthwise,  // inference: the 1x1 convolution, folded as kFoldedConv or not, also computes
                     // the depthwise convolution partner (folded or not), and its projection
    kScaledConv,     // inference: the 1x1 convolution, folded as kFoldedConv or not, also computes
                     // the multiplication partner (its input)
    kInMaxPool,      // training: nothing, max pooling partner runs this batchNormalization
    kBnReluMaxPool,  // training: runs batchNormalization partner, its ReLU and this max pooling
  };
  struct Step {
    Kind kind = Kind::kLayer;
    int partner = -1;
  };

  FusionPlan() = default;
  // layers[i] reads the outputs of inputs[i] (topological order), run by `backend`, which the
  // plan asks for every fused op it plans. Sets every layer's Fusion.
  FusionPlan(const std::vector<Layer*>& layers, const std::vector<std::vector<int>>& inputs, const Backend& backend);

  // The producer that applies ReLU i, or -1.
  int absorbed_by(size_t i) const {
    return nodes_[i].inference.kind == Kind::kAbsorbed ? nodes_[i].inference.partner : -1;
  }
  // Node i's step in a pass of ctx (training or inference); folding: Network::set_inference_folding.
  // A step that is not possible now (data-parallel training, folding off) is kLayer.
  Step step(size_t i, const RunContext& ctx, bool folding) const;
  // The backward step (node index) that writes node i's input gradient: its own, or for a
  // batchNormalization run with its max pooling, the pooling's.
  int backward_step(int i) const {
    const Step& t = nodes_[static_cast<size_t>(i)].training;
    return t.kind == Kind::kInMaxPool ? t.partner : i;
  }
  // Whether convolution `conv` folds a normalization or swish in inference (also when it runs
  // in a kConvDepthwise step).
  bool folds(size_t conv) const { return nodes_[conv].folds; }
  bool runs_depthwise(size_t conv) const { return nodes_[conv].inference.kind == Kind::kConvDepthwise; }
  bool runs_scaled(size_t conv) const { return nodes_[conv].inference.kind == Kind::kScaledConv; }
  // kFoldedConv: the node whose output the folded convolution writes (its batchNormalization,
  // the clippedRelu or swish after that, or its swish); kConvDepthwise: the depthwise
  // convolution's, folded the same way (or the ReLU it absorbs), or its projection's.
  int folded_output(size_t conv) const { return nodes_[conv].output; }
  // kConvDepthwise: the node whose output the 1x1 convolution alone writes (the depthwise one's
  // input), and with a projection the depthwise convolution's (the projection's input); written
  // only where the convolutions run apart.
  int depthwise_input(size_t conv) const { return nodes_[conv].mid; }
  int projection_input(size_t conv) const { return nodes_[conv].pj_mid; }
  bool runs_in_max_pool(size_t bn) const { return nodes_[bn].training.kind == Kind::kInMaxPool; }
  // kScaledConv: which of the multiplication's two inputs is the per-channel scale.
  int scale_input(size_t conv) const { return nodes_[conv].scale_input; }
  // kFoldedConv with a residual sum: the node whose output the convolution adds (-1: none).
  int sum_input(size_t conv) const { return nodes_[conv].sum; }

  // ---- the fused inference steps (fused_steps.cpp) ----
  // Makes node i's fused op for batch size n (mixed: Precision mixed) where its inference step
  // needs one (a convolution that folds, or runs a depthwise or scaled step); else nothing.
  void setup(size_t i, int64_t n, Backend& be, bool mixed);
  // After setup: whether kConvDepthwise (kScaledConv) convolution i runs as one op at this
  // batch size; where not, the step runs the layers apart.
  bool depthwise_ready(size_t conv) const;
  bool scaled_ready(size_t conv) const;
  // kFoldedConv: convolution i computes its batchNormalization's (or swish's) output y from x,
  // or that plus residual (the output of sum_input, null without) and the ReLU after the sum.
  void forward_folded(size_t i, const Tensor& x, Tensor& y, const Tensor* residual = nullptr);
  // kConvDepthwise at 1x1 convolution i: y is folded_output's, mid depthwise_input's, pj_mid
  // projection_input's (null without a projection).
  void forward_depthwise(size_t i, const Tensor& x, Tensor& mid, Tensor* pj_mid, Tensor& y, const RunContext& ctx);
  // kScaledConv at 1x1 convolution i: xs the multiplication's inputs, mid its output (written
  // only where the two run apart), y is folded_output's.
  void forward_scaled(size_t i, const std::vector<const Tensor*>& xs, Tensor& mid, Tensor& y, const RunContext& ctx);

  // The fused convolution's descriptor for a convolution of geometry conv (FusionTraits::conv)
  // with the plan's decisions f (n and bf16 as conv's).
  static ConvDesc fused_conv(const ConvDesc& conv, const Fusion& f);

 private:
  struct Node {
    Step training, inference;
    Layer* conv = nullptr;    // a convolution with an inference step of its own (folded, depthwise, scaled)
    int output = -1;          // kFoldedConv, kConvDepthwise: folded_output
    Layer* affine = nullptr;  // the batchNormalization a convolution folds (none: a swish alone)
    bool folds = false;       // the convolution folds affine (or a swish alone) in inference
    // kConvDepthwise: the depthwise convolution's node and depthwise_input; the projection's
    // node (-1: none) and projection_input.
    int dw = -1, mid = -1;
    int pj = -1, pj_mid = -1;
    // kScaledConv: the multiplication and scale_input.
    Layer* mul = nullptr;
    int scale_input = -1;
    // kFoldedConv: sum_input.
    int sum = -1;
    // fused_steps.cpp: the convolution's inference op (setup), which is also the layer's own
    // (FusionTraits::op), and its folded weights and bias.
    std::shared_ptr<ConvOp> op;
    Tensor folded_w, folded_b;  // (K, kh, kw, C/G), (K)
  };
  void plan_depthwise(const std::vector<Layer*>& layers, const std::vector<std::vector<int>>& inputs,
                      const std::vector<std::vector<int>>& users, const Backend& backend);
  void plan_scaled(const std::vector<Layer*>& layers, const std::vector<std::vector<int>>& users,
                   const Backend& backend);
  void plan_sum(const std::vector<Layer*>& layers, const std::vector<std::vector<int>>& inputs,
                const std::vector<std::vector<int>>& users, const Backend& backend);
  // Node q's layer is a 1x1 convolution without activation (folded with its normalization or
  // not) that no other inference step has taken.
  bool linear_pointwise(const std::vector<Layer*>& layers, int q) const;
  // fused_steps.cpp: convolution i's weights and bias for inference, its affine folded in
  // where it folds one.
  struct Params {
    const Tensor* w;
    const Tensor* b;
  };
  Params inference_params(size_t i);
  // A folded convolution on x (kFoldedConv's computation), or, not folding, its layer's forward.
  void run_alone(size_t i, const Tensor& x, Tensor& y, const RunContext& ctx);

  std::vector<Node> nodes_;
  std::vector<Fusion> fusion_;        // the plan's decisions, as set on the layers
  std::vector<float> scale_, shift_;  // an affine's per-channel values (host)
};

}  // namespace dlt
