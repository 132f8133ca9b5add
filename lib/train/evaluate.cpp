// evaluate (evaluate.h): the validation pass, its sums all-reduced over the ranks.
#include "train/evaluate.h"

#include "backend/backend.h"
#include "data/label_images.h"
#include "train/seg_metrics.h"

namespace dlt {

Evaluation evaluate(TrainingRun& run) {
  Evaluation e;
  if (!run.validation_loader) return e;
  Network& net = *run.net;
  Communicator& comm = *run.comm;
  RunContext ctx;
  ctx.training = false;
  double loss_sum = 0;
  int64_t correct_sum = 0, count = 0, images = 0;
  const bool pixels = net.per_pixel();
  SegmentationMetrics seg(pixels ? net.classes() : std::vector<std::string>{});
  Image predicted;  // (N * H, W): each pixel's first class of maximal probability (argmax_classes)
  Batch b;
  run.validation_loader->start_epoch(0);
  while (run.validation_loader->next(b)) {
    if (b.size == 0) continue;
    if (b.size != net.batch()) net.set_batch(b.size);
    Batch& on_device = run.validation_batches->take(b);
    const Tensor& probs = net.forward(on_device.images, ctx);
    if (pixels) {
      const Tensor host = probs.device().is_cpu() ? probs : probs.to(Device::cpu());  // a CPU output is not copied
      const Shape& in = net.input_shape();
      argmax_classes(host.data(), static_cast<int>(b.size * in[0]), static_cast<int>(in[1]),
                     static_cast<int>(net.num_classes()), predicted);
      seg.add_pixels(b.labels.data_i32(), predicted.pixels.data(), b.labels.numel());
    }
    int64_t correct = 0, counted = 0;
    loss_sum += net.loss_and_backward(on_device.labels, ctx, false, &correct, &counted) * static_cast<double>(b.size);
    correct_sum += correct;
    count += counted;
    images += b.size;
  }
  std::vector<double> sums = {loss_sum, static_cast<double>(correct_sum), static_cast<double>(count),
                              static_cast<double>(images)};
  if (pixels) sums.insert(sums.end(), seg.raw().confusion.begin(), seg.raw().confusion.end());  // exact in double
  if (comm.size() > 1) {  // each rank validated its share
    comm.all_reduce_sum(sums.data(), sums.size());
    loss_sum = sums[0];
    correct_sum = static_cast<int64_t>(sums[1]);
    count = static_cast<int64_t>(sums[2]);
    images = static_cast<int64_t>(sums[3]);
    if (pixels) {
      SegmentationMetrics::Raw all;
      for (size_t i = 4; i < sums.size(); ++i) all.confusion.push_back(static_cast<int64_t>(sums[i]));
      all.bf_sum.assign(net.classes().size(), 0);
      all.bf_images.assign(net.classes().size(), 0);
      seg = SegmentationMetrics(net.classes());
      seg.add_raw(all);
    }
  }
  if (count > 0) {
    e.loss = loss_sum / static_cast<double>(images);
    e.accuracy = 100.0 * static_cast<double>(correct_sum) / static_cast<double>(count);
  }
  if (pixels) e.mean_iou = seg.mean_iou();
  return e;
}

}  // namespace dlt
