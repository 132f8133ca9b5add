// Semantic-segmentation metrics (MATLAB's evaluateSemanticSegmentation) accumulated image by
// image: a confusion matrix over the pixels whose truth is defined, and per-image boundary F1
// (bfscore) sums, so a large set needs no memory per pixel and two accumulators (two ranks,
// two halves of a set) merge exactly. Class maps are 8-bit class indices, row-major (H, W),
// kUndefinedPixel (data/pixel_labels.h) where the truth is undefined. No decoding, no I/O.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlt {

// bfscore's distance tolerance for an image: 0.75% of its diagonal (MATLAB's default).
double default_bf_threshold(int height, int width);

// Boundary F1 score of each class 0..K-1 for one image (MATLAB's bfscore on label images).
// NaN for a class in neither map. See seg_metrics.cpp for the definition followed.
std::vector<double> bf_scores(const uint8_t* truth, const uint8_t* predicted, int height, int width, int num_classes,
                              double threshold);

class SegmentationMetrics {
 public:
  explicit SegmentationMetrics(std::vector<std::string> class_names);

  // One image: confusion counts and the BF scores (threshold <= 0: default_bf_threshold).
  // Predicted values must be < K; a truth value >= K (kUndefinedPixel) is undefined: the pixel
  // counts nowhere, and the prediction there is ignored by the BF score too.
  void add(const uint8_t* truth, const uint8_t* predicted, int height, int width, double threshold = 0);
  // Confusion counts only (no BF score): what validation mean IoU needs, cheap per batch.
  void add_pixels(const uint8_t* truth, const uint8_t* predicted, int64_t pixels);
  // The same for the trainer's int32 label tensors: truth < 0 or >= K is undefined (-1 is the
  // loss's undefined label); predicted (argmax_classes' output) must be in 0..K-1.
  void add_pixels(const int32_t* truth, const uint8_t* predicted, int64_t pixels);
  // Adds another accumulator's counts (same classes; throws std::invalid_argument otherwise).
  void merge(const SegmentationMetrics& other);

  // The raw state, e.g. to all-reduce across ranks: confusion (K*K, row-major; rows: true
  // class, columns: predicted), per class the sum of BF scores and the images that have one,
  // the sum of per-image mean BF scores and the images that have one. from_raw adds them.
  struct Raw {
    std::vector<int64_t> confusion;
    std::vector<double> bf_sum;
    std::vector<int64_t> bf_images;
    double image_bf_sum = 0;
    int64_t image_bf_images = 0;
    int64_t images = 0;
  };
  const Raw& raw() const { return raw_; }
  void add_raw(const Raw& raw);

  const std::vector<std::string>& class_names() const { return classes_; }
  int num_classes() const { return static_cast<int>(classes_.size()); }
  int64_t images() const { return raw_.images; }
  int64_t count(int truth, int predicted) const { return raw_.confusion[size_t(truth) * classes_.size() + predicted]; }
  int64_t pixels() const;  // counted (defined) pixels

  // Fractions in [0, 1] as MATLAB reports them; NaN when nothing defines them.
  double global_accuracy() const;  // correct / counted pixels
  double mean_accuracy() const;    // mean of per-class recall over classes present in the truth
  double mean_iou() const;         // mean IoU over classes present in truth or prediction
  double weighted_iou() const;     // IoU weighted by each class's truth pixels
  double mean_bf_score() const;    // mean over images of each image's mean BF score
  struct ClassMetrics {
    double accuracy, iou, mean_bf_score;  // NaN where undefined
  };
  std::vector<ClassMetrics> class_metrics() const;
  // Each row divided by its sum (the class's truth pixels); a row of NaN for an absent class.
  std::vector<std::vector<double>> normalized_confusion() const;

  std::string json() const;                 // {"DataSetMetrics": {...}, "ClassMetrics": [...], ...}; NaN -> null
  std::string report(int width = 0) const;  // MATLAB's tables as text

 private:
  std::vector<std::string> classes_;
  Raw raw_;
};

}  // namespace dlt
