// StepGraph: a training step captured once as a CUDA graph and replayed (opt-in,
// CudaGraph: true or env DLT_CUDA_GRAPH=1; docs/gpu.md "CUDA Graphs"). The caller issues its step through run();
// StepGraph runs it directly while warming up (cuDNN algorithm search, workspaces grown),
// captures it, then replays the graph while the batch size stays the same. Anything that
// fails or cannot be captured falls back to direct steps with one log line saying why.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "tensor/device.h"

namespace dlt {

class Network;

// Why a training step of net cannot be captured on device in a world of world_size processes,
// or "" when it can: a CPU device, a data-parallel world, a dropout layer (its mask changes
// every step). No training option blocks it: gradient clipping reads nothing back.
std::string step_graph_blocker(const Network& net, Device device, int world_size);

class StepGraph {
 public:
  enum class How { kDirect, kCaptured, kReplayed };
  // warmup: direct steps at a batch size before capturing at it.
  explicit StepGraph(Device device, int warmup = 2);
  ~StepGraph();  // frees the backend's graph if this made one
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;
  bool enabled() const { return enabled_; }
  // Stops capturing for good; logs why (once).
  void disable(const std::string& why);
  // One step of batch size n, issued by issue(): the same device work every call (same
  // tensors, same kernels), its per-step values in device memory. Returns how it ran.
  How run(int64_t n, const std::function<void()>& issue);
  // A step that must not be captured (its inputs are not the fixed ones): issued directly.
  How run_uncaptured(const std::function<void()>& issue);
  int64_t replays() const { return replays_; }
  int64_t captures() const { return captures_; }
  int64_t direct_steps() const { return direct_; }
  // "CUDA graph: 95 steps replayed, 1 capture, 4 direct" (or why it was off)
  std::string summary() const;

 private:
  Device device_;
  int warmup_;
  bool enabled_ = true;
  std::string why_off_;
  int64_t batch_ = 0, captured_batch_ = 0;  // the batch size warming up / the graph's
  int warm_ = 0;                            // direct steps at batch_ since it changed
  int64_t replays_ = 0, captures_ = 0, direct_ = 0, since_capture_ = 0;
  int stale_unreplayed_ = 0;  // graphs in a row that went stale before their first replay
};

}  // namespace dlt
