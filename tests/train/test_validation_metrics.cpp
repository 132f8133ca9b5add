// The Metrics option's values against scikit-learn's definitions, computed by hand from a
// confusion matrix in the comments (and, when written, checked once with scikit-learn 1.9:
// precision_score / recall_score / f1_score / jaccard_score(average="macro"),
// roc_auc_score(multi_class="ovr", average="macro")).
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "train/validation_metrics.h"

using namespace dlt;

namespace {
using Approx = Catch::Detail::Approx;

// y_true = [0 0 0 0 1 1 1 2 2 2], y_pred = [0 0 1 3 1 1 0 1 0 3] with K = 5 classes:
// class 2 is never predicted, class 3 never true, class 4 in neither.
ConfusionMatrix example() {
  const int truth[] = {0, 0, 0, 0, 1, 1, 1, 2, 2, 2};
  const int pred[] = {0, 0, 1, 3, 1, 1, 0, 1, 0, 3};
  ConfusionMatrix c(5);
  for (int i = 0; i < 10; ++i) c.add(truth[i], pred[i]);
  return c;
}
}  // namespace

TEST_CASE("validation metrics: macro precision, recall, fscore and IoU by hand", "[validation_metrics]") {
  const ConfusionMatrix c = example();
  //            pred 0 1 2 3 4
  // truth 0:        2 1 0 1 0     class 0: TP 2, FP 2, FN 2
  // truth 1:        1 2 0 0 0     class 1: TP 2, FP 2, FN 1
  // truth 2:        1 1 0 1 0     class 2: TP 0, FP 0, FN 3 (never predicted: precision 0/0 -> 0)
  // truth 3, 4:     0 ...         class 3: TP 0, FP 2, FN 0 (never true: recall 0/0 -> 0)
  // Averaged over the 4 classes in truth or predictions (class 4 is in neither: left out).
  CHECK(c.count(0, 3) == 1);
  CHECK(c.total() == 10);
  CHECK(c.accuracy() == Approx(40.0));                              // 4 of 10 on the diagonal
  CHECK(c.macro_precision() == Approx((0.5 + 0.5 + 0 + 0) / 4));    // 0.25 (scikit-learn: 0.25)
  CHECK(c.macro_recall() == Approx((0.5 + 2.0 / 3 + 0 + 0) / 4));   // 7/24 (0.2916666...)
  CHECK(c.macro_fscore() == Approx((4.0 / 8 + 4.0 / 7 + 0 + 0) / 4));  // 2TP/(2TP+FP+FN): 15/56
  CHECK(c.mean_iou() == Approx((2.0 / 6 + 2.0 / 5 + 0 + 0) / 4));   // TP/(TP+FP+FN): 11/60
  // F of the macro means would differ (2PR/(P+R) = 0.2692...): the mean of per-class F is used.
  CHECK(c.macro_fscore() != Approx(2 * 0.25 * (7.0 / 24) / (0.25 + 7.0 / 24)));
}

TEST_CASE("validation metrics: perfect, empty and all-wrong matrices", "[validation_metrics]") {
  ConfusionMatrix perfect(3);
  perfect.add(0, 0, 4);
  perfect.add(2, 2, 1);
  CHECK(perfect.macro_precision() == 1.0);  // class 1 in neither: left out
  CHECK(perfect.macro_recall() == 1.0);
  CHECK(perfect.macro_fscore() == 1.0);
  CHECK(perfect.mean_iou() == 1.0);
  ConfusionMatrix empty(3);
  CHECK(std::isnan(empty.accuracy()));
  CHECK(std::isnan(empty.macro_precision()));
  CHECK(std::isnan(empty.macro_fscore()));
  ConfusionMatrix wrong(2);
  wrong.add(0, 1, 3);
  CHECK(wrong.accuracy() == 0.0);
  CHECK(wrong.macro_precision() == 0.0);  // class 0: 0/0 -> 0; class 1: 0/3
  CHECK(wrong.macro_fscore() == 0.0);
  CHECK_THROWS_AS(wrong.set_counts({1, 2, 3}), std::invalid_argument);
  wrong.set_counts({1, 0, 0, 1});
  CHECK(wrong.macro_recall() == 1.0);
}

