#include "net/network.h"

#include <algorithm>
#include <map>

#include "dist/communicator.h"
#include "net/model_file.h"
#include "util/error.h"
#include "util/strings.h"
#include "util/timer.h"

namespace dlt {

Network::Network(const NetworkSpec& spec, Device device) : spec_(spec), device_(device) {
  build();
  plan_fusion();
  allocate_params();
}

Network::~Network() = default;

void Network::build() {
  if (spec_.layers.empty()) throw ConfigError("the network has no layers (add a layers: list)");
  std::map<std::string, int> index;
  for (size_t i = 0; i < spec_.layers.size(); ++i) {
    const LayerSpec& ls = spec_.layers[i];
    if (index.count(ls.name))
      throw ConfigError(ls.loc.prefix() + "layer name '" + ls.name + "' is used twice (names must be unique)");
    Node node;
    node.layer = make_layer(ls);
    const Layer::Role role = node.layer->role();
    if (i == 0 && role != Layer::Role::kInput)
      throw ConfigError(ls.loc.prefix() + "layer '" + ls.name + "': the first layer must be imageInput, not " + node.layer->type());
    if (i > 0 && role == Layer::Role::kInput)
      throw ConfigError(ls.loc.prefix() + "layer '" + ls.name + "': " + node.layer->type() + " can only be the first layer");
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
                        std::to_string(have) + (want < 0 ? " (list them with Inputs: [a, b])" : ""));
    std::vector<Shape> in_shapes;
    for (int p : node.inputs) in_shapes.push_back(nodes_[p].shape);
    node.shape = node.layer->infer(in_shapes);
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
    throw ConfigError(spec_.layers.back().loc.prefix() + "the last layer must be classification (after softmax), not " +
                      last.layer->type() + " '" + last.layer->name() + "'");
  std::vector<const Layer*> producers;
  for (int p : last.inputs) producers.push_back(nodes_[p].layer.get());
  last.layer->check_producers(producers);
  softmax_ = last.inputs[0];
  std::vector<int> uses(nodes_.size(), 0);
  for (const Node& n : nodes_)
    for (int p : n.inputs) ++uses[p];
  for (size_t i = 0; i + 1 < nodes_.size(); ++i)
    if (uses[i] == 0)
      throw ConfigError(spec_.layers[i].loc.prefix() + "layer '" + nodes_[i].layer->name() +
                        "': its output is not used by any layer (name it in a later layer's Inputs)");
}

void Network::plan_fusion() {
  std::vector<std::vector<int>> users(nodes_.size());
  for (size_t j = 0; j < nodes_.size(); ++j)
    for (int p : nodes_[j].inputs) users[p].push_back(static_cast<int>(j));
  for (size_t p = 0; p < nodes_.size(); ++p) {
    if (!nodes_[p].layer->can_fuse_relu() || users[p].size() != 1) continue;
    int r = users[p][0];
    if (!nodes_[r].layer->is_relu()) continue;
    nodes_[p].layer->set_fuse_relu(true);
    nodes_[r].alias_of = static_cast<int>(p);
  }
  nodes_.back().alias_of = softmax_;

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
  input_->refresh_inv_std();
}

namespace {
// Runs f; an out-of-memory DeviceError then starts with where() (a layer, a buffer's layers);
// the allocator's message already suggests a smaller MiniBatchSize.
template <class Where, class F>
void out_of_memory_in(Where where, F f) {
  try {
    f();
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    if (what.rfind("out of GPU memory", 0) != 0) throw;
    throw DeviceError(where() + ": " + what);
  }
}

template <class F>
void for_layer(const Layer& l, F f) {
  out_of_memory_in([&] { return "layer '" + l.name() + "' (" + l.type() + ")"; }, f);
}
}  // namespace

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
    Backend& be = backend_for(device_);
    for (Node& node : nodes_)
      if (node.alias_of < 0) for_layer(*node.layer, [&] { node.layer->setup(n, be); });
    batch_ = n;
  }
}

