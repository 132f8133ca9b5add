// evaluateSemanticSegmentation's metrics against values computed by hand (in the comments).
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "data/pixel_labels.h"
#include "train/seg_metrics.h"

using namespace dlt;

namespace {
constexpr uint8_t U = kUndefinedPixel;
using Approx = Catch::Detail::Approx;
}  // namespace

TEST_CASE("seg metrics: confusion, accuracies and IoU by hand, undefined pixels left out", "[seg_metrics]") {
  // truth        pred
  // 0 0 1 1      0 1 1 1
  // 0 U 2 1      0 2 2 0
  // The U pixel counts nowhere (its prediction 2 is no false positive of class 2).
  // (t, p) pairs: (0,0) (0,1) (1,1) (1,1) (0,0) (2,2) (1,0): 7 pixels, 5 right.
  // Confusion rows: t0 [2 1 0], t1 [1 2 0], t2 [0 0 1]; class 3 never occurs.
  const std::vector<uint8_t> truth = {0, 0, 1, 1, 0, U, 2, 1};
  const std::vector<uint8_t> pred = {0, 1, 1, 1, 0, 2, 2, 0};
  SegmentationMetrics m({"a", "b", "c", "sky"});
  m.add(truth.data(), pred.data(), 2, 4);
  CHECK(m.pixels() == 7);
  CHECK(m.images() == 1);
  CHECK(m.count(0, 0) == 2);
  CHECK(m.count(0, 1) == 1);
  CHECK(m.count(1, 0) == 1);
  CHECK(m.count(1, 1) == 2);
  CHECK(m.count(2, 2) == 1);
  CHECK(m.count(2, 1) == 0);
  CHECK(m.global_accuracy() == Approx(5.0 / 7));
  auto cm = m.class_metrics();
  CHECK(cm[0].accuracy == Approx(2.0 / 3));
  CHECK(cm[1].accuracy == Approx(2.0 / 3));
  CHECK(cm[2].accuracy == Approx(1.0));
  CHECK(std::isnan(cm[3].accuracy));  // absent from the truth: left out of the mean
  // IoU: a: TP 2, FP 1 (a b predicted a), FN 1 -> 2/4; b the same; c: 1/1; sky: NaN.
  CHECK(cm[0].iou == Approx(0.5));
  CHECK(cm[1].iou == Approx(0.5));
  CHECK(cm[2].iou == Approx(1.0));
  CHECK(std::isnan(cm[3].iou));
  CHECK(m.mean_accuracy() == Approx((2.0 / 3 + 2.0 / 3 + 1) / 3));  // 7/9
  CHECK(m.mean_iou() == Approx(2.0 / 3));
  CHECK(m.weighted_iou() == Approx((3 * 0.5 + 3 * 0.5 + 1 * 1.0) / 7));  // 4/7
  auto nm = m.normalized_confusion();
  CHECK(nm[0][0] == Approx(2.0 / 3));
  CHECK(nm[0][1] == Approx(1.0 / 3));
  CHECK(nm[0][2] == 0);
  CHECK(nm[1][0] == Approx(1.0 / 3));
  CHECK(nm[2][2] == Approx(1.0));
  CHECK(std::isnan(nm[3][0]));
  // JSON carries the same numbers, NaN as null.
  const std::string j = m.json();
  CHECK(j.find("\"Pixels\":7") != std::string::npos);
  CHECK(j.find("\"ConfusionMatrix\":[[2,1,0,0],[1,2,0,0],[0,0,1,0],[0,0,0,0]]") != std::string::npos);
  CHECK(j.find("{\"Class\":\"sky\",\"Accuracy\":null,\"IoU\":null,\"MeanBFScore\":null}") != std::string::npos);
}

TEST_CASE("seg metrics: a class predicted but absent from the truth has IoU 0, accuracy NaN", "[seg_metrics]") {
  // truth all a (2x2); pred a a a b. a: recall 3/4, IoU 3/4; b: IoU 0/(0+1+0) = 0, accuracy
  // NaN; c: NaN. MeanAccuracy 0.75, MeanIoU (0.75 + 0) / 2, WeightedIoU 4 * 0.75 / 4.
  const std::vector<uint8_t> truth = {0, 0, 0, 0}, pred = {0, 0, 0, 1};
  SegmentationMetrics m({"a", "b", "c"});
  m.add(truth.data(), pred.data(), 2, 2);
  auto cm = m.class_metrics();
  CHECK(std::isnan(cm[1].accuracy));
  CHECK(cm[1].iou == 0);
  CHECK(std::isnan(cm[2].iou));
  CHECK(m.mean_accuracy() == Approx(0.75));
  CHECK(m.mean_iou() == Approx(0.375));
  CHECK(m.weighted_iou() == Approx(0.75));
  CHECK(m.global_accuracy() == Approx(0.75));
}

