// countEachLabel over label images, and median-frequency class weights.
#include "train/class_weights.h"

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "data/decode.h"
#include "util/error.h"
#include "util/log.h"
#include "util/numbers.h"
#include "util/strings.h"
#include "util/thread_pool.h"
#include "util/timer.h"

namespace dlt {

PixelLabelCounts count_each_pixel_label(const ImageDatastore& ds, int threads) {
  const size_t k = ds.classes().size();
  PixelLabelCounts total{std::vector<int64_t>(k, 0), std::vector<int64_t>(k, 0)};
  std::mutex mu;
  ThreadPool pool(threads, "dlt-labels");
  pool.parallel_for(ds.size(), [&](int64_t i, int) {
    Image labels;
    ds.pixel_ids().decode(ds.label_path(i), labels);
    int h = 0, w = 0;  // the image's header only: a size mismatch stops the run before it starts
    image_size(ds.path(i), h, w);
    if (labels.height != h || labels.width != w)
      throw DataError(ds.label_path(i) + ": label image is " + std::to_string(labels.height) + "x" +
                      std::to_string(labels.width) + " but its image " + ds.path(i) + " is " + std::to_string(h) + "x" +
                      std::to_string(w) + " (they must match)");
    std::vector<int64_t> count(k + 1, 0);  // the last: undefined
    for (uint8_t v : labels.pixels) ++count[v == kUndefinedPixel ? k : v];
    const int64_t pixels = int64_t(labels.height) * labels.width;
    std::lock_guard<std::mutex> lock(mu);
    total.undefined += count[k];
    total.total += pixels;
    for (size_t c = 0; c < k; ++c) {
      total.pixel_count[c] += count[c];
      if (count[c] > 0) total.image_pixel_count[c] += pixels;
    }
  });
  return total;
}

std::vector<double> median_frequency_weights(const PixelLabelCounts& counts, std::vector<std::string>* absent,
                                             const std::vector<std::string>& classes) {
  const size_t k = counts.pixel_count.size();
  std::vector<double> freq(k, 0), present;
  for (size_t c = 0; c < k; ++c) {
    if (counts.pixel_count[c] == 0) {
      if (absent) absent->push_back(classes.at(c));
      continue;
    }
    freq[c] = double(counts.pixel_count[c]) / double(counts.image_pixel_count[c]);
    present.push_back(freq[c]);
  }
  std::vector<double> w(k, 0);
  if (present.empty()) return w;
  std::sort(present.begin(), present.end());
  const size_t m = present.size();
  const double median = m % 2 ? present[m / 2] : (present[m / 2 - 1] + present[m / 2]) / 2;  // MATLAB's median
  for (size_t c = 0; c < k; ++c)
    if (freq[c] > 0) w[c] = median / freq[c];
  return w;
}

void prepare_pixel_labels(Config& config) {
  std::vector<LayerSpec*> asking;
  for (LayerSpec& spec : config.network.layers) {
    const SpecValue* v = spec.has("ClassWeights") ? &spec.options.at("ClassWeights") : nullptr;
    if (v && !v->is_list && v->items.size() == 1 && iequals(v->items[0], "median-frequency")) asking.push_back(&spec);
  }
  if (!asking.empty() && !config.data.segmentation())
    throw ConfigError(asking[0]->where() +
                      "ClassWeights: median-frequency needs pixel-label training data "
                      "(data.train: {images: DIR, labels: DIR})");
  if (!config.data.segmentation()) return;
  Timer t;
  const TrainValData data = load_train_val(config.data, config.training.seed);
  const PixelLabelCounts counts = count_each_pixel_label(data.train, static_cast<int>(config.data.loader_threads));
  const double undefined = counts.total ? double(counts.undefined) / double(counts.total) : 0;
  log::info("countEachLabel: {} training label images, {:.1f}% of their pixels undefined ({:.1f} s)", data.train.size(),
            100 * undefined, t.seconds());
  if (undefined > 0.5)
    log::warn(
        "{:.0f}% of the training label pixels have a value in no class of data.LabelIDs: check that "
        "LabelIDs match the label images (integers for grey / index PNGs, [r, g, b] for colour ones)",
        100 * undefined);
  std::vector<std::string> absent;
  const std::vector<double> w = median_frequency_weights(counts, &absent, data.train.classes());
  if (!absent.empty())
    log::warn("classes with no pixel in the training labels{}: {}", asking.empty() ? "" : " (weight 0)",
              join(absent, ", "));
  if (asking.empty()) return;
  std::string list;
  std::vector<std::string> items;
  for (size_t c = 0; c < w.size(); ++c) {
    char text[32];  // six significant digits: what the layer then reads, so log, config and model agree
    std::snprintf(text, sizeof text, "%.6g", w[c]);
    items.push_back(text);
    list += (c ? ", " : "") + items.back();
  }
  for (LayerSpec* spec : asking) {  // a list where the word was, at its place in the file
    SpecValue& v = spec->options.at("ClassWeights");
    v.items = items;
    v.is_list = true;
  }
  log::info("ClassWeights: median-frequency: [{}]", list);
}

}  // namespace dlt
