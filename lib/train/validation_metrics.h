// The validation metrics of the Metrics option, from a confusion matrix (rows: true class,
// columns: predicted; K x K, row-major) and, for auc, every image's class scores. Definitions
// are scikit-learn's for a call without `labels` (docs/config.md "Metrics"):
// - the classes averaged over are those in the truth or the predictions (a class in neither
//   counts nowhere), each with equal weight (average="macro");
// - a per-class value that is 0/0 counts as 0 (zero_division=0, scikit-learn's default):
//   precision of a class never predicted, recall of a class never true;
// - fscore per class is 2 TP / (2 TP + FP + FN), the mean of those (not F of the means);
// - iou per class is TP / (TP + FP + FN) (jaccard_score; segmentation's mean IoU);
// - auc is one-vs-rest ROC AUC per class from its score column, ties counted half
//   (roc_auc_score's trapezoids), averaged over the classes with both positive and negative
//   images (a class absent from the truth has none and is left out).
// A metric with no class to average over is NaN. No I/O, no devices.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/options.h"

namespace dlt {

// Counts of (true class, predicted class); rows: true class.
class ConfusionMatrix {
 public:
  explicit ConfusionMatrix(int num_classes = 0) : k_(num_classes), counts_(size_t(num_classes) * num_classes, 0) {}
  int num_classes() const { return k_; }
  void add(int truth, int predicted, int64_t n = 1) { counts_[size_t(truth) * k_ + predicted] += n; }
  int64_t count(int truth, int predicted) const { return counts_[size_t(truth) * k_ + predicted]; }
  // Row-major K*K counts (e.g. to all-reduce across ranks), and replacing them.
  const std::vector<int64_t>& counts() const { return counts_; }
  void set_counts(std::vector<int64_t> counts);  // throws std::invalid_argument unless K*K
  int64_t total() const;

  double accuracy() const;  // percent of the counted items on the diagonal
  double macro_precision() const;
  double macro_recall() const;
  double macro_fscore() const;
  double mean_iou() const;

 private:
  int k_;
  std::vector<int64_t> counts_;
};

// One-vs-rest ROC AUC of one class: `positive[i]` whether item i is of the class, `score[i]`
// its score for it. NaN without both positive and negative items.
double roc_auc(const std::vector<bool>& positive, const std::vector<float>& score);
// Macro one-vs-rest AUC: truth (n) class indices, scores (n, K) row-major.
double macro_auc(const std::vector<int32_t>& truth, const std::vector<float>& scores, int num_classes);

// The values of `metrics` in their order, named by metric_name: accuracy (percent) from
// `accuracy_percent` (the loss layer's count, which the table already shows), the others from
// the matrix; auc from truth and scores (NaN when scores is empty).
std::vector<std::pair<std::string, double>> metric_values(const std::vector<Metric>& metrics,
                                                          const ConfusionMatrix& confusion, double accuracy_percent,
                                                          const std::vector<int32_t>& truth,
                                                          const std::vector<float>& scores);

}  // namespace dlt
