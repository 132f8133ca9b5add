// FusionPlan: which neighbouring layers of a Network run as one op, decided once when the
// network is built, from the layers' FusionTraits (layers/fusion.h) and, for the two fusions
// that reach into both layers, their concrete types (ConvLayerBase, BatchNormLayer). The
// layers only declare what they allow and obey the Fusion the plan sets. The fusions, each
// between a layer and its only consumer:
//  - ReLU: a producer whose op can apply a ReLU (FusionTraits::relu_in_op) absorbs it; the
//    ReLU's node runs nothing and shares the producer's tensors (every device).
//  - clipped ReLU: on the CPU, a convolution (FusionTraits::clipped_relu_in_op) absorbs a
//    clippedRelu the same way, as a clip post-op; on the GPU under CudaFusedClippedRelu, in its
//    bias epilogue.
//  - ReLU backward hand-over: a producer whose ReLU backward is a pass of its own hands it to
//    the max pooling after the ReLU, which applies it to its smaller gradient (every device).
//  - batchNormalization + ReLU + max pooling as one op (BnReluMaxPoolOp) in CPU training; the
//    layers run one by one where the backend has no op, in synchronized batch norm, and in
//    inference.
//  - convolution + batchNormalization (+ a clippedRelu or swish after it) folded into one
//    convolution in CPU inference; a convolution + swish the same way without a normalization.
//  - a 1x1 convolution and the depthwise convolution after it, each as folded, as one op in CPU
//    inference (the 1x1 op's depthwise post-op; apart where the backend has no kernel for it),
//    with the linear 1x1 projection after them where one follows (MobileNetV2's blocks).
//  - a multiplication by a per-channel scale (squeeze-and-excitation) and the linear 1x1
//    convolution that is its only consumer, as that convolution with per-image weights in CPU
//    inference (apart where the backend has no kernel for it).
// Adding a fusion: a trait in FusionTraits (or a concrete type), its decision in Fusion, a
// rule in fusion_plan.cpp, and, for a step that runs two layers, a Step kind and its case in
// Network::forward / backward_node.
#pragma once
#include <cstddef>
#include <vector>

#include "layers/layer.h"

namespace dlt {

class BatchNormLayer;
class ConvLayerBase;

class FusionPlan {
 public:
  // What a node runs in one pass.
  enum class Kind {
    kLayer,          // its layer's own forward / backward
    kAbsorbed,       // nothing: a ReLU its producer's op (partner) applies
    kFoldedAway,     // inference: nothing, the convolution partner computes this batchNormalization
                     // (or the clippedRelu or swish after one, or a swish after it)
    kFoldedConv,     // inference: the convolution also computes batchNormalization partner (or
                     // swish partner)
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
  // layers[i] reads the outputs of inputs[i] (topological order); cpu: the network runs on the
  // CPU (the folding and bn + relu + max pooling ops exist there). Sets every layer's Fusion.
  // gpu_clipped_relu: a GPU network fuses clipped ReLUs into convolutions too (CudaFusedClippedRelu).
  FusionPlan(const std::vector<Layer*>& layers, const std::vector<std::vector<int>>& inputs, bool cpu,
             bool gpu_clipped_relu = false);

  // The producer that applies ReLU i, or -1.
  int absorbed_by(size_t i) const { return nodes_[i].inference.kind == Kind::kAbsorbed ? nodes_[i].inference.partner : -1; }
  // Node i's step in a pass of ctx (training or inference); folding: Network::set_inference_folding.
  // A step that is not possible now (no fused op on this backend, synchronized batch norm,
  // folding off) is kLayer.
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

  // kFoldedConv: convolution i computes its batchNormalization's (or swish's) output y from x.
  void forward_folded(size_t i, const Tensor& x, Tensor& y);
  // kConvDepthwise at 1x1 convolution i: y is folded_output's, mid depthwise_input's, pj_mid
  // projection_input's (null without a projection).
  void forward_depthwise(size_t i, const Tensor& x, Tensor& mid, Tensor* pj_mid, Tensor& y, const RunContext& ctx);
  // kScaledConv at 1x1 convolution i: xs the multiplication's inputs, mid its output (written
  // only where the two run apart), y is folded_output's.
  void forward_scaled(size_t i, const std::vector<const Tensor*>& xs, Tensor& mid, Tensor& y, const RunContext& ctx);
  // kBnReluMaxPool at max pooling i: x is the batchNormalization's input, pooled the
  // pooling's output, dpooled its gradient, dx the gradient of x (null: none needed).
  void forward_bn_relu_max_pool(size_t i, const Tensor& x, Tensor& pooled, const RunContext& ctx);
  void backward_bn_relu_max_pool(size_t i, const Tensor& x, const Tensor& pooled, const Tensor& dpooled, Tensor* dx,
                                 const RunContext& ctx);

 private:
  struct Node {
    Step training, inference;
    ConvLayerBase* conv = nullptr;  // kFoldedConv's or kConvDepthwise's layer
    int output = -1;                // kFoldedConv, kConvDepthwise: folded_output
    BatchNormLayer* bn = nullptr;   // the batchNormalization of a kFoldedConv (none: a swish alone),
                                    // kInMaxPool or kBnReluMaxPool
    bool folds = false;             // the convolution folds bn (or a swish alone) in inference
    // kConvDepthwise: the depthwise layer, its normalization and folds, and depthwise_input;
    // the projection's (none: pj_conv null) and projection_input.
    ConvLayerBase* dw_conv = nullptr;
    BatchNormLayer* dw_bn = nullptr;
    bool dw_folds = false;
    int mid = -1;
    ConvLayerBase* pj_conv = nullptr;
    BatchNormLayer* pj_bn = nullptr;
    bool pj_folds = false;
    int pj_mid = -1;
    // kScaledConv: the multiplication and scale_input.
    Layer* mul = nullptr;
    int scale_input = -1;
  };
  void plan_depthwise(const std::vector<Layer*>& layers, const std::vector<std::vector<int>>& inputs,
                      const std::vector<std::vector<int>>& users, std::vector<Fusion>& fusion);
  void plan_scaled(const std::vector<Layer*>& layers, const std::vector<std::vector<int>>& users,
                   std::vector<Fusion>& fusion);
  ConvLayerBase* linear_pointwise(const std::vector<Layer*>& layers, const std::vector<Fusion>& fusion, int q) const;
  // A kFoldedConv's convolution (with normalization bn, or none: its swish alone) on x.
  void run_folded(ConvLayerBase& conv, BatchNormLayer* bn, const Tensor& x, Tensor& y);
  // A convolution of a fused step run as its own step would: folded (run_folded) or alone.
  void run_alone(ConvLayerBase& conv, BatchNormLayer* bn, bool folds, const Tensor& x, Tensor& y,
                 const RunContext& ctx);
  std::vector<Node> nodes_;
  std::vector<float> scale_, shift_;  // forward_folded's per-channel affine (host)
};

}  // namespace dlt
