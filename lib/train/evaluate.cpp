// evaluate (evaluate.h): the validation pass, its sums all-reduced over the ranks.
#include "train/evaluate.h"

#include <algorithm>
#include <limits>

#include "backend/backend.h"
#include "data/label_images.h"
#include "train/seg_metrics.h"
#include "train/targets.h"
#include "train/validation_metrics.h"

namespace dlt {

namespace {

// Every rank's `mine` concatenated in rank order, on every rank (two all-reduces of doubles,
// exact for float scores and class indices).
std::vector<double> gather(Communicator& comm, const std::vector<double>& mine) {
  if (comm.size() <= 1) return mine;
  std::vector<double> counts(static_cast<size_t>(comm.size()), 0.0);
  counts[static_cast<size_t>(comm.rank())] = static_cast<double>(mine.size());
  comm.all_reduce_sum(counts.data(), counts.size());
  size_t offset = 0, total = 0;
  for (int r = 0; r < comm.size(); ++r) {
    if (r < comm.rank()) offset += static_cast<size_t>(counts[size_t(r)]);
    total += static_cast<size_t>(counts[size_t(r)]);
  }
  std::vector<double> all(total, 0.0);
  std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(offset));
  comm.all_reduce_sum(all.data(), all.size());
  return all;
}

}  // namespace

// Regression and multi-label (float targets): the loss, the headline (RMSE in the responses'
// units, or micro F1) and the Metrics option's values, from sums all-reduced over the ranks.
Evaluation evaluate_targets(TrainingRun& run) {
  Evaluation e;
  Network& net = *run.net;
  RunContext ctx;
  ctx.training = false;
  const bool regression = net.task() == "regression";
  RegressionSums errors;
  double loss_sum = 0, images = 0, tp = 0, fp = 0, fn = 0;
  Batch b;
  run.validation_loader->start_epoch(0);
  while (run.validation_loader->next(b)) {
    if (b.size == 0) continue;
    normalize_targets(net, b);
    if (b.size != net.batch()) net.set_batch(b.size);
    Batch& on_device = run.validation_batches->take(b);
    const Tensor& out = net.forward(on_device.images, ctx);
    net.loss_and_backward_async(on_device.targets, ctx, false);
    const LossTotals t = net.read_loss_totals();
    loss_sum += t.loss_sum * static_cast<double>(b.size);
    images += static_cast<double>(b.size);
    tp += static_cast<double>(t.tp);
    fp += static_cast<double>(t.fp);
    fn += static_cast<double>(t.fn);
    if (regression) errors.add(net, out, b);
  }
  std::vector<double> sums = {
      loss_sum, images, tp, fp, fn, errors.squared, errors.absolute, errors.percentage, errors.values, errors.nonzero};
  if (run.comm->size() > 1) run.comm->all_reduce_sum(sums.data(), sums.size());
  if (sums[1] <= 0) return e;
  e.loss = sums[0] / sums[1];
  tp = sums[2], fp = sums[3], fn = sums[4];
  errors.squared = sums[5], errors.absolute = sums[6], errors.percentage = sums[7];
  errors.values = sums[8], errors.nonzero = sums[9];
  // Multi-label, micro over every (image, label): 0/0 counts as 0 (validation_metrics.h).
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  e.accuracy = regression ? errors.rmse() : ratio(2 * tp, 2 * tp + fp + fn);
  for (Metric m : run.options.metrics) {
    if (m == Metric::kLoss) continue;  // the record's validation_loss
    double v = std::numeric_limits<double>::quiet_NaN();
    switch (m) {
      case Metric::kRmse:
        v = errors.rmse();
        break;
      case Metric::kMae:
        v = errors.mae();
        break;
      case Metric::kMape:
        v = errors.mape();
        break;
      case Metric::kFScore:
        v = ratio(2 * tp, 2 * tp + fp + fn);
        break;
      case Metric::kPrecision:
        v = ratio(tp, tp + fp);
        break;
      case Metric::kRecall:
        v = ratio(tp, tp + fn);
        break;
      case Metric::kIoU:
        v = ratio(tp, tp + fp + fn);
        break;
      default:
        break;
    }
    e.metrics.emplace_back(metric_name(m), v);
  }
  return e;
}

Evaluation evaluate(TrainingRun& run) {
  Evaluation e;
  if (!run.validation_loader) return e;
  if (run.net->float_targets()) return evaluate_targets(run);
  Network& net = *run.net;
  Communicator& comm = *run.comm;
  RunContext ctx;
  ctx.training = false;
  double loss_sum = 0;
  int64_t correct_sum = 0, count = 0, images = 0;
  const bool pixels = net.per_pixel();
  SegmentationMetrics seg(pixels ? net.classes() : std::vector<std::string>{});
  Image predicted;  // (N * H, W): each pixel's first class of maximal probability (argmax_classes)
  // Metrics: classification's confusion matrix (each image's first class of maximal
  // probability) and, for auc, each image's truth and K scores.
  const std::vector<Metric>& metrics = run.options.metrics;
  const int k = static_cast<int>(net.num_classes());
  const bool want_confusion = !pixels && !metrics.empty();
  const bool want_scores = !pixels && std::find(metrics.begin(), metrics.end(), Metric::kAuc) != metrics.end();
  ConfusionMatrix confusion(k);
  std::vector<double> scored;  // per image: truth, then K scores
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
    } else if (want_confusion) {
      const Tensor host = probs.device().is_cpu() ? probs : probs.to(Device::cpu());
      const int32_t* truth = b.labels.data_i32();
      for (int64_t i = 0; i < b.size; ++i) {
        const float* p = host.data() + i * k;
        const int best = static_cast<int>(std::max_element(p, p + k) - p);
        confusion.add(truth[i], best);
        if (want_scores) {
          scored.push_back(truth[i]);
          scored.insert(scored.end(), p, p + k);
        }
      }
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
  const size_t confusion_at = sums.size();
  if (want_confusion) sums.insert(sums.end(), confusion.counts().begin(), confusion.counts().end());
  if (comm.size() > 1) {  // each rank validated its share
    comm.all_reduce_sum(sums.data(), sums.size());
    loss_sum = sums[0];
    correct_sum = static_cast<int64_t>(sums[1]);
    count = static_cast<int64_t>(sums[2]);
    images = static_cast<int64_t>(sums[3]);
    if (want_confusion) {
      std::vector<int64_t> counts;
      for (size_t i = confusion_at; i < sums.size(); ++i) counts.push_back(static_cast<int64_t>(sums[i]));
      confusion.set_counts(std::move(counts));
    }
    if (pixels) {
      SegmentationMetrics::Raw all;
      for (size_t i = 4; i < confusion_at; ++i) all.confusion.push_back(static_cast<int64_t>(sums[i]));
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
  if (!metrics.empty()) {
    if (pixels) confusion.set_counts(seg.raw().confusion);  // over the defined pixels
    std::vector<int32_t> truth;
    std::vector<float> scores;
    if (want_scores) {
      const std::vector<double> all = gather(comm, scored);
      for (size_t at = 0; at + size_t(k) < all.size() + 1; at += size_t(k) + 1) {
        truth.push_back(static_cast<int32_t>(all[at]));
        for (int c = 0; c < k; ++c) scores.push_back(static_cast<float>(all[at + 1 + size_t(c)]));
      }
    }
    e.metrics = metric_values(metrics, confusion, e.accuracy, truth, scores);
  }
  return e;
}

}  // namespace dlt