TEST_CASE("bf score: boundaries matched exactly under the default tolerance", "[seg_metrics]") {
  // 4x4: tolerance 0.75% of the diagonal = 0.042 pixels, so only coinciding pixels match.
  // truth        pred
  // 0 0 1 1      0 0 0 1
  // 0 0 1 1      0 0 0 1
  // 0 0 1 1      0 0 1 1
  // 0 0 1 1      0 0 1 1
  // Boundary pixels (a 4-neighbour of another class; the image edge is no boundary):
  // truth class 0: column 1 (4); class 1: column 2 (4).
  // pred class 0: (0,2) (1,2) (2,1) (3,1); class 1: (0,3) (1,3) (2,2) (3,2).
  // Class 0: coinciding (2,1) (3,1): P = 2/4, R = 2/4, F1 = 0.5. Class 1: (2,2) (3,2): 0.5.
  const std::vector<uint8_t> truth = {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1};
  const std::vector<uint8_t> pred = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 1};
  CHECK(default_bf_threshold(4, 4) == Approx(0.0075 * std::sqrt(32.0)));
  auto bf = bf_scores(truth.data(), pred.data(), 4, 4, 3, default_bf_threshold(4, 4));
  CHECK(bf[0] == Approx(0.5));
  CHECK(bf[1] == Approx(0.5));
  CHECK(std::isnan(bf[2]));  // in neither map
  // A tolerance of 1.5 reaches the neighbouring column: every boundary pixel matches.
  bf = bf_scores(truth.data(), pred.data(), 4, 4, 3, 1.5);
  CHECK(bf[0] == Approx(1.0));
  CHECK(bf[1] == Approx(1.0));
  // Tolerance 1 is strict (distance < tolerance): the same as exact matching.
  bf = bf_scores(truth.data(), pred.data(), 4, 4, 3, 1.0);
  CHECK(bf[0] == Approx(0.5));
}

