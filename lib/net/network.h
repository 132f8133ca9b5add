// Network: the layer DAG built from a NetworkSpec, run in list (topological) order.
// Builds layers, infers shapes (errors name the layer and the numbers), plans which
// neighbouring layers run as one op (net/fusion_plan.h) and fuses softmax into the loss, keeps all
// parameters and gradients as views of two flat buffers (one all-reduce for data-parallel
// training), and allocates every activation buffer once per batch capacity.
// Not thread-safe; one Network per device.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "layers/io_layers.h"
#include "layers/layer.h"
#include "layers/spec.h"
#include "net/fusion_plan.h"

namespace dlt {

struct ModelData;

// Whether inference passes share buffers by default (Network::set_inference_reuse):
// DLT_INFERENCE_BUFFERS `shared` or `own`, else shared on the CPU and own on a GPU, where it
// has not run yet.
bool shared_inference_buffers(Device device);

class Network {
 public:
  // The network's ops are made by `backend` (backend_for(device, the run's BackendOptions)) and
  // follow its options; a Device means that device's backend with the default options.
  Network(const NetworkSpec& spec, Backend& backend);
  Network(const NetworkSpec& spec, Device device);
  // A network from a model file: its spec, with every parameter and state shape checked against
  // the file's tensors before anything is allocated (a corrupt or hostile spec cannot make it
  // allocate more than the file holds), then its weights. Throws ModelError on a mismatch,
  // naming `file` when given.
  Network(const ModelData& model, Backend& backend, const std::string& file = "");
  Network(const ModelData& model, Device device, const std::string& file = "");
  ~Network();

  Device device() const { return device_; }
  Backend& backend() const { return *backend_; }
  const NetworkSpec& spec() const { return spec_; }
  size_t size() const { return nodes_.size(); }
  Layer& layer(size_t i) { return *nodes_[i].layer; }
  const Layer& layer(size_t i) const { return *nodes_[i].layer; }
  const Shape& output_shape(size_t i) const { return nodes_[i].shape; }  // per image (H, W, C)
  DataFormat output_format(size_t i) const { return nodes_[i].format; }  // SSCB, SCB or CB
  bool fused(size_t i) const { return nodes_[i].alias_of >= 0; }
  // Training: batchNormalization i runs with the max pooling after its ReLU as one op.
  bool fused_with_max_pool(size_t i) const { return plan_.runs_in_max_pool(i); }
  ImageInputLayer& input_layer() { return *input_; }
  const Shape& input_shape() const { return nodes_[0].shape; }
  int64_t num_classes() const { return nodes_.back().shape[2]; }
  std::vector<std::string>& classes() { return classes_; }
  const std::vector<std::string>& classes() const { return classes_; }
  // What it predicts, from its output layer's loss: "classification", "segmentation",
  // "regression" or "multilabel" (ModelData::task).
  std::string task() const;
  // Regression: the responses' names and, with response normalisation, the training mean and
  // standard deviation the targets were normalised with (ModelData::responses; empty: none).
  std::vector<std::string>& response_names() { return response_names_; }
  const std::vector<std::string>& response_names() const { return response_names_; }
  void set_response_statistics(std::vector<float> mean, std::vector<float> std) {
    response_mean_ = std::move(mean);
    response_std_ = std::move(std);
  }
  const std::vector<float>& response_mean() const { return response_mean_; }
  const std::vector<float>& response_std() const { return response_std_; }
  // Segmentation: each class's label-image values (ModelData::label_ids); empty otherwise.
  std::vector<std::vector<std::vector<int64_t>>>& label_ids() { return label_ids_; }
  const std::vector<std::vector<std::vector<int64_t>>>& label_ids() const { return label_ids_; }

