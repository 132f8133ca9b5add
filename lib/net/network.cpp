// Network: the DAG from the spec (build), the fusion plan and softmax fusion (plan_fusion), the
// parameter buffers, batch set-up, forward, loss and backward. Gradient buffers are planned in
// network_gradients.cpp, model data in network_model_data.cpp, an empty data-parallel share
// in network_empty_share.cpp.
#include "net/network.h"

#include <algorithm>
#include <map>

#include "net/network_internal.h"
#include "util/error.h"
#include "util/strings.h"
#include "util/timer.h"

namespace dlt {

using net_internal::for_layer;

namespace {
constexpr int64_t kMaxImageValues = int64_t{1} << 31;  // per image, per layer output
}  // namespace

Network::Network(const NetworkSpec& spec, Backend& backend)
    : spec_(spec), backend_(&backend), device_(backend.device()) {
  build();
  plan_fusion();
  allocate_params();
}

Network::Network(const NetworkSpec& spec, Device device) : Network(spec, backend_for(device)) {}

Network::~Network() = default;

void Network::build() {
  if (spec_.layers.empty()) throw ConfigError("the network has no layers (add a layers: list)");
  inference_reuse_ = shared_inference_buffers(device_);
  const int appended = append_loss_layer();
  std::map<std::string, int> index;
  for (size_t i = 0; i < spec_.layers.size(); ++i) {
    // training.Loss crossentropy after a per-pixel softmax: the pixelClassification layer.
    if (static_cast<int>(i) == appended && spec_.layers[i].type == "classification" && !nodes_.empty() &&
        nodes_.back().shape[0] * nodes_.back().shape[1] > 1)
      spec_.layers[i].type = "pixelClassification";
    const LayerSpec& ls = spec_.layers[i];
    if (index.count(ls.name))
      throw ConfigError(ls.loc.prefix() + "layer name '" + ls.name + "' is used twice (names must be unique)");
    Node node;
    node.layer = make_layer(ls);
    const Layer::Role role = node.layer->role();
    if (i == 0 && role != Layer::Role::kInput)
      throw ConfigError(ls.loc.prefix() + "layer '" + ls.name + "': the first layer must be imageInput, not " +
                        node.layer->type());
    if (i > 0 && role == Layer::Role::kInput)
      throw ConfigError(ls.loc.prefix() + "layer '" + ls.name + "': " + node.layer->type() +
                        " can only be the first layer");
    if (i > 0) {
      if (ls.inputs.empty()) node.inputs.push_back(static_cast<int>(i) - 1);
      for (const auto& in : ls.inputs) {
        auto it = index.find(in);
        if (it == index.end()) {
          std::vector<std::string> names;
          for (const auto& [n, _] : index) names.push_back(n);
          throw ConfigError(ls.loc.prefix() + "layer '" + ls.name + "': Inputs names '" + in +
                            "', which is not an earlier layer" + did_you_mean(in, names));
        }
        node.inputs.push_back(it->second);
      }
    }
    int want = node.layer->num_inputs();
    int have = static_cast<int>(node.inputs.size());
    if ((want >= 0 && have != want) || (want < 0 && have < 2))
      throw ConfigError(ls.loc.prefix() + "layer '" + ls.name + "' (" + node.layer->type() + ") takes " +
                        (want < 0 ? std::string("2 or more") : std::to_string(want)) + " input(s) but has " +
                        std::to_string(have) + (want != 1 ? " (list them with Inputs: [a, b])" : ""));
    node.layer->link([&](const std::string& name) -> Layer* {
      auto it = index.find(name);
      return it == index.end() ? nullptr : nodes_[it->second].layer.get();
    });
    std::vector<Shape> in_shapes;
    std::vector<DataFormat> in_formats;
    for (int p : node.inputs) {
      in_shapes.push_back(nodes_[p].shape);
      in_formats.push_back(nodes_[p].format);
      if (!node.layer->takes(nodes_[p].format))
        throw ConfigError(ls.loc.prefix() + "layer '" + ls.name + "' (" + node.layer->type() + ") does not take " +
                          format_name(nodes_[p].format) + " data, which '" + nodes_[p].layer->name() + "' (" +
                          nodes_[p].layer->type() + ") gives (" + format_dims(nodes_[p].format, nodes_[p].shape) + ")");
    }
    node.layer->set_input_formats(in_formats);
    node.shape = node.layer->infer(in_shapes);
    node.format = node.layer->output_format();
    // Overflow-safe: per-image activations beyond 2^31 values (8 GiB) are a corrupt spec.
    int64_t values = 1;
    for (int d = 0; d < node.shape.rank(); ++d) {
      const int64_t n = node.shape[d];
      if (n < 0 || (n > 0 && values > kMaxImageValues / n))
        throw ShapeError(ls.loc.prefix() + "layer '" + ls.name + "' outputs " + node.shape.str() +
                         " per image, more than " + std::to_string(kMaxImageValues) +
                         " values (check InputSize and the layer's options)");
      values *= n;
    }
    node.layer->spec().check_all_used();
    index[ls.name] = static_cast<int>(i);
    nodes_.push_back(std::move(node));
  }
  input_ = static_cast<ImageInputLayer*>(nodes_[0].layer.get());

  for (size_t i = 1; i + 1 < nodes_.size(); ++i)
    if (nodes_[i].layer->role() == Layer::Role::kOutput)
      throw ConfigError(spec_.layers[i].loc.prefix() + "layer '" + nodes_[i].layer->name() + "' (" +
                        nodes_[i].layer->type() + ") is an output layer and must be the last layer");
  const Node& last = nodes_.back();
  if (last.layer->role() != Layer::Role::kOutput)
    throw ConfigError(spec_.layers.back().loc.prefix() +
                      "the last layer must be an output layer (classification after softmax, regression, ...), not " +
                      last.layer->type() + " '" + last.layer->name() +
                      "'; or name the loss with training.Loss (e.g. crossentropy, mse)");
  std::vector<const Layer*> producers;
  for (int p : last.inputs) producers.push_back(nodes_[p].layer.get());
  last.layer->check_producers(producers);
  output_ = last.inputs[0];
  loss_ = last.layer->loss_spec();
  backward_from_ = loss_.follows == Layer::Follows::kNone ? output_ : output_ - 1;
  if (!spec_.loss.empty() && appended < 0) check_loss_matches(last);
  if (!loss_.class_weights.empty()) {
    if (static_cast<int64_t>(loss_.class_weights.size()) != num_classes())
      throw ConfigError(spec_.layers.back().loc.prefix() + "layer '" + last.layer->name() +
                        "': " + std::to_string(loss_.class_weights.size()) + " ClassWeights for " +
                        std::to_string(num_classes()) + " classes (give one weight per class)");
    Tensor host(Shape{num_classes()});
    std::copy(loss_.class_weights.begin(), loss_.class_weights.end(), host.data());
    loss_weights_ = host.to(device_);
  }
  std::vector<int> uses(nodes_.size(), 0);
  for (const Node& n : nodes_)
    for (int p : n.inputs) ++uses[p];
  for (size_t i = 0; i + 1 < nodes_.size(); ++i)
    if (uses[i] == 0)
      throw ConfigError(spec_.layers[i].loc.prefix() + "layer '" + nodes_[i].layer->name() +
                        "': its output is not used by any layer (name it in a later layer's Inputs)");
}

void Network::plan_fusion() {
  std::vector<Layer*> layers;
  std::vector<std::vector<int>> inputs;
  for (const Node& n : nodes_) {
    layers.push_back(n.layer.get());
    inputs.push_back(n.inputs);
  }
  plan_ = FusionPlan(layers, inputs, *backend_);
  for (size_t i = 0; i < nodes_.size(); ++i) nodes_[i].alias_of = plan_.absorbed_by(i);
  nodes_.back().alias_of = output_;

  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    bool trainable = false;
    for (const Param& p : n.layer->params()) trainable = trainable || !p.frozen();
    bool upstream = false;
    for (int p : n.inputs) upstream = upstream || nodes_[root(p)].needs_grad;
    n.needs_grad = trainable || upstream;
  }
  for (size_t j = 0; j < nodes_.size(); ++j) {
    if (nodes_[j].alias_of >= 0) continue;
    for (int p : nodes_[j].inputs) nodes_[root(p)].consumers.push_back(static_cast<int>(j));
  }
}

