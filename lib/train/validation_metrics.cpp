#include "train/validation_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace dlt {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The mean over the classes in the truth or the predictions of f(tp, fp, fn), NaN for none.
template <class F>
double macro(const ConfusionMatrix& c, F f) {
  const int k = c.num_classes();
  double sum = 0;
  int classes = 0;
  for (int i = 0; i < k; ++i) {
    int64_t row = 0, col = 0;
    for (int j = 0; j < k; ++j) {
      row += c.count(i, j);
      col += c.count(j, i);
    }
    if (row == 0 && col == 0) continue;
    const double tp = static_cast<double>(c.count(i, i));
    sum += f(tp, static_cast<double>(col) - tp, static_cast<double>(row) - tp);
    ++classes;
  }
  return classes > 0 ? sum / classes : kNaN;
}

// a / b, 0 for 0 / 0 (zero_division=0).
double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

}  // namespace

void ConfusionMatrix::set_counts(std::vector<int64_t> counts) {
  if (counts.size() != counts_.size())
    throw std::invalid_argument("ConfusionMatrix::set_counts: " + std::to_string(counts.size()) + " counts for " +
                                std::to_string(k_) + " classes");
  counts_ = std::move(counts);
}

int64_t ConfusionMatrix::total() const { return std::accumulate(counts_.begin(), counts_.end(), int64_t{0}); }

double ConfusionMatrix::accuracy() const {
  const int64_t n = total();
  if (n == 0) return kNaN;
  int64_t right = 0;
  for (int i = 0; i < k_; ++i) right += count(i, i);
  return 100.0 * static_cast<double>(right) / static_cast<double>(n);
}

double ConfusionMatrix::macro_precision() const {
  return macro(*this, [](double tp, double fp, double) { return ratio(tp, tp + fp); });
}

double ConfusionMatrix::macro_recall() const {
  return macro(*this, [](double tp, double, double fn) { return ratio(tp, tp + fn); });
}

double ConfusionMatrix::macro_fscore() const {
  return macro(*this, [](double tp, double fp, double fn) { return ratio(2 * tp, 2 * tp + fp + fn); });
}

double ConfusionMatrix::mean_iou() const {
  return macro(*this, [](double tp, double fp, double fn) { return ratio(tp, tp + fp + fn); });
}

// The Mann-Whitney form of the area under the ROC curve: the fraction of (positive, negative)
// pairs the score orders right, a tie counting half, which equals the trapezoidal area that
// scikit-learn's roc_curve + auc compute. Ranks averaged over ties, in double precision.
double roc_auc(const std::vector<bool>& positive, const std::vector<float>& score) {
  const size_t n = score.size();
  if (positive.size() != n) throw std::invalid_argument("roc_auc: labels and scores differ in length");
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] < score[b]; });
  double positive_rank_sum = 0;
  int64_t positives = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && score[order[j]] == score[order[i]]) ++j;
    const double rank = 0.5 * static_cast<double>(i + 1 + j);  // mean of ranks i+1 .. j
    for (size_t t = i; t < j; ++t)
      if (positive[order[t]]) {
        positive_rank_sum += rank;
        ++positives;
      }
    i = j;
  }
  const int64_t negatives = static_cast<int64_t>(n) - positives;
  if (positives == 0 || negatives == 0) return kNaN;
  const double p = static_cast<double>(positives), q = static_cast<double>(negatives);
  return (positive_rank_sum - p * (p + 1) / 2) / (p * q);
}

double macro_auc(const std::vector<int32_t>& truth, const std::vector<float>& scores, int num_classes) {
  const size_t n = truth.size();
  if (scores.size() != n * static_cast<size_t>(num_classes))
    throw std::invalid_argument("macro_auc: " + std::to_string(scores.size()) + " scores for " + std::to_string(n) +
                                " items of " + std::to_string(num_classes) + " classes");
  double sum = 0;
  int classes = 0;
  std::vector<bool> positive(n);
  std::vector<float> column(n);
  for (int k = 0; k < num_classes; ++k) {
    for (size_t i = 0; i < n; ++i) {
      positive[i] = truth[i] == k;
      column[i] = scores[i * static_cast<size_t>(num_classes) + static_cast<size_t>(k)];
    }
    const double a = roc_auc(positive, column);
    if (std::isnan(a)) continue;
    sum += a;
    ++classes;
  }
  return classes > 0 ? sum / classes : kNaN;
}

std::vector<std::pair<std::string, double>> metric_values(const std::vector<Metric>& metrics,
                                                          const ConfusionMatrix& confusion, double accuracy_percent,
                                                          const std::vector<int32_t>& truth,
                                                          const std::vector<float>& scores) {
  std::vector<std::pair<std::string, double>> out;
  for (Metric m : metrics) {
    double v = kNaN;
    switch (m) {
      case Metric::kLoss:
        continue;  // the record's validation_loss
      case Metric::kAccuracy:
        v = accuracy_percent;
        break;
      case Metric::kFScore:
        v = confusion.macro_fscore();
        break;
      case Metric::kPrecision:
        v = confusion.macro_precision();
        break;
      case Metric::kRecall:
        v = confusion.macro_recall();
        break;
      case Metric::kIoU:
        v = confusion.mean_iou();
        break;
      case Metric::kAuc:
        if (!scores.empty()) v = macro_auc(truth, scores, confusion.num_classes());
        break;
      case Metric::kRmse:
      case Metric::kMae:
      case Metric::kMape:
        break;  // regression's (train/evaluate.cpp); refused for classification before training
    }
    out.emplace_back(metric_name(m), v);
  }
  return out;
}

}  // namespace dlt
