// Network's inference buffers: which buffer each layer output occupies in an inference pass
// (plan_inference_buffers), from what each inference step reads and writes
// (inference_step_io).
#include <algorithm>
#include <map>
#include <string>

#include "net/network.h"
#include "net/network_internal.h"
#include "util/env.h"
#include "util/error.h"

namespace dlt {

using net_internal::out_of_memory_in;

bool shared_inference_buffers(Device device) {
  const std::string v = env_text("DLT_INFERENCE_BUFFERS");
  if (v.empty()) return device.is_cpu();
  if (v != "shared" && v != "own")
    throw ConfigError("DLT_INFERENCE_BUFFERS is '" + v + "'; set it to shared or own, or unset it");
  return v == "shared";
}

bool Network::inference_step_io(size_t i, std::vector<int>& reads, std::vector<int>& writes) const {
  using Kind = FusionPlan::Kind;
  const Node& n = nodes_[i];
  if (n.alias_of >= 0) return false;
  const FusionPlan::Step step = plan_.step(i, RunContext{}, inference_folding_);
  if (step.kind == Kind::kFoldedAway || step.kind == Kind::kInMaxPool) return false;
  const Node& stepped = step.kind == Kind::kBnReluMaxPool ? nodes_[static_cast<size_t>(step.partner)] : n;
  // (A kScaledConv step reads the multiplication's inputs, not the convolution's.)
  if (step.kind != Kind::kScaledConv)
    for (int p : stepped.inputs) reads.push_back(root(p));
  switch (step.kind) {
    case Kind::kFoldedConv:
      writes.push_back(root(plan_.folded_output(i)));
      if (plan_.sum_input(i) >= 0) reads.push_back(root(plan_.sum_input(i)));
      break;
    case Kind::kConvDepthwise:
      // The outputs between the convolutions only where they run apart (FusionPlan::forward_depthwise).
      if (!plan_.depthwise_ready(i)) {
        writes.push_back(root(plan_.depthwise_input(i)));
        if (plan_.projection_input(i) >= 0) writes.push_back(root(plan_.projection_input(i)));
      }
      writes.push_back(root(plan_.folded_output(i)));
      break;
    case Kind::kScaledConv:
      for (int p : nodes_[static_cast<size_t>(step.partner)].inputs) reads.push_back(root(p));
      if (!plan_.scaled_ready(i)) writes.push_back(root(step.partner));  // the product, where apart
      writes.push_back(root(plan_.folded_output(i)));
      break;
    default:
      writes.push_back(static_cast<int>(i));
  }
  return true;
}

// Inference buffers by liveness. An inference pass needs an output only from the step that
// writes it to the last step that reads it (the network's output to the end), so outputs whose
// lifetimes do not overlap can share memory. Their memory is the training buffers' (node.out,
// allocated anyway): each output takes a free one that holds it, preferring the one freed last
// (still in cache) among those the pass already uses, else the smallest unused one; where none
// is free and large enough (a wide layer after narrower ones), a buffer of its own
// (inference_extra_). A pass then writes to a few buffers, which stay in cache, instead of one
// per layer (imported mobilenet_v3_large at batch 32: 129 of the 1053 MiB `dltrain time`
// reports). Results are bit-identical to a buffer per output: no step writes a buffer that an
// output it reads, or one still to be read, occupies.
void Network::plan_inference_buffers(int64_t n) {
  inference_out_.clear();
  inference_extra_.clear();
  inference_planned_ = true;
  inference_plan_folding_ = inference_folding_;
  last_inference_ = false;
  inference_bytes_ = 0;
  if (!inference_reuse_) {
    for (const Node& node : nodes_)
      if (node.alias_of < 0 && node.out.defined()) inference_bytes_ += static_cast<int64_t>(node.out.bytes());
    return;
  }
  const size_t count = nodes_.size();
  // Pass 1: the step that writes each output and the last step that uses it.
  std::vector<int> written(count, -1), last(count, -1);
  std::vector<int> reads, writes;
  // An input layer without normalization runs no step: forward hands the batch on as its output.
  const bool input_step = input_->normalization() != "none";
  for (size_t i = input_step ? 0 : 1; i < count; ++i) {
    reads.clear();
    writes.clear();
    if (!inference_step_io(i, reads, writes)) continue;
    const int step = static_cast<int>(i);
    for (int w : writes) {
      DLT_CHECK(written[w] < 0, "inference buffers: node " << w << " written twice");
      written[w] = step;
      last[w] = step;
    }
    for (int r : reads) {
      DLT_CHECK(written[r] >= 0 || r == 0, "inference buffers: node " << r << " read before it is written");
      last[r] = step;
    }
  }
  const int result = root(output_);
  // Pass 2: assign buffers in step order.
  struct Slot {
    Tensor buffer;
    int64_t capacity = 0;  // elements
    int64_t used = 0;      // the most elements an output placed in it has
  };
  std::vector<Slot> slots;
  std::multimap<int64_t, int> unused;  // capacity -> slot, never taken yet
  std::vector<int> freed;              // slots taken before and free again, the last freed last
  for (Node& node : nodes_) {
    if (node.alias_of >= 0 || !node.out.defined()) continue;
    unused.emplace(node.out.capacity(), static_cast<int>(slots.size()));
    slots.push_back({node.out, node.out.capacity()});
  }
  std::vector<int> slot_of(count, -1);
  inference_out_.assign(count, Tensor());
  auto take = [&](int v) {
    const Shape s = batch_shape(n, nodes_[static_cast<size_t>(v)].shape);
    const int64_t need = s.numel();
    int slot = -1;
    for (size_t k = freed.size(); k-- > 0;) {
      if (slots[static_cast<size_t>(freed[k])].capacity < need) continue;
      slot = freed[k];
      freed.erase(freed.begin() + static_cast<std::ptrdiff_t>(k));
      break;
    }
    if (slot < 0) {
      auto it = unused.lower_bound(need);
      if (it != unused.end()) {
        slot = it->second;
        unused.erase(it);
      }
    }
    if (slot < 0) {
      out_of_memory_in(
          [&] { return "inference buffer of layer '" + nodes_[static_cast<size_t>(v)].layer->name() + "'"; },
          [&] { inference_extra_.emplace_back(s, device_); });
      slot = static_cast<int>(slots.size());
      slots.push_back({inference_extra_.back(), need});
    }
    slot_of[static_cast<size_t>(v)] = slot;
    slots[static_cast<size_t>(slot)].used = std::max(slots[static_cast<size_t>(slot)].used, need);
    inference_out_[static_cast<size_t>(v)] = slots[static_cast<size_t>(slot)].buffer.view(s, 0);
  };
  for (size_t i = input_step ? 0 : 1; i < count; ++i) {
    reads.clear();
    writes.clear();
    if (!inference_step_io(i, reads, writes)) continue;
    for (int w : writes) take(w);
    const int step = static_cast<int>(i);
    for (const std::vector<int>* list : {&reads, &writes})
      for (int v : *list)
        if (v != result && last[v] == step && slot_of[v] >= 0) {
          freed.push_back(slot_of[v]);
          slot_of[v] = -1;
        }
  }
  for (const Slot& slot : slots) inference_bytes_ += slot.used * 4;
  for (size_t i = 0; i < count; ++i)
    if (nodes_[i].alias_of >= 0) inference_out_[i] = inference_out_[static_cast<size_t>(root(static_cast<int>(i)))];
}

}  // namespace dlt