// Each parameter starts on a 64-byte boundary (cuDNN and cuBLAS pick faster kernels for
// aligned pointers, and an algorithm chosen for one layer must fit every layer of its shape);
// the gaps stay zero in both buffers.
constexpr int64_t kParamAlign = 16;  // floats

void Network::allocate_params() {
  auto aligned = [](int64_t v) { return (v + kParamAlign - 1) / kParamAlign * kParamAlign; };
  int64_t total = 0;
  for (Node& n : nodes_)
    for (Param& p : n.layer->params()) total = aligned(total) + p.shape.numel();
  flat_values_ = Tensor::zeros(Shape{std::max<int64_t>(total, 1)}, device_);
  flat_grads_ = Tensor::zeros(Shape{std::max<int64_t>(total, 1)}, device_);
  int64_t offset = 0;
  for (Node& n : nodes_) {
    n.param_offset = offset;
    for (Param& p : n.layer->params()) {
      offset = aligned(offset);
      p.value = flat_values_.view(p.shape, offset);
      p.grad = flat_grads_.view(p.shape, offset);
      offset += p.shape.numel();
    }
    for (State& s : n.layer->states()) s.value = Tensor::zeros(s.shape, device_);
  }
}

void Network::init_params(uint64_t seed) {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Rng rng = Rng::derive(seed, {0x1a7e5ULL, i});
    nodes_[i].layer->init_params(rng);
  }
  input_->refresh_normalization();
}

