// DeviceBatches: a training loop's mini-batches on the training device. Two device slots are
// used in turn so the next mini-batch is uploaded (the backend's pinned staging buffers and
// copy stream) while the current one computes: stage(next) before issuing the current
// batch's work, take(next) when its turn comes. On the CPU the host batch is used as it is.
#pragma once
#include "data/batch_loader.h"

namespace dlt {

class DeviceBatches {
 public:
  explicit DeviceBatches(Device device) : device_(device) {}
  // A staged upload never taken (training stopped early or threw) may still write a slot on
  // the copy stream: the compute stream waits for it before the slots go back to the caching
  // allocator, whose next user is ordered on the compute stream only.
  ~DeviceBatches();
  DeviceBatches(const DeviceBatches&) = delete;
  DeviceBatches& operator=(const DeviceBatches&) = delete;
  // Starts the upload of host into the slot not in use. host must not change until take().
  void stage(const Batch& host);
  // host's batch on the device, for work issued after this call (uploads it now unless it
  // was staged). The returned batch stays valid until the second stage() after this.
  Batch& take(Batch& host);

 private:
  void begin(const Batch& host, Batch& slot);
  Device device_;
  Batch slots_[2];
  int next_slot_ = 0;
  const Batch* staged_host_ = nullptr;  // the host batch of the staged slot
  int staged_slot_ = -1;
};

}  // namespace dlt
