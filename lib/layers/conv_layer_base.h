// What convolution2d and groupedConvolution2d share: the options both read (FilterSize, Stride,
// DilationFactor, Padding, the initializers and the Weight / Bias factors), shape inference,
// the backend ConvOp (ConvDesc::groups), the fused ReLU (plain or clipped), and the ONNX Conv
// node both ways. The two types differ only in how they name their filters: NumFilters, or
// NumFiltersPerGroup and NumGroups. Its geometry is published as FusionTraits::conv; the fused
// inference steps (folding, depthwise, scaled input) are the network's (net/fused_steps.cpp).
// Weights (K, kh, kw, C/G), Bias (K); output channel k belongs to group k / (K/G).
#pragma once
#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "layers/layer.h"

namespace dlt {

class ConvLayerBase : public Layer {
 public:
  // An image layer: not on token sequences (groupedConvolution2d's per-channel scale aside).
  bool takes(DataFormat f) const override { return f != DataFormat::kSCB; }
  void setup(int64_t n, Backend& be) override;
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override;
  void backward(const std::vector<const Tensor*>& x, const Tensor& y, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext& ctx) override;
  int64_t flops_per_image() const override;
  std::vector<std::string> learnable_options() const override { return {"Weight", "Bias"}; }
  // A channel-wise 1x1 convolution (FusionTraits::affine_in_inference): Weights and Bias.
  void inference_affine(std::vector<float>& scale, std::vector<float>& shift) const override;
  // A Conv node with the group attribute.
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override;

 protected:
  // Reads the shared options (Padding is read in infer_conv: 'same' depends on the input).
  explicit ConvLayerBase(const LayerSpec& spec);
  // The output shape (H, W, C) of k filters in `groups` groups on input (h, w, c); the caller
  // has checked that groups divides c and k. Reads Padding and declares Weights (k, kh, kw,
  // c / groups) and Bias (k), with fans kh * kw * c / groups and kh * kw * k / groups.
  Shape infer_conv(const Shape& in, int64_t k, int64_t groups);
  ConvDesc desc(int64_t n) const;

  int64_t kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, dh_ = 1, dw_ = 1;
  int64_t pt_ = 0, pb_ = 0, pl_ = 0, pr_ = 0;
  int64_t h_ = 0, w_ = 0, c_ = 0;  // input (H, W, C)
  int64_t k_ = 1, groups_ = 1;     // filters in all; groups (set by infer_conv)

 private:
  Init weight_init_ = Init::kGlorot, bias_init_ = Init::kZeros;
  Param weight_param_, bias_param_;  // factors read from the spec; shapes set in infer_conv()
  std::shared_ptr<ConvOp> op_;       // the plan may replace it by the fused op (FusionTraits::op)
  std::unique_ptr<ActOp> relu_;      // relu backward when fused
};

// A Conv node as read from ONNX: its input, K filters in `group` groups of kh x kw x cg
// (cg = C / group), strides, dilations, padding [t b l r] (a pending zero Pad absorbed), the
// output size, and the weights (K, kh, kw, cg) and bias (K) in dltrain's layout. Fails with one
// line when group does not divide the input's channels and K, or the weights do not fit.
struct OnnxConv {
  OnnxValue in;
  int64_t k = 1, cg = 1, kh = 1, kw = 1, group = 1, oh = 1, ow = 1;
  std::vector<int64_t> strides, dilations;
  std::array<int64_t, 4> pad{};  // top, bottom, left, right
  std::vector<float> weights, bias;
};
OnnxConv read_onnx_conv(OnnxNodeReader& r);
// Adds the layer of type `type` for c with the shared options (FilterSize, Stride,
// DilationFactor, Padding), the type's own scalar `options`, its Weights and Bias, and sets
// the node's output.
void add_onnx_conv(OnnxNodeReader& r, const std::string& type, const OnnxConv& c,
                   const std::vector<std::pair<std::string, std::string>>& options);
// groupedConvolution2d's reader (grouped_conv_layer.cpp): convolution2d's hands it every
// Conv node whose group is not 1.
void grouped_convolution2d_from_onnx(OnnxNodeReader& r);

}  // namespace dlt