// Gradient buffers by liveness. Backward runs steps softmax_-1 .. 1 (the loss writes the
// softmax input's gradient at step softmax_). The gradient of node p is written at the step of
// each consumer c (into an edge buffer per consumer when there are several, summed into
// p's own buffer at step p) and read at step p: it lives on steps [p, c]. Buffers whose steps
// are disjoint share one slot; slots are assigned greedily in backward order and sized by
// their largest user. Results are bit-identical to one buffer per gradient.
void Network::plan_gradients(int64_t n) {
  struct Use {
    Tensor* t;
    Shape shape;
    int first, last;  // written first at step `first`, last read at step `last` (first >= last)
    int node;         // whose output's gradient (names the layers in an out-of-memory error)
    int slot = -1;
  };
  std::vector<Use> uses;
  for (size_t p = 0; p < nodes_.size(); ++p) {
    Node& node = nodes_[p];
    if (node.alias_of >= 0 || !node.needs_grad) continue;
    const Shape s = batch_shape(n, node.shape);
    const int pi = static_cast<int>(p);
    if (node.consumers.size() < 2) {
      uses.push_back({&node.grad, s, node.consumers.empty() ? pi : node.consumers[0], pi, pi});
      continue;
    }
    node.edge_grads.resize(node.consumers.size());
    uses.push_back({&node.grad, s, pi, pi, pi});
    for (size_t k = 0; k < node.consumers.size(); ++k) uses.push_back({&node.edge_grads[k], s, node.consumers[k], pi, pi});
  }
  std::vector<int64_t> need;  // elements per slot
  if (grad_reuse_) {
    std::vector<size_t> order(uses.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return uses[a].first > uses[b].first; });
    std::vector<int> busy_until;  // per slot: the last step reading it (free for steps below)
    for (size_t k : order) {
      Use& u = uses[k];
      int best = -1;
      for (size_t s = 0; s < need.size(); ++s) {
        if (busy_until[s] <= u.first) continue;  // still live at u's first step
        // Prefer a slot that already fits, the smallest such; else the largest.
        const bool fits = need[s] >= u.shape.numel();
        if (best < 0) {
          best = static_cast<int>(s);
          continue;
        }
        const bool best_fits = need[static_cast<size_t>(best)] >= u.shape.numel();
        if ((fits && (!best_fits || need[s] < need[static_cast<size_t>(best)])) ||
            (!fits && !best_fits && need[s] > need[static_cast<size_t>(best)]))
          best = static_cast<int>(s);
      }
      if (best < 0) {
        best = static_cast<int>(need.size());
        need.push_back(0);
        busy_until.push_back(0);
      }
      need[static_cast<size_t>(best)] = std::max(need[static_cast<size_t>(best)], u.shape.numel());
      busy_until[static_cast<size_t>(best)] = u.last;
      u.slot = best;
    }
  } else {
    for (size_t k = 0; k < uses.size(); ++k) {
      uses[k].slot = static_cast<int>(k);
      need.push_back(uses[k].shape.numel());
    }
  }
  if (grad_slots_.size() < need.size()) grad_slots_.resize(need.size());
  for (size_t s = 0; s < need.size(); ++s) {
    auto where = [&] {  // the layers whose output gradients share this buffer
      std::string names;
      for (const Use& u : uses) {
        const std::string name = "'" + nodes_[static_cast<size_t>(u.node)].layer->name() + "'";
        if (u.slot == static_cast<int>(s) && names.find(name) == std::string::npos)
          names += (names.empty() ? "" : ", ") + name;
      }
      return "output gradient of layer " + names + " (batch " + std::to_string(n) + ")";
    };
    out_of_memory_in(where, [&] {
      Tensor& slot = grad_slots_[s];
      if (!slot.defined()) slot = Tensor(Shape{need[s]}, device_);
      slot.resize(Shape{std::max(slot.numel(), need[s])});
    });
  }
  for (Use& u : uses) *u.t = grad_slots_[static_cast<size_t>(u.slot)].view(u.shape);
}

int64_t Network::activation_bytes() const {
  int64_t bytes = 0;
  for (const Node& n : nodes_)
    if (n.alias_of < 0 && n.out.defined()) bytes += static_cast<int64_t>(n.out.bytes());
  for (const Tensor& t : grad_slots_) bytes += static_cast<int64_t>(t.bytes());
  return bytes;
}

