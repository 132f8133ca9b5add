// for_each_output: the batched inference loop of classify and predict (image_outputs.h).
#include "image_outputs.h"

#include "config/config.h"
#include "data/batch_loader.h"
#include "data/datastore.h"
#include "train/device_batches.h"

namespace dlt::app {

void for_each_output(Network& net, const std::vector<std::string>& files, int64_t batch,
                     const std::function<void(size_t i, const float* row, int64_t width)>& each) {
  ImageDatastore ds = ImageDatastore::from_lists(files, std::vector<int32_t>(files.size(), 0), net.classes());
  DataOptions data;
  TrainingOptions training;
  training.mini_batch_size = batch;
  training.shuffle = Shuffle::kNever;
  LoaderOptions lo = loader_options(data, training, net.input_shape(), false);
  lo.cache = Cache::kNone;
  BatchLoader loader(ds, lo);
  loader.start_epoch(0);

  const Device dev = net.device();
  RunContext ctx;
  Batch b;
  DeviceBatches on_device(dev);
  Tensor host;  // the output on the host (reused)
  while (loader.next(b)) {
    if (b.size == 0) continue;
    if (b.size != net.batch()) net.set_batch(b.size);
    const Tensor& out = net.forward(on_device.take(b).images, ctx);
    if (!dev.is_cpu()) {
      if (!host.defined()) host = Tensor(out.shape());
      host.resize(out.shape());
      host.copy_from(out);
    }
    const Tensor& values = dev.is_cpu() ? out : host;
    const int64_t width = values.numel() / values.shape()[0];  // (N, H, W, C): H * W * C per image
    for (int64_t i = 0; i < b.size; ++i) each(static_cast<size_t>(b.items[i]), values.data() + i * width, width);
  }
}

}  // namespace dlt::app
