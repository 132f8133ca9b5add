// evaluateSemanticSegmentation's metrics. What is followed, from MATLAB's documentation of
// evaluateSemanticSegmentation, semanticSegmentationMetrics and bfscore:
//  - ConfusionMatrix(i, j): pixels of true class i predicted as j; pixels whose truth is
//    undefined are not counted. NormalizedConfusionMatrix: each row divided by its sum.
//  - GlobalAccuracy = correct / counted. Per class Accuracy = TP / (TP + FN) (NaN when the class
//    is not in the truth), MeanAccuracy their mean without NaN. IoU = TP / (TP + FP + FN) (NaN
//    when the class is in neither truth nor prediction), MeanIoU their mean without NaN,
//    WeightedIoU = sum over classes of (truth pixels of c) * IoU(c) / counted.
//  - bfscore: boundary F1 per image and class with the distance tolerance 0.75% of the image
//    diagonal. Boundary pixels of a class are those of its mask with a 4-neighbour outside the
//    mask, the outside of the image counting as inside (bwperim: imerode pads with 1s). A
//    boundary pixel of the prediction matches when a boundary pixel of the truth lies at a
//    Euclidean distance strictly below the tolerance (and vice versa); precision = matched
//    predicted / predicted boundary pixels, recall = matched true / true boundary pixels,
//    F1 = 2PR / (P + R), 0 when P + R = 0 or one side has no boundary while the other has;
//    1 when the class is in both maps and neither has a boundary (both cover the image).
//    NaN (left out of every mean) when the class is in neither map.
//  - dltrain's choice where MATLAB's documentation is silent: where the truth is undefined the
//    prediction is treated as undefined too, so void regions count in no metric (their edge
//    is a boundary in both maps alike).
//  - Per class MeanBFScore: the mean over images where the class has a score. The data set's
//    MeanBFScore: the mean over images of each image's mean BF score over its scored classes.
#include "train/seg_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "util/json.h"
#include "util/terminal.h"

namespace dlt {

namespace {

constexpr uint8_t kNone = 255;  // no class / undefined

// Per pixel: the class whose boundary it is on, or kNone.
void boundary_map(const uint8_t* labels, int h, int w, int k, std::vector<uint8_t>& out) {
  out.assign(size_t(h) * w, kNone);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const uint8_t c = labels[size_t(y) * w + x];
      if (c >= k) continue;
      const bool edge =
          (y > 0 && labels[size_t(y - 1) * w + x] != c) || (y + 1 < h && labels[size_t(y + 1) * w + x] != c) ||
          (x > 0 && labels[size_t(y) * w + x - 1] != c) || (x + 1 < w && labels[size_t(y) * w + x + 1] != c);
      if (edge) out[size_t(y) * w + x] = c;
    }
}

// Per class: boundary pixels of `from` that have a boundary pixel of the same class in `to`
// closer than the threshold.
void count_matches(const std::vector<uint8_t>& from, const std::vector<uint8_t>& to, int h, int w, double threshold,
                   std::vector<int64_t>& total, std::vector<int64_t>& matched) {
  const int r = std::max(0, static_cast<int>(std::ceil(threshold)));
  const double t2 = threshold * threshold;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const uint8_t c = from[size_t(y) * w + x];
      if (c == kNone) continue;
      ++total[c];
      bool found = false;
      for (int dy = -r; dy <= r && !found; ++dy) {
        const int yy = y + dy;
        if (yy < 0 || yy >= h) continue;
        for (int dx = -r; dx <= r; ++dx) {
          const int xx = x + dx;
          if (xx < 0 || xx >= w || double(dx * dx + dy * dy) >= t2) continue;
          if (to[size_t(yy) * w + xx] == c) {
            found = true;
            break;
          }
        }
      }
      matched[c] += found;
    }
}

double ratio(double a, double b) { return b > 0 ? a / b : NAN; }

}  // namespace

double default_bf_threshold(int height, int width) {
  return 0.0075 * std::sqrt(double(height) * height + double(width) * width);
}

