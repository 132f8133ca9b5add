// Layer: the contract every layer type implements (CAFFE's, with FL's backend split).
// Life cycle:  construct(spec) -> infer(input shapes) -> [params() allocated and bound by the
// Network] -> init_params(rng) -> setup(batch, backend) -> forward / backward ...
// A layer is written once and calls the Backend; it never includes oneDNN or CUDA.
// Per-image shapes are (H, W, C); tensors are (N, H, W, C).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "layers/data_format.h"
#include "layers/fusion.h"
#include "layers/onnx_graph.h"
#include "layers/spec.h"
#include "tensor/tensor.h"
#include "util/check.h"
#include "util/rng.h"

namespace dlt {

enum class Init { kZeros, kOnes, kGlorot, kHe, kNarrowNormal, kIdentity };  // kIdentity: square (fan_in = fan_out)

// A learnable parameter. value and grad are views into the network's flat buffers.
struct Param {
  std::string name;  // MATLAB's property name: Weights, Bias, Scale, Offset
  Shape shape;
  Init init = Init::kZeros;
  int64_t fan_in = 1, fan_out = 1;  // for glorot / he
  float learn_rate_factor = 1.f;    // 0 freezes the parameter
  float l2_factor = 1.f;
  Tensor value;
  Tensor grad;
  bool frozen() const { return learn_rate_factor == 0.f; }
};

// Non-learnable state saved in the model: batch-norm running statistics, input normalization.
struct State {
  std::string name;  // TrainedMean, TrainedVariance, Mean, StandardDeviation
  Shape shape;
  float init_value = 0.f;
  Tensor value;  // owned by the layer, on the network's device
};

class Communicator;

struct RunContext {
  bool training = false;
  uint64_t seed = 0;       // for dropout: masks derive from (seed, iteration, layer)
  uint64_t iteration = 0;  // global iteration number
  // Data-parallel training (docs/distributed.md): the world, this rank's share w = n / N of
  // the global mini-batch and N. Batch norm then trains with the statistics of the global
  // batch (synchronized). comm null or of size 1: one process, no collectives.
  Communicator* comm = nullptr;
  double weight = 1;
  int64_t global_images = 0;
  // A pass of training forwards that finalizes batch norm's statistics (BatchNormalizationStatistics
  // population): such a layer accumulates its input's statistics instead of updating its moving
  // averages (Layer::start_population_statistics).
  bool population_statistics = false;
};

class Layer {
 public:
  explicit Layer(const LayerSpec& spec) : spec_(spec) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return spec_.name; }
  const std::string& type() const { return spec_.type; }
  const LayerSpec& spec() const { return spec_; }

  // Per-image output shape from per-image input shapes; declares params_ and states_.
  // Throws ShapeError naming the layer and the numbers.
  virtual Shape infer(const std::vector<Shape>& inputs) = 0;
  // Number of inputs this layer takes (-1: any number >= 2, e.g. addition).
  virtual int num_inputs() const { return 1; }
  // Data formats (layers/data_format.h): the network hands a layer its inputs' formats before
  // infer() and refuses an input whose format takes() declines (naming both layers);
  // output_format() (asked after infer()) is what it gives, by default its first input's.
  void set_input_formats(std::vector<DataFormat> formats) { in_formats_ = std::move(formats); }
  virtual bool takes(DataFormat f) const {
    (void)f;
    return true;
  }
  virtual DataFormat output_format() const { return input_format(0); }

  std::vector<Param>& params() { return params_; }
  std::vector<State>& states() { return states_; }
  // Fills params per their Init (and states to init_value). Overridable for special inits.
  virtual void init_params(Rng& rng);

