// Network <-> ModelData (the model file's tensors by layer and name), and the counts asked of
// a built network (learnables, memory, FLOPs), and the network made from a model file.
#include <algorithm>

#include "net/model_file.h"
#include "net/network.h"
#include "tensor/tensor.h"
#include "util/error.h"

namespace dlt {

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
      throw ModelError("layer '" + layer + "' " + name + " is " + nt.shape.str() +
                       " in the model file but the network needs " + shape.str());
    return nt;
  }
  throw ModelError("the model file has no " + name + " for layer '" + layer + "'");
}

}  // namespace

Network::Network(const ModelData& model, Device device, const std::string& file)
    : Network(model, backend_for(device), file) {}

Network::Network(const ModelData& model, Backend& backend, const std::string& file)
    : spec_(model.network), backend_(&backend), device_(backend.device()) {
  build();
  try {
    // The task a file records is its output layer's (files written before tasks record none).
    if (!model.task.empty() && model.task != task())
      throw ModelError("it records the task " + model.task + " but its network ends in a " + task() +
                       " output layer (file corrupt)");
    check_weights(model);
  } catch (const ModelError& e) {
    if (file.empty()) throw;
    throw ModelError(file + ": " + e.what());
  }
  plan_fusion();
  allocate_params();
  load_weights(model);
}

void Network::check_weights(const ModelData& m) const {
  for (const Node& n : nodes_) {
    for (const Param& p : n.layer->params()) find_named(m.params, n.layer->name(), p.name, p.shape);
    for (const State& s : n.layer->states()) find_named(m.states, n.layer->name(), s.name, s.shape);
  }
}

ModelData Network::to_model_data() const {
  ModelData m;
  m.network = spec_;
  m.classes = classes_;
  m.label_ids = label_ids_;
  m.task = task();
  m.responses.names = response_names_;
  m.responses.mean = response_mean_;
  m.responses.std = response_std_;
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
  label_ids_ = m.label_ids;
  response_names_ = m.responses.names;
  response_mean_ = m.responses.mean;
  response_std_ = m.responses.std;
  input_->refresh_normalization();
}

}  // namespace dlt