void Network::set_mixed_precision(bool on) {
  if (on == mixed_) return;
  mixed_ = on;
  for (Node& node : nodes_) node.layer->set_mixed_precision(on);
  batch_ = 0;  // the next set_batch makes every op again
}

void Network::set_batch(int64_t n) {
  DLT_CHECK(n > 0, "batch size must be positive");
  for (Node& node : nodes_) {
    if (node.alias_of >= 0) continue;
    for_layer(*node.layer, [&] {
      Shape s = batch_shape(n, node.shape);
      if (!node.out.defined()) node.out = Tensor(s, device_);
      node.out.resize(s);
    });
  }
  plan_gradients(n);
  for (Node& node : nodes_) {
    if (node.alias_of < 0) continue;
    node.out = nodes_[root(node.alias_of)].out;
    node.grad = nodes_[root(node.alias_of)].grad;
  }
  if (n != batch_) {
    Backend& be = *backend_;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      Node& node = nodes_[i];
      if (node.alias_of >= 0) continue;
      for_layer(*node.layer, [&] {
        node.layer->setup(n, be);
        plan_.setup(i, n, be, mixed_);  // the fused inference op, where its step has one
      });
    }
    batch_ = n;
    // The next inference pass plans its buffers: which steps run fused ops, and so which
    // outputs a pass writes, follows the ops just made.
    inference_planned_ = false;
  }
}

size_t Network::inference_step_of(size_t i) const {
  const int j = root(static_cast<int>(i));
  const FusionPlan::Step step = plan_.step(static_cast<size_t>(j), RunContext{false, 0, 0}, inference_folding_);
  return static_cast<size_t>(step.kind == FusionPlan::Kind::kFoldedAway ? step.partner : j);
}

