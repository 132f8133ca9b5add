// Classification results: predictions per image, and when the true labels are known,
// accuracy, the confusion matrix (rows: true class, columns: predicted) and per-class
// precision and recall. Formats them as CSV, JSON and a text report. Units as in MATLAB and in
// training's metrics: accuracy in percent, precision and recall as fractions 0..1.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlt {

struct Prediction {
  std::string path;
  int32_t truth = -1;  // -1: unknown
  int32_t label = 0;
  float score = 0;
  std::vector<std::pair<int32_t, float>> top;  // best first
};

class Predictions {
 public:
  std::vector<std::string> classes;
  int top = 1;
  bool labelled = false;  // every image has a known true class

  void add(const std::string& path, int32_t truth, const std::vector<float>& probs);
  const std::vector<Prediction>& items() const { return items_; }

  double accuracy() const;  // percent
  std::vector<std::vector<int64_t>> confusion() const;
  struct ClassStats {
    double precision, recall;  // fractions 0..1; NaN when undefined
    int64_t support;
  };
  std::vector<ClassStats> per_class() const;

  std::string csv() const;
  std::string json() const;
  // Accuracy, per-class table and confusion matrix (labelled only), for `width` columns (0: the
  // width of stdout, terminal_columns). The matrix's columns carry the full class names when
  // that fits the width, else the class numbers that also start its rows.
  std::string report(int width = 0) const;

 private:
  std::vector<Prediction> items_;
};

}  // namespace dlt
