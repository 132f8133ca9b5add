// batchNormalization: MATLAB's batchNormalizationLayer. Scale and Offset (C) are learnable;
// TrainedMean and TrainedVariance (C) are moving averages updated in training as
//   trained = (1 - decay) * trained + decay * batch   (MeanDecay, VarianceDecay: 0.1)
// with the unbiased batch variance (or, with training's BatchNormalizationStatistics population,
// set once training ends from a pass over the training data). Inference uses the trained
// statistics. Runs a following
// ReLU in its op when the Network's fusion plan says so (Fusion::relu; the backend op then
// applies the relu backward itself). In data-parallel training (RunContext::comm of size > 1)
// it is synchronized: every rank normalizes with the global batch's statistics and backward
// adds the terms through them (docs/distributed.md).
// With Fusion::with_max_pool it runs its ReLU and the max pooling after it as one op in
// training (BnReluMaxPoolOp): the network then passes the pooling's output (and gradient) as
// its y (and dy). It publishes its op's shape and its inference affine (FusionTraits,
// inference_affine) for the network's fusion plan, which folds it into the convolution before
// it in inference.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "layers/layer.h"

namespace dlt {

class BatchNormLayer final : public Layer {
 public:
  explicit BatchNormLayer(const LayerSpec& spec);

  Shape infer(const std::vector<Shape>& inputs) override;
  void setup(int64_t n, Backend& be) override;
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override;
  void backward(const std::vector<const Tensor*>& x, const Tensor& y, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext& ctx) override;
  int64_t flops_per_image() const override { return 2 * shape_.numel(); }
  bool joins_collectives() const override { return true; }
  // BatchNormalizationStatistics population: TrainedMean and TrainedVariance become the mean
  // and the unbiased variance of the input over the pass's positions (every batch's statistics
  // merged exactly, in Chan's pairwise form).
  bool has_population_statistics() const override { return true; }
  void start_population_statistics() override;
  void finish_population_statistics() override;
  std::vector<std::string> learnable_options() const override { return {"Scale", "Offset"}; }
  OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const override;
  static void from_onnx(OnnxNodeReader& r);

  // Inference as x * scale + shift per channel (host values, C each):
  // Scale * (x - TrainedMean) / sqrt(TrainedVariance + Epsilon) + Offset, as oneDNN computes
  // it (float32). The ReLU (Fusion::relu) is not included.
  void inference_affine(std::vector<float>& scale, std::vector<float>& shift) const override;

 private:
  void update_trained(int64_t m);
  void accumulate_population(int64_t m);
  static bool synchronized(const RunContext& ctx);
  // This pass runs the fused op (Fusion::with_max_pool, training, not synchronized): y is the
  // max pooling's output.
  bool with_max_pool(const RunContext& ctx) const { return fused_op_ && ctx.training && !synchronized(ctx); }
  void forward_synchronized(const Tensor& x, Tensor& y, const RunContext& ctx);
  void backward_synchronized(const Tensor& x, Tensor& dy, Tensor* dx, const RunContext& ctx);
  BatchNormOp& global_op();

  double epsilon_, mean_decay_, var_decay_;
  Param scale_, offset_;
  Shape shape_;
  int64_t c_ = 0, n_ = 0;
  Tensor batch_mean_, batch_var_;  // (C) statistics of the last training forward (global when synchronized)
  Tensor scratch_dx_;
  Tensor pop_mean_, pop_m2_, pop_delta_, pop_square_;  // (C) the population pass's running sums
  double pop_count_ = 0;                               // positions merged so far
  Tensor sync_scratch_;                        // (C) for the synchronized moments on a device
  Tensor sum_shift_, sum_scale_;               // (C) D and S of synchronized backward
  std::unique_ptr<BatchNormOp> op_, sync_op_;  // sync_op_: global_stats, for data parallel
  std::unique_ptr<BnReluMaxPoolOp> fused_op_;  // Fusion::with_max_pool (the plan asked the backend)
  Backend* be_ = nullptr;
};

}  // namespace dlt