const Tensor& Network::forward(const Tensor& x, const RunContext& ctx) {
  DLT_CHECK(x.shape() == batch_shape(batch_, input_shape()), "forward: input "
                                                                 << x.shape().str() << " but the network expects "
                                                                 << batch_shape(batch_, input_shape()).str());
  // Inference on shared buffers (plan_inference_buffers), planned at the first inference pass
  // after set_batch (a run that only trains plans none) and again where the folding changed.
  if (!ctx.training && (!inference_planned_ || inference_plan_folding_ != inference_folding_))
    plan_inference_buffers(batch_);
  const bool inf = !ctx.training && !inference_out_.empty();
  std::vector<const Tensor*>& xs = scratch_xs_;
  using Kind = FusionPlan::Kind;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if (n.alias_of >= 0) continue;
    if (i == 0 && inf && input_->normalization() == "none") {
      inference_out_[0] = x;  // an input without normalization passes x on as it is
      continue;
    }
    const FusionPlan::Step step = plan_.step(i, ctx, inference_folding_);
    if (step.kind == Kind::kFoldedAway || step.kind == Kind::kInMaxPool) continue;  // another node's step runs it
    // kBnReluMaxPool: the batchNormalization's forward on its input writes the pooling's output.
    Node& stepped = step.kind == Kind::kBnReluMaxPool ? nodes_[static_cast<size_t>(step.partner)] : n;
    xs.clear();
    if (i == 0) xs.push_back(&x);
    for (int p : stepped.inputs) xs.push_back(&value(p, inf));
    Tensor& y = value(static_cast<int>(i), inf);
    auto run = [&] {
      if (step.kind == Kind::kBnReluMaxPool)
        stepped.layer->forward(xs, y, ctx);
      else if (step.kind == Kind::kFoldedConv)
        plan_.forward_folded(i, *xs[0], value(plan_.folded_output(i), inf),
                             plan_.sum_input(i) >= 0 ? &value(plan_.sum_input(i), inf) : nullptr);
      else if (step.kind == Kind::kConvDepthwise)
        plan_.forward_depthwise(i, *xs[0], value(plan_.depthwise_input(i), inf),
                                plan_.projection_input(i) >= 0 ? &value(plan_.projection_input(i), inf) : nullptr,
                                value(plan_.folded_output(i), inf), ctx);
      else if (step.kind == Kind::kScaledConv) {
        Node& mul = nodes_[static_cast<size_t>(step.partner)];
        scratch_mul_xs_.clear();
        for (int p : mul.inputs) scratch_mul_xs_.push_back(&value(p, inf));
        plan_.forward_scaled(i, scratch_mul_xs_, value(step.partner, inf), value(plan_.folded_output(i), inf), ctx);
      } else
        n.layer->forward(xs, y, ctx);
    };
    if (!prof_fwd_) {
      for_layer(*n.layer, run);
      continue;
    }
    Backend& be = *backend_;
    be.synchronize();
    Timer t;
    run();
    be.synchronize();
    (*prof_fwd_)[i] += t.seconds();
  }
  last_inference_ = inf;
  return output();
}

double Network::loss_and_backward(const Tensor& labels, const RunContext& ctx, bool backward, int64_t* correct,
                                  int64_t* counted) {
  loss_and_backward_async(labels, ctx, backward);
  return read_loss(correct, counted);
}