  // Creates the ops for batch size n on backend be. Called again when n changes.
  virtual void setup(int64_t n, Backend& be) = 0;
  virtual void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) = 0;
  // dy may be overwritten (e.g. relu backward in place). dx[i] is null when input i needs no
  // gradient. Parameter gradients are overwritten (not accumulated); frozen ones are skipped.
  virtual void backward(const std::vector<const Tensor*>& x, const Tensor& y, Tensor& dy,
                        const std::vector<Tensor*>& dx, const RunContext& ctx) = 0;

  // Forward multiply-adds x 2 per image (0 for layers without arithmetic worth counting).
  virtual int64_t flops_per_image() const { return 0; }

  // Fusion (net/fusion_plan.h): what this layer allows (filled by its constructor or
  // infer()) and what the network's plan decided for it (set before setup()). The plan
  // decides; the layer obeys what set_fusion says.
  const FusionTraits& fusion_traits() const { return traits_; }
  void set_fusion(const Fusion& f) { fusion_ = f; }
  const Fusion& fusion() const { return fusion_; }
  // With FusionTraits::affine_in_inference: its inference output as x * scale + shift per
  // channel (host values, C each), which the plan folds into the convolution before it.
  virtual void inference_affine(std::vector<float>& scale, std::vector<float>& shift) const {
    (void)scale;
    (void)shift;
    DLT_CHECK(false, "layer '" << name() << "' (" << type() << ") computes no affine in inference");
  }
  // Precision: mixed. Layers with heavy multiplies (conv, fullyConnected) then ask the backend
  // for bfloat16 ops (ConvDesc::bf16); the others ignore it. Takes effect at the next setup().
  void set_mixed_precision(bool on) { mixed_ = on; }

  // ---- What the rest of the program asks of a layer, instead of comparing type names ----
  // Where the layer may stand: the network starts with its one input layer and ends with an
  // output layer (the loss).
  enum class Role { kHidden, kInput, kOutput };
  virtual Role role() const { return Role::kHidden; }
  // An output layer's loss: its class weights (empty: all 1) and whether it classifies each
  // pixel of an (H, W, K) score map (pixelClassification: labels (N, H, W), -1 = an undefined
  // pixel that counts in no loss or metric) rather than each image (labels (N)).
  // median_frequency: the weights are still to be computed from the training labels
  // (ClassWeights: median-frequency; `dltrain train` writes the numbers into the spec).
  // kind: the loss (backend/loss.h) with its parameters; follows: the activation whose input
  // the loss's gradient is taken with respect to (softmax, sigmoid), or none (regression: the
  // gradient of the output itself).
  enum class Follows { kSoftmax, kSigmoid, kNone };
  struct LossSpec {
    std::vector<float> class_weights;
    bool per_pixel = false;
    bool median_frequency = false;
    LossKind kind = LossKind::kCrossEntropy;
    Follows follows = Follows::kSoftmax;
    float huber_delta = 1.f, focal_gamma = 2.f, focal_alpha = 0.25f, tversky_alpha = 0.3f, tversky_beta = 0.7f;
  };
  virtual LossSpec loss_spec() const { return {}; }
  // Called by the Network just before infer(), with a lookup of the layers built before this
  // one by name (null for any other name): a layer that uses another layer's state (the
  // maxUnpooling2d of a maxPooling2d) finds it here and throws ConfigError when it cannot.
  virtual void link(const std::function<Layer*(const std::string&)>& find_earlier) { (void)find_earlier; }
  // Checks the layers that feed this one (classification must follow softmax); throws
  // ConfigError naming the layers. Called once the network is built.
  virtual void check_producers(const std::vector<const Layer*>& producers) const { (void)producers; }
  // Its training forward changes from step to step (dropout's mask), so a captured CUDA graph
  // cannot replay it.
  virtual bool stochastic() const { return false; }
  // BatchNormalizationStatistics population: a layer with such statistics (batch norm) says so;
  // the network calls start_population_statistics() on it before a pass of training forwards
  // with RunContext::population_statistics and finish_population_statistics() after it, which
  // makes what the layer accumulated its statistics.
  virtual bool has_population_statistics() const { return false; }
  virtual void start_population_statistics() {}
  virtual void finish_population_statistics() {}
  // It runs collectives when training data-parallel (synchronized batch norm): a rank whose
  // share of the batch is empty still calls its forward and backward, and its states() are
  // a (TrainedMean, TrainedVariance) pair the ranks combine after training.
  virtual bool joins_collectives() const { return false; }
  // The option prefixes of its learnables (Weight, Bias, Scale, Offset): freezing a layer sets
  // <prefix>LearnRateFactor to 0 in its spec (freeze_layer in layers/registry.cpp).
  virtual std::vector<std::string> learnable_options() const { return {}; }
  // Its ONNX form (layers/onnx_graph.h): adds nodes for this layer to g, given its inputs'
  // ONNX values, and returns its output's value. Throws ModelError when it has none.
  virtual OnnxValue to_onnx(OnnxGraph& g, const std::vector<OnnxValue>& inputs, const Shape& out) const;

 protected:
  // Input i's format (SSCB when the network has not set it: a layer built alone, as tests do).
  DataFormat input_format(size_t i) const { return i < in_formats_.size() ? in_formats_[i] : DataFormat::kSSCB; }

  LayerSpec spec_;
  std::vector<Param> params_;
  std::vector<State> states_;
  FusionTraits traits_;
  Fusion fusion_;
  bool mixed_ = false;
  std::vector<DataFormat> in_formats_;
};

// A layer type: its MATLAB name (without "Layer"), its factory, and the ONNX operators it
// reads itself from (import; export is Layer::to_onnx). Each layer file defines one (a
// function returning a static LayerType) and registry.cpp lists them.
struct LayerType {
  std::string name;
  std::unique_ptr<Layer> (*make)(const LayerSpec&) = nullptr;
  std::vector<std::string> onnx_ops;
  OnnxImportFn from_onnx = nullptr;
};

// The one list of layer types (layers/registry.cpp).
const std::vector<const LayerType*>& layer_registry();
// The type that imports ONNX operator op, or null.
const LayerType* layer_type_for_onnx(const std::string& op);
std::unique_ptr<Layer> make_layer(const LayerSpec& spec);
std::vector<std::string> layer_types();
// Sets the spec's learn-rate factors to 0 (base: FreezeUntil), as the layer type names them.
void freeze_layer(LayerSpec& spec);

}  // namespace dlt
