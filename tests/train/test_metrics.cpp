// Predictions: top-K order, accuracy, confusion matrix, precision and recall on a known set,
// and the CSV / JSON shapes `dltrain classify` prints.
#include <catch2/catch.hpp>
#include <cmath>

#include "train/metrics.h"

using namespace dlt;

TEST_CASE("classification metrics on a known set", "[train]") {
  Predictions p;
  p.classes = {"a", "b", "c"};
  p.top = 2;
  p.labelled = true;
  p.add("1.png", 0, {0.7f, 0.2f, 0.1f});  // a -> a
  p.add("2.png", 0, {0.1f, 0.6f, 0.3f});  // a -> b
  p.add("3.png", 1, {0.2f, 0.5f, 0.3f});  // b -> b
  p.add("4.png", 1, {0.3f, 0.3f, 0.4f});  // b -> c
  p.add("5.png", 1, {0.1f, 0.8f, 0.1f});  // b -> b
  CHECK(p.items()[1].top[1].first == 2);  // second choice of 2.png is c
  CHECK(p.accuracy() == Approx(60.0));
  auto m = p.confusion();
  CHECK(m == std::vector<std::vector<int64_t>>{{1, 1, 0}, {0, 2, 1}, {0, 0, 0}});
  auto s = p.per_class();
  CHECK(s[0].precision == Approx(100.0));
  CHECK(s[0].recall == Approx(50.0));
  CHECK(s[1].precision == Approx(200.0 / 3));
  CHECK(s[1].recall == Approx(200.0 / 3));
  CHECK(s[2].precision == Approx(0.0));
  CHECK(std::isnan(s[2].recall));  // no image of class c
  CHECK(s[2].support == 0);
  std::string csv = p.csv();
  CHECK(csv.rfind("path,label,score,true_label,label2,score2\n1.png,a,0.700000,a,b,0.200000\n", 0) == 0);
  std::string json = p.json();
  CHECK(json.find("\"accuracy\":60") != std::string::npos);
  CHECK(json.find("\"confusion\":[[1,1,0],[0,2,1],[0,0,0]]") != std::string::npos);
  CHECK(json.find("\"recall\":null") != std::string::npos);
  CHECK(p.report().find("Accuracy: 60.00% (5 images)") != std::string::npos);
}
