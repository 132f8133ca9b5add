// What a layer tells the network's fusion plan (net/fusion_plan.h) about itself, and what the
// plan decided for it: plain data, no behaviour. A layer fills its FusionTraits in its
// constructor or infer() (with its ops' descriptors per image, from which the plan builds the
// fused ops it asks the backend for); the Network sets its Fusion before setup(). Which
// neighbouring layers run as one op is the plan's decision, never a layer's.
#pragma once
#include <limits>
#include <memory>

#include "backend/ops.h"

namespace dlt {

struct FusionTraits {
  // A plain ReLU (max(x, 0)), which a producer whose op can apply it absorbs.
  bool relu = false;
  // A clipped ReLU (min(max(x, 0), ceiling)), which a producer whose op can clip absorbs where
  // the backend's op takes the ceiling (clipped_relu_in_op): forward as the op's clip post-op,
  // backward as the clipped ReLU's own, from the output (the gradient passes where
  // 0 < y < ceiling, the same mask as 0 < x < ceiling).
  bool clipped_relu = false;
  float ceiling = 0.f;
  // A swish (x * sigmoid(x)) or a GELU (erf or tanh form): post_act_kind, which a convolution
  // before it applies as a post-op in inference where the backend has one (Fusion::folded_act);
  // training runs the two apart (their backward needs the input, which a fused op would not keep).
  bool post_act = false;
  ActKind post_act_kind{};
  // Its op can apply a following ReLU, forward and backward (convolutions, fullyConnected,
  // batchNormalization) ...
  bool relu_in_op = false;
  // Its op can apply a clipped ReLU the same way where the backend's kernel accepts the
  // ceiling (ConvDesc::relu_ceiling; convolutions).
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
  // it in its op (Fusion::with_max_pool).
  bool plain_max_pool = false;
  PoolDesc max_pool;
  // A multiplication of two inputs, a feature map and a 1x1xC input repeated over its height
  // and width (squeeze-and-excitation's per-channel weights): the index of the repeated input;
  // -1 for any other multiplication or layer.
  int channel_scale_input = -1;
  // Its op is a convolution of geometry conv per image (n = 1, no activation, float32): the
  // plan builds the fused convolutions it asks the backend for from it (the convolutions).
  // Its parameters are Weights (K, kh, kw, C/G) and Bias (K), in that order.
  bool conv_op = false;
  ConvDesc conv;
  // The layer's op (a convolution's), which the plan replaces by the fused op it makes for the
  // layer's inference steps: that op's descriptor extends the layer's own (the same geometry,
  // ReLU and precision, plus what inference fuses), so one op serves the layer's passes and the
  // fused steps, as one op's primitives and buffers. Null for other layers.
  std::shared_ptr<ConvOp>* op = nullptr;
  // Its op is a batch normalization of shape batch_norm per image (n = 1): the plan builds a
  // BnReluMaxPoolDesc from it (batchNormalization). Its parameters are Scale and Offset.
  bool batch_norm_op = false;
  BatchNormDesc batch_norm;
  // In inference it computes x * scale + shift per channel (Layer::inference_affine), which a
  // convolution before it can fold into its weights and bias (batchNormalization, and a
  // channel-wise 1x1 groupedConvolution2d: an imported LayerScale).
  bool affine_in_inference = false;
  // An addition of two inputs of one size (a residual connection): a convolution computing one
  // of them can add the other in its op in inference (Fusion::summed).
  bool residual_sum = false;
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
  // A convolution that in inference also computes the batchNormalization after it, with the
  // normalization folded into its weights and bias (the plan's folded step, net/fused_steps.cpp),
  // and that normalization's ReLU, or the clippedRelu after it (relu_ceiling), as a post-op
  // when folded_relu. The plan runs these inference steps with ops of its own; the layer's
  // own op ignores the fields below down to scaled_input.
  bool folds_affine = false;
  bool folded_relu = false;
  // A convolution that in inference applies the swish, GELU or hard swish after it (folded_kind; or after
  // the batchNormalization it folds) as its post-op, writing that activation's output.
  bool folded_act = false;
  ActKind folded_kind{};
  // A 1x1 convolution that in inference also computes the depthwise convolution reading its
  // output (or its folded normalization's or activation's), with that convolution's folding
  // and activation, as its op's depthwise post-op (ConvOp::forward_depthwise), and with
  // project_k the linear 1x1 convolution reading that one's output (folded or not). kernel 0:
  // none.
  DepthwisePostOp depthwise;
  // A 1x1 convolution without activation that in inference also computes the multiplication
  // before it (FusionTraits::channel_scale_input): its input times a per-image, per-channel
  // scale, as its weights times that scale (ConvOp::forward_scaled).
  bool scaled_input = false;
  // A convolution without an activation of its own that in inference also computes the
  // addition reading its output (or its folded normalization's), adding the addition's other
  // input in its op (ConvOp::forward_sum), and the ReLU after that addition when sum_relu.
  bool summed = false;
  bool sum_relu = false;
  // A batchNormalization that in training runs its ReLU and the max pooling of geometry
  // max_pool (per image) after it as one op (BnReluMaxPoolOp): in a training pass that is not
  // data-parallel (RunContext::comm of size 1 or none), the network calls its forward with
  // the pooling's output as y and its backward with the pooling's output and gradient as y
  // and dy.
  bool with_max_pool = false;
  PoolDesc max_pool;
};

}  // namespace dlt