  // Fills every parameter per its initializer from seed (same seed -> same weights).
  void init_params(uint64_t seed);
  // Creates the ops for batch size n; buffers only grow.
  void set_batch(int64_t n);
  // Gradient buffers of layer outputs share memory where their lifetimes in backward do not
  // overlap (on by default; off keeps one buffer per gradient, for tests). Call before set_batch.
  void set_gradient_reuse(bool on) { grad_reuse_ = on; }
  // Inference passes (forward with ctx.training false) write the layer outputs into the
  // training buffers shared by liveness (plan_inference_buffers): a pass touches a few of them,
  // which stay in cache. The default is shared_inference_buffers(device); off gives every
  // output its own buffer (tests).
  void set_inference_reuse(bool on) {
    inference_reuse_ = on;
    inference_planned_ = false;  // the next inference pass plans again
  }
  // Inference runs a convolution and the batchNormalization after it as one convolution
  // (FusionPlan, where the backend accepts it). On by default; off runs them apart (tests).
  void set_inference_folding(bool on) { inference_folding_ = on; }
  bool folds(size_t conv) const { return plan_.folds(conv); }
  // Whether 1x1 convolution `conv` runs the depthwise convolution after it in inference (FusionPlan).
  bool runs_depthwise(size_t conv) const { return plan_.runs_depthwise(conv); }
  // Whether 1x1 convolution `conv` computes the multiplication before it in inference (FusionPlan).
  bool runs_scaled(size_t conv) const { return plan_.runs_scaled(conv); }
  // The node whose step computes node i's output in an inference pass as forward runs it now
  // (inference folding on or off): i itself, or the convolution that folds it, or for a fused
  // ReLU (fused(i)) the node that computes its producer's.
  size_t inference_step_of(size_t i) const;
  // Whether convolution `conv` adds the residual addition after it in inference (FusionPlan).
  bool runs_sum(size_t conv) const { return plan_.sum_input(conv) >= 0; }
  // After set_batch: whether those steps run as one op at this batch size (else the layers
  // run apart: the backend's op has no kernel for the batch, or mixed precision).
  bool depthwise_ready(size_t conv) const { return plan_.depthwise_ready(conv); }
  bool scaled_ready(size_t conv) const { return plan_.scaled_ready(conv); }
  // Precision: mixed (docs/config.md): conv and fullyConnected multiply in bfloat16 with
  // float32 sums, outputs and master weights. The ops are made again at the next set_batch.
  void set_mixed_precision(bool on);
  bool mixed_precision() const { return mixed_; }
  // Bytes held for layer outputs and their gradients at the current batch size.
  int64_t activation_bytes() const;
  // Bytes of those the last inference pass wrote its layer outputs to (plan_inference_buffers;
  // 0 before the first at this batch size).
  int64_t inference_bytes() const { return inference_bytes_; }
  int64_t batch() const { return batch_; }

  // Per-pixel classification (pixelClassification output): labels are (N, H, W) with -1 for
  // undefined pixels, and the output is an (H, W, K) map of class probabilities.
  bool per_pixel() const { return loss_.per_pixel; }
  // The output layer's class weights (empty: all 1).
  const std::vector<float>& class_weights() const { return loss_.class_weights; }

  // x: (N, H, W, C) on the network's device with N == batch(). Returns the output layer's
  // input, valid until the next forward: the class probabilities (N, 1, 1, K), or (N, H, W, K)
  // per pixel; a regression network's responses (N, 1, 1, R); a multi-label network's sigmoid
  // probabilities (N, 1, 1, K).
  const Tensor& forward(const Tensor& x, const RunContext& ctx);
  // After forward: mean cross-entropy against labels (int32 (N), or (N, H, W) per pixel, on
  // the device; weighted by the class weights, undefined pixels left out: Backend::cross_entropy);
  // counts correct predictions when correct is not null, and the labels counted (pixels that
  // are not undefined) when counted is not null. With backward = true also fills every
  // parameter gradient (overwriting).
  double loss_and_backward(const Tensor& labels, const RunContext& ctx, bool backward, int64_t* correct,
                           int64_t* counted = nullptr);
  // The same in two halves: issue the loss (and backward) without waiting for the device,
  // then read the mean loss (waits). labels must stay unchanged until read_loss.
  void loss_and_backward_async(const Tensor& labels, const RunContext& ctx, bool backward);
  double read_loss(int64_t* correct, int64_t* counted = nullptr);
  // The last forward's output (what forward returned).
  const Tensor& output() const { return last_inference_ ? inference_out_[output_] : nodes_[output_].out; }
  // The last loss's totals (waits): the metrics' sums (LossTotals), loss_sum the mean loss.
  LossTotals read_loss_totals();
  // The loss the network ends in (its output layer's) and whether it compares float targets
  // (regression responses, multi-label 0/1) rather than int32 labels.
  LossKind loss_kind() const { return loss_.kind; }
  bool float_targets() const { return dlt::float_targets(loss_.kind); }
  // The values per image the network outputs (K classes, R responses).
  int64_t output_width() const { return nodes_.back().shape[2]; }
  // A replayed CUDA graph (lib/train/step_graph.h) ran the loss of its capture without this
  // host calling loss_and_backward_async: read_loss must count against the labels it captured.
  void set_loss_labels(const Tensor& labels) { loss_labels_ = labels; }

  // Data parallel (lib/dist/data_parallel.h, GradientBuckets): loss_and_backward calls the
  // hook whenever every gradient at flat offsets >= offset has become final (backward fills
  // the flat buffer from its end; offsets only decrease), last with 0. Empty: no hook.
  void set_grads_ready_hook(std::function<void(int64_t offset)> hook) { grads_ready_ = std::move(hook); }
  // A data-parallel rank whose share of the global mini-batch is empty: zeroes the gradients
  // and runs the layers that take part in collectives (synchronized batchNormalization) on
  // no images, forward then backward in the order a full pass calls them, calling the
  // grads-ready hook as loss_and_backward does. ctx.comm null or of size 1: only the zeroing.
  void run_empty_share(const RunContext& ctx);
  // BatchNormalizationStatistics population: whether some layer has such statistics; every
  // layer's start_population_statistics before a pass of forwards with
  // RunContext::population_statistics, and finish_population_statistics after it.
  bool has_population_statistics() const;
  void start_population_statistics();
  void finish_population_statistics();
  // An empty share's forward in such a pass: the synchronized batch norms' collectives only.
  void run_empty_share_forward(const RunContext& ctx);

