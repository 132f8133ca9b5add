// AsyncDevice: what only a device that runs work asynchronously from the host has (the CUDA
// backend): CUDA graphs, uploads staged to overlap compute, a loss read later, its peak memory
// and waiting for it. Obtained from Backend::async_device(), null on the CPU, so callers that
// use it say so (`if (AsyncDevice* dev = be.async_device())`) and the CPU backend implements
// none of it. docs/gpu.md describes the execution model.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/loss.h"
#include "tensor/tensor.h"

namespace dlt {

class Backend;

class AsyncDevice {
 public:
  // ---- CUDA Graphs (docs/gpu.md "CUDA Graphs"): record a step's device work once, replay it ----
  // begin_capture() starts recording the work issued to this device. Until end_capture() the
  // work is recorded, not run, and nothing may allocate or free device memory, wait for the
  // device or upload. end_capture() instantiates the graph (throws DeviceError naming the
  // cause when the capture failed); abort_capture() ends a failed capture and keeps nothing.
  // replay() launches the graph and returns true, or false (launching nothing) when there is
  // none or memory it uses has been freed since the capture; it does not join uploads begun
  // before it (upload_wait() those the graph reads). drop_capture() frees the graph.
  virtual void begin_capture() = 0;
  virtual void end_capture() = 0;
  virtual void abort_capture() noexcept = 0;
  virtual bool replay() = 0;
  virtual void drop_capture() = 0;

  // ---- host -> device transfers that overlap compute ----
  // Starts copying host (CPU memory) into dst (on this device; equal numel); work issued after
  // upload_wait() sees the data. Until then nothing may read or write dst.
  virtual void upload_begin(const Tensor& host, Tensor& dst) = 0;
  virtual void upload_wait() = 0;

  // Waits for all work issued to the device (Backend::synchronize forwards here).
  virtual void synchronize() = 0;
  // Peak bytes of device memory held by this device's allocator.
  virtual size_t peak_memory_bytes() const = 0;

 protected:
  ~AsyncDevice() = default;  // owned as the Backend it is part of

  // Backend::cross_entropy_async, loss_async and read_loss, after their checks: opt.kind's loss
  // kernel and a copy of its totals that read_loss waits for alone (not for later work).
  friend class Backend;
  virtual void loss_async(const Tensor& probs, const Tensor& labels, const LossOptions& opt, Tensor& dlogits,
                          Tensor& totals) = 0;
  virtual LossTotals read_loss_totals(const Tensor& totals) = 0;
};

}  // namespace dlt
