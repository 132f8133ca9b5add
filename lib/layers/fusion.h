// What a layer tells the network's fusion plan (net/fusion_plan.h) about itself, and what the
// plan decided for it: plain data, no behaviour. A layer fills its FusionTraits in its
// constructor or infer(); the Network sets its Fusion before setup(). Which neighbouring
// layers run as one op is the plan's decision, never a layer's.
#pragma once
#include <limits>

#include "backend/ops.h"

namespace dlt {

struct FusionTraits {
  // A plain ReLU (max(x, 0)), which a producer whose op can apply it absorbs.
  bool relu = false;
  // A clipped ReLU (min(max(x, 0), ceiling)), which a producer whose op can clip absorbs on
  // the CPU (clipped_relu_in_op): forward as the op's clip post-op, backward as the clipped
  // ReLU's own, from the output (the gradient passes where 0 < y < ceiling, the same mask as
  // 0 < x < ceiling).
  bool clipped_relu = false;
  float ceiling = 0.f;
  // A swish (x * sigmoid(x)), which a convolution before it applies as a post-op in CPU
  // inference (Fusion::folded_swish); training runs the two apart (swish's backward needs its
  // input, which a fused op would not keep).
  bool swish = false;
  // Its op can apply a following ReLU, forward and backward (convolutions, fullyConnected,
  // batchNormalization) ...
  bool relu_in_op = false;
  // Its CPU op can apply a clipped ReLU the same way (convolutions).
  bool clipped_relu_in_op = false;
  // ... as a backward pass of its own (convolutions, fullyConnected), which a max pooling
  // after the ReLU may apply instead (takes_relu_backward).
  bool separate_relu_backward = false;
  // A max pooling: max(relu(x)) = relu(max(x)), and pooling's gradient reaches only each
  // window's maximum, so it can apply its producer's ReLU backward to its own, smaller, dy
  // (its output as the mask: the maximum is > 0 exactly where relu'(x) is 1). The gradient
  // is unchanged, bit for bit.
  bool takes_relu_backward = false;
  // A max pooling without padding whose indices no unpooling layer reads, windows of at most
  // 256 values (as the separate path's u8 window positions in oneDNN's workspace): its
  // geometry per image (n = 1) is max_pool. A batchNormalization with a fused ReLU can run
  // it in its op (BatchNormLayer).
  bool plain_max_pool = false;
  PoolDesc max_pool;
  // A multiplication of two inputs, a feature map and a 1x1xC input repeated over its height
  // and width (squeeze-and-excitation's per-channel weights): the index of the repeated input;
  // -1 for any other multiplication or layer.
  int channel_scale_input = -1;
};

// The plan's decisions for one layer; all false: the layer runs alone.
struct Fusion {
  // Its op applies the following ReLU (which then runs nothing and shares its tensors) ...
  bool relu = false;
  // ... or, folding, folded_relu below: that ReLU clipped at relu_ceiling when finite (a
  // clippedRelu).
  float relu_ceiling = std::numeric_limits<float>::infinity();
  // ... whose backward the max pooling after that ReLU applies (the layer skips it).
  bool relu_backward_handed_over = false;
  // A max pooling that applies its producer's ReLU backward to its own dy first.
  bool takes_relu_backward = false;
  // A convolution that in (CPU) inference also computes the batchNormalization after it, with
  // the normalization folded into its weights and bias (ConvLayerBase::forward_folded), and
  // that normalization's ReLU, or the clippedRelu after it (relu_ceiling), as a post-op when
  // folded_relu.
  bool folds_affine = false;
  bool folded_relu = false;
  // A convolution that in CPU inference applies the swish after it (or after the
  // batchNormalization it folds) as its post-op, writing the swish's output.
  bool folded_swish = false;
  // A 1x1 convolution that in CPU inference also computes the depthwise convolution reading its
  // output (or its folded normalization's or activation's), with that convolution's folding
  // and activation, as its op's depthwise post-op (ConvLayerBase::forward_depthwise), and with
  // project_k the linear 1x1 convolution reading that one's output (folded or not). kernel 0:
  // none.
  DepthwisePostOp depthwise;
  // A 1x1 convolution without activation that in CPU inference also computes the
  // multiplication before it (FusionTraits::channel_scale_input): its input times a per-image,
  // per-channel scale, as its weights times that scale (ConvLayerBase::forward_scaled).
  bool scaled_input = false;
  // A batchNormalization that in CPU training runs its ReLU and the max pooling of geometry
  // max_pool (per image) after it as one op (BatchNormLayer::forward_fused_max_pool).
  bool with_max_pool = false;
  PoolDesc max_pool;
};

}  // namespace dlt