Tensor* Network::grad_target(int consumer, int producer) {
  Node& p = nodes_[root(producer)];
  if (!p.needs_grad) return nullptr;
  if (p.consumers.size() == 1) return &p.grad;
  // A consumer naming the same producer twice gets one edge buffer per mention.
  for (size_t k = 0; k < p.consumers.size(); ++k)
    if (p.consumers[k] == consumer) return &p.edge_grads[k];
  DLT_CHECK(false, "no edge from " << producer << " to " << consumer);
}

const Tensor& Network::forward(const Tensor& x, const RunContext& ctx) {
  DLT_CHECK(x.shape() == batch_shape(batch_, input_shape()),
            "forward: input " << x.shape().str() << " but the network expects " << batch_shape(batch_, input_shape()).str());
  std::vector<const Tensor*>& xs = scratch_xs_;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if (n.alias_of >= 0) continue;
    xs.clear();
    if (i == 0) xs.push_back(&x);
    for (int p : n.inputs) xs.push_back(&nodes_[root(p)].out);
    if (!prof_fwd_) {
      for_layer(*n.layer, [&] { n.layer->forward(xs, n.out, ctx); });
      continue;
    }
    Backend& be = backend_for(device_);
    be.synchronize();
    Timer t;
    n.layer->forward(xs, n.out, ctx);
    be.synchronize();
    (*prof_fwd_)[i] += t.seconds();
  }
  return nodes_[softmax_].out;
}

double Network::loss_and_backward(const Tensor& labels, const RunContext& ctx, bool backward, int64_t* correct) {
  loss_and_backward_async(labels, ctx, backward);
  return read_loss(correct);
}

void Network::loss_and_backward_async(const Tensor& labels, const RunContext& ctx, bool backward) {
  Backend& be = backend_for(device_);
  Node& sm = nodes_[softmax_];
  Tensor none;
  Tensor* dlogits = backward ? grad_target(softmax_, sm.inputs[0]) : nullptr;
  Tensor probs = sm.out.reshaped(Shape{batch_, num_classes()});
  if (!loss_totals_.defined()) loss_totals_ = Tensor(Shape{Backend::kLossTotalsFloats}, device_);
  loss_labels_ = labels;
  be.cross_entropy_async(probs, labels, dlogits ? *dlogits : none, loss_totals_);
  if (!backward) return;

  for (int i = softmax_ - 1; i >= 1; --i) {
    backward_node(i, ctx);
    if (grads_ready_) grads_ready_(nodes_[i].param_offset);
  }
  if (grads_ready_) grads_ready_(0);
}

double Network::read_loss(int64_t* correct) {
  DLT_CHECK(loss_totals_.defined() && loss_labels_.defined(), "read_loss before loss_and_backward_async");
  return backend_for(device_).read_loss(loss_totals_, loss_labels_, correct);
}

void Network::backward_node(int i, const RunContext& ctx) {
  Node& n = nodes_[i];
  if (n.alias_of >= 0 || !n.needs_grad) return;
  Backend& be = backend_for(device_);
  if (n.consumers.size() > 1) {
    scratch_parts_.clear();
    for (const Tensor& t : n.edge_grads) scratch_parts_.push_back(&t);
    be.sum(scratch_parts_, n.grad);
  }
  scratch_xs_.clear();
  scratch_dxs_.clear();
  for (int p : n.inputs) {
    scratch_xs_.push_back(&nodes_[root(p)].out);
    scratch_dxs_.push_back(grad_target(i, p));
  }
  Timer t;
  for_layer(*n.layer, [&] { n.layer->backward(scratch_xs_, n.out, n.grad, scratch_dxs_, ctx); });
  if (prof_bwd_) {
    be.synchronize();
    (*prof_bwd_)[i] += t.seconds();
  }
}

