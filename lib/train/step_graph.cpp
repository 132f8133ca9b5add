// StepGraph: warm-up, capture, replay and the fallbacks (see the header).
#include "train/step_graph.h"

#include <exception>

#include "backend/async_device.h"
#include "backend/backend.h"
#include "net/network.h"
#include "util/log.h"

namespace dlt {

std::string step_graph_blocker(const Network& net, Device device, int world_size) {
  if (device.is_cpu()) return "training on the CPU (graphs are a CUDA feature)";
  if (world_size > 1)
    return "data-parallel training (" + std::to_string(world_size) +
           " workers: collectives and synchronized batch norm are not captured)";
  if (net.float_targets()) return "a " + net.task() + " loss (captured steps take class labels only)";
  for (size_t i = 0; i < net.size(); ++i)
    if (net.layer(i).stochastic())
      return "layer '" + net.layer(i).name() + "' is " + net.layer(i).type() + " (its mask changes every step)";
  return "";
}

StepGraph::StepGraph(Device device, int warmup) : device_(device), warmup_(warmup) {}

StepGraph::~StepGraph() {
  if (captures_ == 0) return;
  try {
    if (AsyncDevice* dev = backend_for(device_).async_device()) dev->drop_capture();
  } catch (const std::exception& e) {  // a destructor must not throw
    log::warn("CUDA graph: freeing the graph failed: {}", e.what());
  }
}

void StepGraph::disable(const std::string& why) {
  if (!enabled_) return;
  enabled_ = false;
  why_off_ = why;
  if (AsyncDevice* dev = backend_for(device_).async_device()) dev->drop_capture();
  log::warn("CUDA graph: off ({}); steps run uncaptured", why);
}

StepGraph::How StepGraph::run_uncaptured(const std::function<void()>& issue) {
  issue();
  ++direct_;
  return How::kDirect;
}

StepGraph::How StepGraph::run(int64_t n, const std::function<void()>& issue) {
  if (!enabled_) return run_uncaptured(issue);
  AsyncDevice* dev = backend_for(device_).async_device();  // null: the CPU
  if (n == captured_batch_) {
    if (dev && dev->replay()) {
      ++replays_;
      ++since_capture_;
      stale_unreplayed_ = 0;
      return How::kReplayed;
    }
    // Memory the graph uses was freed (ops made again for another batch size, a workspace
    // grown by validation): warm up at this size again and capture anew. Once can be bad
    // timing (validation right after the capturing step); twice in a row means the step
    // itself frees memory the graph uses.
    if (since_capture_ == 0 && ++stale_unreplayed_ >= 2) {
      disable(
          "the graph went stale before its first replay twice (memory it uses is freed "
          "every step)");
      return run_uncaptured(issue);
    }
    log::debug("CUDA graph: stale after {} replays; capturing again", since_capture_);
    captured_batch_ = 0;
    warm_ = 0;
  }
  if (n != batch_) {  // another batch size (an epoch's last, smaller batch): warm up at it
    batch_ = n;
    warm_ = 0;
  }
  if (warm_ < warmup_) {
    ++warm_;
    return run_uncaptured(issue);
  }
  if (!dev) {
    disable("the " + device_.str() + " backend cannot capture");
    return run_uncaptured(issue);
  }
  try {
    dev->begin_capture();
    issue();
    dev->end_capture();
  } catch (const std::exception& e) {
    dev->abort_capture();
    disable(std::string("capture failed: ") + e.what());
    return run_uncaptured(issue);  // nothing of the capture ran: issue the step for real
  }
  ++captures_;
  captured_batch_ = n;
  since_capture_ = 0;
  if (captures_ == 1) log::info("CUDA graph: training step captured at batch size {}", n);
  if (!dev->replay()) {
    disable("the graph went stale right after its capture");
    return run_uncaptured(issue);
  }
  return How::kCaptured;
}

std::string StepGraph::summary() const {
  if (!enabled_ && captures_ == 0) return "CUDA graph: off (" + why_off_ + ")";
  return "CUDA graph: " + std::to_string(replays_) + " steps replayed, " + std::to_string(captures_) + " captured, " +
         std::to_string(direct_) + " direct" + (enabled_ ? std::string() : " (then off: " + why_off_ + ")");
}

}  // namespace dlt