  // Per-layer timing for `dltrain time`: when set, forward and backward add each layer's
  // seconds (synchronizing the device around it) into these vectors of size().
  void set_profile(std::vector<double>* forward_seconds, std::vector<double>* backward_seconds) {
    prof_fwd_ = forward_seconds;
    prof_bwd_ = backward_seconds;
  }

  std::vector<Param*> params();
  Tensor& flat_values() { return flat_values_; }
  Tensor& flat_grads() { return flat_grads_; }

  int64_t total_learnables() const;
  // Seed 001's getMemoryFootprint: 4 bytes per learnable plus the zerocenter mean image.
  int64_t memory_bytes() const;
  int64_t flops_per_image() const;

  // Model file conversion (host copies of parameters and states).
  ModelData to_model_data() const;
  void load_weights(const ModelData& m);  // throws ModelError on a name or shape mismatch

 private:
  struct Node {
    std::unique_ptr<Layer> layer;
    std::vector<int> inputs;
    Shape shape;
    DataFormat format = DataFormat::kSSCB;
    int alias_of = -1;           // fused ReLU / output layer: shares this node's tensors
    bool needs_grad = false;     // a gradient must flow into this node's output
    std::vector<int> consumers;  // non-alias nodes reading this node's storage
    Tensor out, grad;
    std::vector<Tensor> edge_grads;  // one per consumer when there are several
    int64_t param_offset = 0;        // flat offset of this layer's first parameter
  };
  void backward_node(int i, const RunContext& ctx);
  int root(int i) const { return nodes_[i].alias_of < 0 ? i : root(nodes_[i].alias_of); }
  // Where consumer writes the gradient of its mention-th input naming producer.
  Tensor* grad_target(int consumer, int producer, int mention = 0);
  void build();
  void plan_fusion();
  void allocate_params();
  void check_weights(const ModelData& m) const;
  void plan_gradients(int64_t n);
  // Inference buffers by liveness (network_inference_buffers.cpp): inference_out_.
  void plan_inference_buffers(int64_t n);
  // The node outputs (roots) node i's inference step reads and writes; false where node i
  // runs no step of its own in an inference pass (fused into another's, or an alias).
  bool inference_step_io(size_t i, std::vector<int>& reads, std::vector<int>& writes) const;
  // The tensor holding node p's output in a pass: inference_out_'s in an inference pass.
  Tensor& value(int p, bool inference) { return inference ? inference_out_[root(p)] : nodes_[root(p)].out; }
  // training.Loss (spec_.loss) on a network without an output layer: appends the matching
  // output layer to spec_; returns its index, or -1 when nothing was appended.
  int append_loss_layer();
  // training.Loss on a network with an output layer: it must name that layer's loss.
  void check_loss_matches(const Node& last) const;

  NetworkSpec spec_;
  Backend* backend_;
  Device device_;
  std::vector<Node> nodes_;
  FusionPlan plan_;  // which neighbouring layers run as one op
  ImageInputLayer* input_ = nullptr;
  int output_ = -1;         // the node feeding the output layer: the network's output
  int backward_from_ = -1;  // the first node backward runs (below the softmax / sigmoid the loss ends in)
  std::vector<std::string> classes_;
  std::vector<std::vector<std::vector<int64_t>>> label_ids_;
  std::vector<std::string> response_names_;
  std::vector<float> response_mean_, response_std_;
  Tensor flat_values_, flat_grads_;
  Layer::LossSpec loss_;              // the output layer's
  Tensor loss_weights_;               // its class weights on the device (undefined: none)
  Tensor loss_totals_, loss_labels_;  // the last loss_and_backward_async's result and labels
  bool grad_reuse_ = true;
  bool inference_folding_ = true;
  bool mixed_ = false;
  std::vector<Tensor> grad_slots_;  // storage shared by gradients (plan_gradients)
  // Per node: its output in an inference pass, a view of a training buffer or of
  // inference_extra_ (plan_inference_buffers; empty: reuse off, inference writes node.out).
  std::vector<Tensor> inference_out_;
  std::vector<Tensor> inference_extra_;  // buffers no training buffer could stand for
  bool inference_reuse_ = true;
  int64_t inference_bytes_ = 0;         // what inference_bytes() reports
  bool inference_planned_ = false;      // inference_out_ fits the ops of the current batch size
  bool inference_plan_folding_ = true;  // and the inference folding it was planned for
  bool last_inference_ = false;         // the last forward was an inference pass on inference_out_
  int64_t batch_ = 0;
  // Argument lists reused by forward/backward so an iteration allocates nothing.
  std::vector<const Tensor*> scratch_xs_, scratch_parts_;
  std::vector<const Tensor*> scratch_mul_xs_;  // a kScaledConv step's multiplication inputs
  std::vector<Tensor*> scratch_dxs_;
  std::vector<double>* prof_fwd_ = nullptr;
  std::vector<double>* prof_bwd_ = nullptr;
  std::function<void(int64_t)> grads_ready_;
};

}  // namespace dlt