void Network::run_empty_share(const RunContext& ctx) {
  backend_for(device_).fill(flat_grads_, 0.f);
  if (ctx.comm && ctx.comm->size() > 1) {
    auto joins = [&](const Node& n) { return n.alias_of < 0 && n.layer->joins_collectives(); };
    Tensor y, dy, dx;
    for (size_t i = 1; i < nodes_.size(); ++i) {
      Node& n = nodes_[i];
      if (!joins(n)) continue;
      Tensor x(batch_shape(0, nodes_[root(n.inputs[0])].shape), device_);
      y = Tensor(batch_shape(0, n.shape), device_);
      n.layer->forward({&x}, y, ctx);
    }
    for (int i = softmax_ - 1; i >= 1; --i) {
      Node& n = nodes_[i];
      if (joins(n) && n.needs_grad) {
        Tensor x(batch_shape(0, nodes_[root(n.inputs[0])].shape), device_);
        y = Tensor(batch_shape(0, n.shape), device_);
        dy = Tensor(batch_shape(0, n.shape), device_);
        dx = Tensor(x.shape(), device_);
        n.layer->backward({&x}, y, dy, {grad_target(i, n.inputs[0]) ? &dx : nullptr}, ctx);
      }
      if (grads_ready_) grads_ready_(n.param_offset);
    }
  } else {
    for (int i = softmax_ - 1; i >= 1; --i)
      if (grads_ready_) grads_ready_(nodes_[i].param_offset);
  }
  if (grads_ready_) grads_ready_(0);
}

std::vector<Param*> Network::params() {
  std::vector<Param*> out;
  for (Node& n : nodes_)
    for (Param& p : n.layer->params()) out.push_back(&p);
  return out;
}

int64_t Network::total_learnables() const {
  int64_t total = 0;
  for (const Node& n : nodes_)
    for (const Param& p : n.layer->params()) total += p.shape.numel();
  return total;
}

int64_t Network::memory_bytes() const { return 4 * (total_learnables() + input_->stored_statistics()); }

int64_t Network::flops_per_image() const {
  int64_t total = 0;
  for (const Node& n : nodes_) total += n.layer->flops_per_image();
  return total;
}

namespace {

NamedTensor named(const std::string& layer, const std::string& name, const Tensor& t) {
  Tensor host = t.to(Device::cpu());
  NamedTensor nt;
  nt.layer = layer;
  nt.name = name;
  nt.shape = t.shape();
  nt.data.assign(host.data(), host.data() + host.numel());
  return nt;
}

const NamedTensor& find_named(const std::vector<NamedTensor>& list, const std::string& layer, const std::string& name,
                              const Shape& shape) {
  for (const NamedTensor& nt : list) {
    if (nt.layer != layer || nt.name != name) continue;
    if (nt.shape != shape || static_cast<int64_t>(nt.data.size()) != shape.numel())
      throw ModelError("layer '" + layer + "' " + name + " is " + nt.shape.str() + " in the model file but the network needs " +
                       shape.str());
    return nt;
  }
  throw ModelError("the model file has no " + name + " for layer '" + layer + "'");
}

}  // namespace

ModelData Network::to_model_data() const {
  ModelData m;
  m.network = spec_;
  m.classes = classes_;
  for (const Node& n : nodes_) {
    for (const Param& p : n.layer->params()) m.params.push_back(named(n.layer->name(), p.name, p.value));
    for (const State& s : n.layer->states()) m.states.push_back(named(n.layer->name(), s.name, s.value));
  }
  return m;
}

void Network::load_weights(const ModelData& m) {
  for (Node& n : nodes_) {
    for (Param& p : n.layer->params()) {
      const NamedTensor& nt = find_named(m.params, n.layer->name(), p.name, p.shape);
      Tensor h(p.shape);
      std::copy(nt.data.begin(), nt.data.end(), h.data());
      p.value.copy_from(h);
    }
    for (State& s : n.layer->states()) {
      const NamedTensor& nt = find_named(m.states, n.layer->name(), s.name, s.shape);
      Tensor h(s.shape);
      std::copy(nt.data.begin(), nt.data.end(), h.data());
      s.value.copy_from(h);
    }
  }
  classes_ = m.classes;
  input_->refresh_inv_std();
}

}  // namespace dlt