TEST_CASE("validation metrics: ROC AUC counts ties half, as roc_auc_score does", "[validation_metrics]") {
  // Positives score 0.9, 0.5, 0.5; negatives 0.9, 0.1. Pairs right: (0.9 vs 0.9) tie 1/2,
  // 0.9 > 0.1, 0.5 < 0.9 twice, 0.5 > 0.1 twice: 3.5 of 6 (roc_auc_score: 0.58333).
  CHECK(roc_auc({true, false, true, false, true}, {0.9f, 0.9f, 0.5f, 0.1f, 0.5f}) == Approx(3.5 / 6));
  CHECK(roc_auc({true, false}, {0.2f, 0.7f}) == 0.0);
  CHECK(roc_auc({true, false}, {0.7f, 0.2f}) == 1.0);
  CHECK(roc_auc({true, false}, {0.5f, 0.5f}) == 0.5);
  CHECK(std::isnan(roc_auc({true, true}, {0.1f, 0.2f})));  // no negatives
  CHECK(std::isnan(roc_auc({}, {})));
}

TEST_CASE("validation metrics: macro one-vs-rest AUC by hand", "[validation_metrics]") {
  const std::vector<int32_t> truth = {0, 1, 2, 0, 1, 2, 0, 2};
  const std::vector<float> scores = {0.5f,   0.25f,  0.25f, 0.25f, 0.5f,  0.25f, 0.25f, 0.25f,
                                     0.5f,   0.25f,  0.5f,  0.25f, 0.5f,  0.25f, 0.25f, 0.5f,
                                     0.25f,  0.25f,  0.25f, 0.25f, 0.5f,  0.125f, 0.125f, 0.75f};
  // Class 0: positives 0.5, 0.25, 0.25 against 0.25, 0.25, 0.5, 0.5, 0.125: 8 of 15.
  // Class 1: positives 0.5, 0.25 against 0.25, 0.25, 0.5, 0.25, 0.25, 0.125: 8.5 of 12.
  // Class 2: positives 0.5, 0.25, 0.75 against 0.25 x4, 0.5: 11.5 of 15.
  // Mean 0.669444 (roc_auc_score(multi_class="ovr"): 0.6694444444444443).
  const double expected = (8.0 / 15 + 8.5 / 12 + 11.5 / 15) / 3;
  CHECK(macro_auc(truth, scores, 3) == Approx(expected).epsilon(1e-12));
  // A fourth class no item has is left out (scikit-learn refuses; dltrain averages the others).
  std::vector<float> four;
  for (size_t i = 0; i < truth.size(); ++i) {
    four.insert(four.end(), scores.begin() + static_cast<long>(i * 3), scores.begin() + static_cast<long>(i * 3 + 3));
    four.push_back(0.0f);
  }
  CHECK(macro_auc(truth, four, 4) == Approx(expected).epsilon(1e-12));
  CHECK_THROWS_AS(macro_auc(truth, scores, 4), std::invalid_argument);
}

TEST_CASE("validation metrics: metric_values follows the Metrics order", "[validation_metrics]") {
  const ConfusionMatrix c = example();
  const std::vector<int32_t> truth = {0, 1, 0, 1};
  // Scores (4, 5): only the first two columns are non-zero.
  std::vector<float> s5(4 * 5, 0.0f);
  const float p1[] = {0.1f, 0.8f, 0.4f, 0.3f};  // class 1's score; class 0's is 1 - it
  for (int i = 0; i < 4; ++i) {
    s5[size_t(i) * 5] = 1 - p1[i];
    s5[size_t(i) * 5 + 1] = p1[i];
  }
  // Class 1 positives 0.8, 0.3 against 0.1, 0.4: 3 of 4; class 0 the mirror image: 3 of 4.
  auto v = metric_values({Metric::kRecall, Metric::kAccuracy, Metric::kAuc, Metric::kFScore}, c, 40.0, truth, s5);
  REQUIRE(v.size() == 4);
  CHECK(v[0].first == "recall");
  CHECK(v[0].second == Approx(7.0 / 24));
  CHECK(v[1].first == "accuracy");
  CHECK(v[1].second == 40.0);
  CHECK(v[2].first == "auc");
  CHECK(v[2].second == Approx(0.75));
  CHECK(v[3].first == "fscore");
  CHECK(v[3].second == Approx(15.0 / 56));
  auto no_scores = metric_values({Metric::kAuc, Metric::kIoU, Metric::kPrecision}, c, 40.0, {}, {});
  CHECK(std::isnan(no_scores[0].second));
  CHECK(no_scores[1].second == Approx(11.0 / 60));
  CHECK(no_scores[2].second == Approx(0.25));
}