std::vector<double> bf_scores(const uint8_t* truth, const uint8_t* predicted, int height, int width, int num_classes,
                              double threshold) {
  const size_t n = size_t(height) * width;
  const int k = num_classes;
  std::vector<uint8_t> pred(n);
  std::vector<char> in_truth(size_t(k), 0), in_pred(size_t(k), 0);
  for (size_t i = 0; i < n; ++i) {
    pred[i] = truth[i] >= k ? kNone : predicted[i];
    if (truth[i] < k) in_truth[truth[i]] = 1;
    if (pred[i] < k) in_pred[pred[i]] = 1;
  }
  std::vector<uint8_t> bt, bp;
  boundary_map(truth, height, width, k, bt);
  boundary_map(pred.data(), height, width, k, bp);
  std::vector<int64_t> nt(size_t(k), 0), mt(size_t(k), 0), np(size_t(k), 0), mp(size_t(k), 0);
  count_matches(bp, bt, height, width, threshold, np, mp);
  count_matches(bt, bp, height, width, threshold, nt, mt);
  std::vector<double> out(size_t(k), NAN);
  for (int c = 0; c < k; ++c) {
    if (!in_truth[c] && !in_pred[c]) continue;
    if (np[c] == 0 && nt[c] == 0) {
      out[c] = in_truth[c] && in_pred[c] ? 1.0 : 0.0;
      continue;
    }
    if (np[c] == 0 || nt[c] == 0) {
      out[c] = 0;
      continue;
    }
    const double p = double(mp[c]) / double(np[c]), r = double(mt[c]) / double(nt[c]);
    out[c] = p + r > 0 ? 2 * p * r / (p + r) : 0.0;
  }
  return out;
}

SegmentationMetrics::SegmentationMetrics(std::vector<std::string> class_names) : classes_(std::move(class_names)) {
  const size_t k = classes_.size();
  raw_.confusion.assign(k * k, 0);
  raw_.bf_sum.assign(k, 0);
  raw_.bf_images.assign(k, 0);
}

// Both overloads check every prediction first, so a bad one throws with nothing counted.
void SegmentationMetrics::add_pixels(const uint8_t* truth, const uint8_t* predicted, int64_t pixels) {
  const size_t k = classes_.size();
  for (int64_t i = 0; i < pixels; ++i)
    if (truth[i] < k && predicted[i] >= k)
      throw std::invalid_argument("SegmentationMetrics: predicted class " + std::to_string(predicted[i]) + " with " +
                                  std::to_string(k) + " classes");
  for (int64_t i = 0; i < pixels; ++i)
    if (truth[i] < k) ++raw_.confusion[truth[i] * k + predicted[i]];
}

void SegmentationMetrics::add_pixels(const int32_t* truth, const uint8_t* predicted, int64_t pixels) {
  const int32_t k = num_classes();
  for (int64_t i = 0; i < pixels; ++i)
    if (truth[i] >= 0 && truth[i] < k && predicted[i] >= k)
      throw std::invalid_argument("SegmentationMetrics: predicted class " + std::to_string(predicted[i]) + " with " +
                                  std::to_string(k) + " classes");
  for (int64_t i = 0; i < pixels; ++i)
    if (truth[i] >= 0 && truth[i] < k) ++raw_.confusion[size_t(truth[i]) * size_t(k) + size_t(predicted[i])];
}

void SegmentationMetrics::add(const uint8_t* truth, const uint8_t* predicted, int height, int width, double threshold) {
  add_pixels(truth, predicted, int64_t(height) * width);
  if (threshold <= 0) threshold = default_bf_threshold(height, width);
  const std::vector<double> bf = bf_scores(truth, predicted, height, width, num_classes(), threshold);
  double sum = 0;
  int64_t n = 0;
  for (size_t c = 0; c < bf.size(); ++c)
    if (!std::isnan(bf[c])) {
      raw_.bf_sum[c] += bf[c];
      ++raw_.bf_images[c];
      sum += bf[c];
      ++n;
    }
  if (n > 0) {
    raw_.image_bf_sum += sum / double(n);
    ++raw_.image_bf_images;
  }
  ++raw_.images;
}

