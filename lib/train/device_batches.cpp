// DeviceBatches: double-buffered uploads of training mini-batches (see the header).
#include "train/device_batches.h"

#include "backend/async_device.h"
#include "backend/backend.h"
#include "util/error.h"

namespace dlt {

DeviceBatches::~DeviceBatches() {
  if (device_.is_cpu() || staged_slot_ < 0) return;
  try {
    if (AsyncDevice* dev = backend_for(device_).async_device()) dev->upload_wait();
  } catch (...) {  // a destructor must not throw; a failed device reports at its next call
  }
}

void DeviceBatches::begin(const Batch& host, Batch& slot) {
  if (!slot.images.defined()) {  // an empty Tensor would resize onto the host
    slot.images = Tensor(host.images.shape(), device_);
    slot.labels = Tensor(host.labels.shape(), device_, DType::kI32);
  }
  slot.images.resize(host.images.shape());
  slot.labels.resize(host.labels.shape());
  if (host.targets.defined()) {  // regression responses, multi-label 0/1
    if (!slot.targets.defined()) slot.targets = Tensor(host.targets.shape(), device_);
    slot.targets.resize(host.targets.shape());
  }
  if (AsyncDevice* dev = backend_for(device_).async_device()) {
    dev->upload_begin(host.images, slot.images);
    dev->upload_begin(host.labels, slot.labels);
    if (host.targets.defined()) dev->upload_begin(host.targets, slot.targets);
  } else {  // a device without staged uploads: copy at once
    slot.images.copy_from(host.images);
    slot.labels.copy_from(host.labels);
    if (host.targets.defined()) slot.targets.copy_from(host.targets);
  }
  slot.items = host.items;
  slot.size = host.size;
  slot.global_size = host.global_size;
}

void DeviceBatches::stage(const Batch& host) {
  if (device_.is_cpu() || host.size == 0) return;
  staged_slot_ = next_slot_;
  next_slot_ ^= 1;
  staged_host_ = &host;
  begin(host, slots_[staged_slot_]);
}

Batch& DeviceBatches::take(Batch& host) {
  if (device_.is_cpu()) return host;
  int slot = staged_slot_;
  if (staged_host_ != &host || slot < 0) {  // not staged: upload now into a free slot
    slot = next_slot_;
    next_slot_ ^= 1;
    begin(host, slots_[slot]);
  }
  DLT_CHECK(slots_[slot].size == host.size, "DeviceBatches: the staged batch is not this one");
  staged_host_ = nullptr;
  staged_slot_ = -1;
  if (AsyncDevice* dev = backend_for(device_).async_device()) dev->upload_wait();
  return slots_[slot];
}

}  // namespace dlt
