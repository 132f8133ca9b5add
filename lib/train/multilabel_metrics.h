// Multi-label results for `dltrain classify` on a multi-label model: the labels whose probability
// reaches a threshold per image and, when the true label sets are known, per label precision,
// recall, F1, average precision and support, and over all labels the micro F1, the Jaccard index,
// the mean average precision and the exact-match ratio (definitions: docs/matlab.md, "Regression
// and multi-label"). Formats them as CSV, JSON and a text report, as Predictions (metrics.h) does
// for single-label classification. Host only; fractions 0..1 throughout.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlt {

// scikit-learn's average_precision_score for one label: with the distinct scores as thresholds
// from the highest down, the sum of (R_n - R_{n-1}) P_n (R_0 = 0) of the recall and precision
// of "score >= threshold". NaN when no truth is 1. scores and truth have the same size.
double average_precision(const std::vector<float>& scores, const std::vector<uint8_t>& truth);

struct LabelStats {
  double precision, recall, f1;  // at the threshold; NaN when 0/0
  double average_precision;      // over the scores; NaN without a true image
  int64_t support;               // images whose truth has the label
  int64_t predicted;             // images predicted to have it
};

class MultiLabelPredictions {
 public:
  MultiLabelPredictions(std::vector<std::string> classes, float threshold = 0.5f);

  // probs: one probability per class; truth: one 0/1 per class, or empty when unknown.
  // Throws std::invalid_argument on a count that is not the number of classes.
  void add(const std::string& path, const std::vector<float>& probs, const std::vector<uint8_t>& truth = {});

  const std::vector<std::string>& classes() const { return classes_; }
  float threshold() const { return threshold_; }
  size_t size() const { return paths_.size(); }
  // The classes whose probability is >= the threshold, in class order.
  std::vector<int32_t> labels(size_t i) const;
  // Some images were added and every one with its true labels.
  bool labelled() const;

  // Over the images with truth.
  std::vector<LabelStats> per_label() const;
  // TP / (TP + (FP + FN) / 2) over every image and label (micro F1; MATLAB's example F1Score).
  double f1_micro() const;
  // The mean over images of |predicted and true| / |predicted or true|, 1 for an image with
  // neither (MATLAB's example jaccardIndex; scikit-learn jaccard_score average="samples").
  double jaccard() const;
  // The mean of average_precision over the labels with a true image.
  double mean_average_precision() const;
  // The fraction of images whose predicted label set is exactly the true one.
  double exact_match() const;

  // path, labels (";"-separated), true_labels (labelled), then score_<class> per class.
  std::string csv() const;
  std::string json() const;
  // Per label table and the overall metrics (labelled only; "" otherwise).
  std::string report() const;

 private:
  bool on(size_t i, size_t c) const { return probs_[i][c] >= threshold_; }
  std::string label_list(size_t i, bool truth) const;
  std::vector<std::string> classes_;
  float threshold_;
  std::vector<std::string> paths_;
  std::vector<std::vector<float>> probs_;    // (images, C)
  std::vector<std::vector<uint8_t>> truth_;  // (images, C); a row empty when unknown
};

}  // namespace dlt