void SegmentationMetrics::add_raw(const Raw& r) {
  const size_t k = classes_.size();
  if (r.confusion.size() != k * k || r.bf_sum.size() != k || r.bf_images.size() != k)
    throw std::invalid_argument("SegmentationMetrics: merging counts of a different number of classes");
  for (size_t i = 0; i < k * k; ++i) raw_.confusion[i] += r.confusion[i];
  for (size_t c = 0; c < k; ++c) {
    raw_.bf_sum[c] += r.bf_sum[c];
    raw_.bf_images[c] += r.bf_images[c];
  }
  raw_.image_bf_sum += r.image_bf_sum;
  raw_.image_bf_images += r.image_bf_images;
  raw_.images += r.images;
}

void SegmentationMetrics::merge(const SegmentationMetrics& other) {
  if (other.classes_ != classes_) throw std::invalid_argument("SegmentationMetrics: merging different classes");
  add_raw(other.raw_);
}

int64_t SegmentationMetrics::pixels() const {
  int64_t n = 0;
  for (int64_t v : raw_.confusion) n += v;
  return n;
}

double SegmentationMetrics::global_accuracy() const {
  int64_t right = 0;
  for (int c = 0; c < num_classes(); ++c) right += count(c, c);
  return ratio(double(right), double(pixels()));
}

std::vector<SegmentationMetrics::ClassMetrics> SegmentationMetrics::class_metrics() const {
  const int k = num_classes();
  std::vector<ClassMetrics> out;
  for (int c = 0; c < k; ++c) {
    int64_t row = 0, col = 0;
    for (int j = 0; j < k; ++j) {
      row += count(c, j);
      col += count(j, c);
    }
    const double tp = double(count(c, c));
    out.push_back(
        {ratio(tp, double(row)), ratio(tp, double(row + col) - tp), ratio(raw_.bf_sum[c], double(raw_.bf_images[c]))});
  }
  return out;
}

namespace {
double nan_mean(const std::vector<double>& v) {
  double s = 0;
  int64_t n = 0;
  for (double x : v)
    if (!std::isnan(x)) {
      s += x;
      ++n;
    }
  return n ? s / double(n) : NAN;
}
}  // namespace

double SegmentationMetrics::mean_accuracy() const {
  std::vector<double> v;
  for (const auto& m : class_metrics()) v.push_back(m.accuracy);
  return nan_mean(v);
}

double SegmentationMetrics::mean_iou() const {
  std::vector<double> v;
  for (const auto& m : class_metrics()) v.push_back(m.iou);
  return nan_mean(v);
}

double SegmentationMetrics::weighted_iou() const {
  const auto cm = class_metrics();
  double s = 0;
  for (int c = 0; c < num_classes(); ++c) {
    int64_t row = 0;
    for (int j = 0; j < num_classes(); ++j) row += count(c, j);
    if (row > 0) s += double(row) * cm[size_t(c)].iou;
  }
  return ratio(s, double(pixels()));
}

double SegmentationMetrics::mean_bf_score() const { return ratio(raw_.image_bf_sum, double(raw_.image_bf_images)); }

std::vector<std::vector<double>> SegmentationMetrics::normalized_confusion() const {
  const int k = num_classes();
  std::vector<std::vector<double>> out(size_t(k), std::vector<double>(size_t(k), NAN));
  for (int c = 0; c < k; ++c) {
    int64_t row = 0;
    for (int j = 0; j < k; ++j) row += count(c, j);
    for (int j = 0; j < k; ++j) out[size_t(c)][size_t(j)] = ratio(double(count(c, j)), double(row));
  }
  return out;
}

