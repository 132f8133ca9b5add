// Network's gradient buffers: which layer outputs' gradients share memory (plan_gradients),
// where a consumer writes its input's gradient (grad_target), and the bytes held.
#include <algorithm>

#include "net/network.h"
#include "net/network_internal.h"

namespace dlt {

using net_internal::out_of_memory_in;

// Gradient buffers by liveness. Backward runs steps backward_from_ .. 1 (the loss writes the
// gradient of the softmax's or sigmoid's input, or of the output itself, before them). The gradient of node p is written at the step of
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
  // A batchNormalization that runs in its max pooling's step (CPU training) writes its input's
  // gradient there, earlier in backward than its own step.
  auto written_at = [&](int consumer) { return plan_.backward_step(consumer); };
  for (size_t p = 0; p < nodes_.size(); ++p) {
    Node& node = nodes_[p];
    if (node.alias_of >= 0 || !node.needs_grad) continue;
    const Shape s = batch_shape(n, node.shape);
    const int pi = static_cast<int>(p);
    if (node.consumers.size() < 2) {
      uses.push_back({&node.grad, s, node.consumers.empty() ? pi : written_at(node.consumers[0]), pi, pi});
      continue;
    }
    node.edge_grads.resize(node.consumers.size());
    uses.push_back({&node.grad, s, pi, pi, pi});
    for (size_t k = 0; k < node.consumers.size(); ++k)
      uses.push_back({&node.edge_grads[k], s, written_at(node.consumers[k]), pi, pi});
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
  for (const Tensor& t : inference_extra_) bytes += static_cast<int64_t>(t.bytes());
  return bytes;
}

Tensor* Network::grad_target(int consumer, int producer, int mention) {
  Node& p = nodes_[root(producer)];
  if (!p.needs_grad) return nullptr;
  if (p.consumers.size() == 1) return &p.grad;
  // A consumer naming the same producer twice (x * x) gets one edge buffer per mention, in the
  // order of its inputs (consumers lists the consumer once per mention).
  for (size_t k = 0; k < p.consumers.size(); ++k)
    if (p.consumers[k] == consumer && mention-- == 0) return &p.edge_grads[k];
  DLT_CHECK(false, "no edge from " << producer << " to " << consumer);
}

}  // namespace dlt