TEST_CASE("bf score: precision and recall differ, with and without a tolerance", "[seg_metrics]") {
  // truth        pred
  // 0 0 0 0      0 0 0 0
  // 0 1 1 0      0 1 0 0
  // 0 1 1 0      0 0 0 0
  // 0 0 0 0      0 0 0 0
  // truth boundaries: class 1 all 4 of its pixels; class 0 the 8 pixels beside the square:
  //   (0,1) (0,2) (1,0) (2,0) (1,3) (2,3) (3,1) (3,2).
  // pred boundaries: class 1 (1,1); class 0 (0,1) (1,0) (1,2) (2,1).
  // Exact: class 1 P = 1/1, R = 1/4, F1 = 2 * 0.25 / 1.25 = 0.4.
  //        class 0 P = 2/4 ((0,1), (1,0)), R = 2/8, F1 = 2 * 0.5 * 0.25 / 0.75 = 1/3.
  // Tolerance 1.2 (distance 1 matches, sqrt 2 does not):
  //   class 1: P = 1; R = 3/4 ((2,2) is sqrt 2 from (1,1)); F1 = 1.5 / 1.75 = 6/7.
  //   class 0: P = 1 (each predicted pixel is within 1 of a true one); R = 6/8 ((2,3) and
  //   (3,2) are sqrt 2 or more from every predicted one); F1 = 6/7.
  const std::vector<uint8_t> truth = {0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0};
  const std::vector<uint8_t> pred = {0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  auto bf = bf_scores(truth.data(), pred.data(), 4, 4, 2, default_bf_threshold(4, 4));
  CHECK(bf[1] == Approx(0.4));
  CHECK(bf[0] == Approx(1.0 / 3));
  bf = bf_scores(truth.data(), pred.data(), 4, 4, 2, 1.2);
  CHECK(bf[1] == Approx(6.0 / 7));
  CHECK(bf[0] == Approx(6.0 / 7));
}

TEST_CASE("bf score: undefined truth masks the prediction; absent and whole-image classes", "[seg_metrics]") {
  // truth 0 0 U / 0 0 U, pred 0 0 1 / 0 0 1: where the truth is undefined the prediction is
  // too, so class 1 is in neither map (NaN) and class 0's boundary (column 1) is the same in
  // both: 1. A class only in the truth scores 0; one class over the whole image in both: 1.
  std::vector<uint8_t> truth = {0, 0, U, 0, 0, U}, pred = {0, 0, 1, 0, 0, 1};
  auto bf = bf_scores(truth.data(), pred.data(), 2, 3, 2, default_bf_threshold(2, 3));
  CHECK(bf[0] == Approx(1.0));
  CHECK(std::isnan(bf[1]));
  truth = {0, 0, 1, 0, 0, 1};
  pred = {0, 0, 0, 0, 0, 0};
  bf = bf_scores(truth.data(), pred.data(), 2, 3, 2, default_bf_threshold(2, 3));
  CHECK(bf[1] == 0);
  // class 0: truth boundary column 1 (2 pixels), pred none (the whole image): 0.
  CHECK(bf[0] == 0);
  truth = {1, 1, 1, 1};
  pred = {1, 1, 1, 1};
  bf = bf_scores(truth.data(), pred.data(), 2, 2, 2, default_bf_threshold(2, 2));
  CHECK(std::isnan(bf[0]));
  CHECK(bf[1] == Approx(1.0));
}

TEST_CASE("seg metrics: MeanBFScore over images, merging accumulators equals one pass", "[seg_metrics]") {
  // Image 1 (the exact-match 4x4 case): class 0 0.5, class 1 0.5, image mean 0.5.
  // Image 2 (the square): class 0 1/3, class 1 0.4, image mean 11/30.
  // Per class MeanBFScore: (0.5 + 1/3) / 2 = 5/12 and (0.5 + 0.4) / 2 = 0.45; the data set's:
  // (0.5 + 11/30) / 2 = 13/30.
  const std::vector<uint8_t> t1 = {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1};
  const std::vector<uint8_t> p1 = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 1};
  const std::vector<uint8_t> t2 = {0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0};
  const std::vector<uint8_t> p2 = {0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  SegmentationMetrics all({"a", "b"}), first({"a", "b"}), second({"a", "b"});
  all.add(t1.data(), p1.data(), 4, 4);
  all.add(t2.data(), p2.data(), 4, 4);
  first.add(t1.data(), p1.data(), 4, 4);
  second.add(t2.data(), p2.data(), 4, 4);
  auto cm = all.class_metrics();
  CHECK(cm[0].mean_bf_score == Approx(5.0 / 12));
  CHECK(cm[1].mean_bf_score == Approx(0.45));
  CHECK(all.mean_bf_score() == Approx(13.0 / 30));
  first.merge(second);
  CHECK(first.raw().confusion == all.raw().confusion);
  CHECK(first.images() == 2);
  CHECK(first.mean_bf_score() == Approx(all.mean_bf_score()));
  CHECK(first.mean_iou() == Approx(all.mean_iou()));
  // Pixels: image 1 has 2 of 16 wrong (t1 p0), image 2 has 3 (t1 p0): 27 of 32 right.
  CHECK(all.global_accuracy() == Approx(27.0 / 32));
  // add_raw of the raw counts is the same as merge (what an all-reduce would hand back).
  SegmentationMetrics via_raw({"a", "b"});
  via_raw.add_raw(all.raw());
  CHECK(via_raw.json() == all.json());
  SegmentationMetrics other({"x"});
  CHECK_THROWS(other.merge(all));
}

TEST_CASE("seg metrics: add_pixels counts without BF scores; bad predictions rejected", "[seg_metrics]") {
  const std::vector<uint8_t> truth = {0, 1, U}, pred = {0, 0, 1};
  SegmentationMetrics m({"a", "b"});
  m.add_pixels(truth.data(), pred.data(), 3);
  CHECK(m.pixels() == 2);
  CHECK(m.images() == 0);
  CHECK(std::isnan(m.mean_bf_score()));
  CHECK(m.mean_iou() == Approx((0.5 + 0.0) / 2));  // a: 1/(1+1); b: 0/(0+0+1)
  const std::vector<uint8_t> bad = {0, 2, 0};
  CHECK_THROWS(m.add_pixels(truth.data(), bad.data(), 3));
  CHECK(m.pixels() == 2);  // nothing counted from the rejected call
  // int32 labels as the trainer holds them (-1 undefined) count the same.
  const std::vector<int32_t> t32 = {0, 1, -1};
  SegmentationMetrics m32({"a", "b"});
  m32.add_pixels(t32.data(), pred.data(), 3);
  CHECK(m32.raw().confusion == m.raw().confusion);
  CHECK_THROWS(m32.add_pixels(t32.data(), bad.data(), 3));
}