std::string SegmentationMetrics::json() const {
  JsonWriter j;
  j.begin_object();
  j.key("DataSetMetrics")
      .begin_object()
      .field("GlobalAccuracy", global_accuracy())
      .field("MeanAccuracy", mean_accuracy())
      .field("MeanIoU", mean_iou())
      .field("WeightedIoU", weighted_iou())
      .field("MeanBFScore", mean_bf_score())
      .field("Images", raw_.images)
      .field("Pixels", pixels())
      .end_object();
  j.key("ClassMetrics").begin_array();
  const auto cm = class_metrics();
  for (int c = 0; c < num_classes(); ++c)
    j.begin_object()
        .field("Class", classes_[size_t(c)])
        .field("Accuracy", cm[size_t(c)].accuracy)
        .field("IoU", cm[size_t(c)].iou)
        .field("MeanBFScore", cm[size_t(c)].mean_bf_score)
        .end_object();
  j.end_array();
  j.key("ConfusionMatrix").begin_array();
  for (int r = 0; r < num_classes(); ++r) {
    j.begin_array();
    for (int c = 0; c < num_classes(); ++c) j.value(count(r, c));
    j.end_array();
  }
  j.end_array();
  j.key("NormalizedConfusionMatrix").begin_array();
  for (const auto& row : normalized_confusion()) {
    j.begin_array();
    for (double v : row) j.value(v);
    j.end_array();
  }
  j.end_array();
  j.end_object();
  return j.str();
}

std::string SegmentationMetrics::report(int width) const {
  char buf[512];
  auto num = [](double v) {
    char b[32];
    if (std::isnan(v)) return std::string("-");
    std::snprintf(b, sizeof b, "%.4f", v);
    return std::string(b);
  };
  std::string out;
  std::snprintf(buf, sizeof buf, "\nData set metrics (%lld images, %lld labelled pixels)\n",
                static_cast<long long>(raw_.images), static_cast<long long>(pixels()));
  out += buf;
  std::snprintf(buf, sizeof buf, "%14s %12s %8s %11s %11s\n%14s %12s %8s %11s %11s\n", "GlobalAccuracy", "MeanAccuracy",
                "MeanIoU", "WeightedIoU", "MeanBFScore", num(global_accuracy()).c_str(), num(mean_accuracy()).c_str(),
                num(mean_iou()).c_str(), num(weighted_iou()).c_str(), num(mean_bf_score()).c_str());
  out += buf;
  size_t w = 5;
  for (const auto& c : classes_) w = std::max(w, c.size());
  std::snprintf(buf, sizeof buf, "\nClass metrics\n%-*s %8s %8s %11s\n", static_cast<int>(w), "class", "Accuracy",
                "IoU", "MeanBFScore");
  out += buf;
  const auto cm = class_metrics();
  for (int c = 0; c < num_classes(); ++c) {
    std::snprintf(buf, sizeof buf, "%-*s %8s %8s %11s\n", static_cast<int>(w), classes_[size_t(c)].c_str(),
                  num(cm[size_t(c)].accuracy).c_str(), num(cm[size_t(c)].iou).c_str(),
                  num(cm[size_t(c)].mean_bf_score).c_str());
    out += buf;
  }
  // The normalized matrix: class names over the columns when they fit, else the row numbers.
  const size_t k = classes_.size();
  if (width <= 0) width = terminal_columns(stdout);
  size_t longest = 6;
  for (const auto& c : classes_) longest = std::max(longest, c.size());
  const bool names = w + k * (longest + 1) <= static_cast<size_t>(width);
  const size_t num_w = std::to_string(k).size(), cw = names ? longest : 6;
  const size_t label_w = names ? w : num_w + 1 + w;
  out += names ? "\nNormalized confusion matrix (rows: true class, columns: predicted)\n"
               : "\nNormalized confusion matrix (rows: true class, columns: predicted, numbered as the rows)\n";
  out += std::string(label_w, ' ');
  for (size_t c = 0; c < k; ++c) {
    std::string head = names ? classes_[c] : std::to_string(c + 1);
    out += " " + std::string(cw - std::min(cw, head.size()), ' ') + head;
  }
  out += "\n";
  const auto nm = normalized_confusion();
  for (size_t r = 0; r < k; ++r) {
    if (names)
      std::snprintf(buf, sizeof buf, "%-*s", static_cast<int>(w), classes_[r].c_str());
    else
      std::snprintf(buf, sizeof buf, "%*zu %-*s", static_cast<int>(num_w), r + 1, static_cast<int>(w),
                    classes_[r].c_str());
    out += buf;
    for (double v : nm[r]) {
      std::string s = num(v);
      out += " " + std::string(cw - std::min(cw, s.size()), ' ') + s;
    }
    out += "\n";
  }
  return out;
}

}  // namespace dlt