void Network::loss_and_backward_async(const Tensor& labels, const RunContext& ctx, bool backward) {
  Backend& be = *backend_;
  Node& out = nodes_[output_];
  DLT_CHECK(!backward || !last_inference_, "loss_and_backward: backward after an inference pass");
  Tensor none;
  Tensor* grad = nullptr;
  if (backward)
    grad = loss_.follows == Layer::Follows::kNone ? &nodes_[root(output_)].grad : grad_target(output_, out.inputs[0]);
  if (!loss_totals_.defined()) loss_totals_ = Tensor(Shape{Backend::kLossTotalsFloats}, device_);
  loss_labels_ = labels;
  LossOptions opt;
  opt.kind = loss_.kind;
  opt.class_weights = loss_weights_;
  opt.undefined_labels = loss_.per_pixel;
  opt.huber_delta = loss_.huber_delta;
  opt.focal_gamma = loss_.focal_gamma;
  opt.focal_alpha = loss_.focal_alpha;
  opt.tversky_alpha = loss_.tversky_alpha;
  opt.tversky_beta = loss_.tversky_beta;
  opt.images = batch_;
  if (dlt::float_targets(loss_.kind)) {
    DLT_CHECK(labels.numel() == batch_ * out.shape.numel(), "loss: " << labels.numel() << " targets for a batch of "
                                                                     << batch_ << " images of " << out.shape.str()
                                                                     << " outputs");
    be.loss_async(output(), labels, grad ? *grad : none, loss_totals_, opt);
  } else {
    const int64_t rows = batch_ * out.shape[0] * out.shape[1];
    DLT_CHECK(labels.numel() == (loss_.per_pixel ? rows : batch_),
              "loss: " << labels.numel() << " labels for a batch of " << batch_ << " images"
                       << (loss_.per_pixel ? " of " + out.shape.str() + " scores (one label per pixel)" : ""));
    Tensor probs = output().reshaped(Shape{rows, num_classes()});
    if (loss_.kind == LossKind::kCrossEntropy)
      be.cross_entropy_async(probs, labels, grad ? *grad : none, loss_totals_, opt);
    else
      be.loss_async(probs, labels, grad ? *grad : none, loss_totals_, opt);
  }
  if (!backward) return;

  for (int i = backward_from_; i >= 1; --i) {
    backward_node(i, ctx);
    if (grads_ready_) grads_ready_(nodes_[i].param_offset);
  }
  if (grads_ready_) grads_ready_(0);
}

double Network::read_loss(int64_t* correct, int64_t* counted) {
  DLT_CHECK(loss_totals_.defined() && loss_labels_.defined(), "read_loss before loss_and_backward_async");
  return backend_->read_loss(loss_totals_, loss_labels_, correct, counted);
}

LossTotals Network::read_loss_totals() {
  DLT_CHECK(loss_totals_.defined() && loss_labels_.defined(), "read_loss_totals before loss_and_backward_async");
  return backend_->read_loss_totals(loss_totals_, loss_labels_);
}

void Network::backward_node(int i, const RunContext& ctx) {
  Node& n = nodes_[i];
  if (n.alias_of >= 0 || !n.needs_grad) return;
  Backend& be = *backend_;
  if (n.consumers.size() > 1) {
    scratch_parts_.clear();
    for (const Tensor& t : n.edge_grads) scratch_parts_.push_back(&t);
    be.sum(scratch_parts_, n.grad);
  }
  const FusionPlan::Step step = plan_.step(static_cast<size_t>(i), ctx, false);
  if (step.kind == FusionPlan::Kind::kInMaxPool) return;  // done in its pooling's step
  if (step.kind == FusionPlan::Kind::kBnReluMaxPool) {
    // The batchNormalization's backward from the pooling's output and gradient.
    Node& bn = nodes_[step.partner];
    scratch_xs_.assign(1, &nodes_[root(bn.inputs[0])].out);
    scratch_dxs_.assign(1, grad_target(step.partner, bn.inputs[0]));
    Timer t;
    for_layer(*bn.layer, [&] { bn.layer->backward(scratch_xs_, n.out, n.grad, scratch_dxs_, ctx); });
    if (prof_bwd_) {
      be.synchronize();
      (*prof_bwd_)[i] += t.seconds();
    }
    return;
  }
  scratch_xs_.clear();
  scratch_dxs_.clear();
  for (size_t j = 0; j < n.inputs.size(); ++j) {
    const int p = n.inputs[j];
    scratch_xs_.push_back(&nodes_[root(p)].out);
    int mention = 0;  // earlier inputs naming the same producer
    for (size_t e = 0; e < j; ++e) mention += root(n.inputs[e]) == root(p) ? 1 : 0;
    scratch_dxs_.push_back(grad_target(i, p, mention));
  }
  Timer t;
  for_layer(*n.layer, [&] { n.layer->backward(scratch_xs_, n.out, n.grad, scratch_dxs_, ctx); });
  if (prof_bwd_) {
    be.synchronize();
    (*prof_bwd_)[i] += t.seconds();
  }
}

}  // namespace dlt
