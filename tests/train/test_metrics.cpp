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
  // Precision and recall as fractions (MATLAB's metric objects, training's Metrics); accuracy
  // in percent (trainNetwork's and the training table's).
  CHECK(s[0].precision == Approx(1.0));
  CHECK(s[0].recall == Approx(0.5));
  CHECK(s[1].precision == Approx(2.0 / 3));
  CHECK(s[1].recall == Approx(2.0 / 3));
  CHECK(s[2].precision == Approx(0.0));
  CHECK(std::isnan(s[2].recall));  // no image of class c
  CHECK(s[2].support == 0);
  std::string csv = p.csv();
  CHECK(csv.rfind("path,label,score,true_label,label2,score2\n1.png,a,0.700000,a,b,0.200000\n", 0) == 0);
  std::string json = p.json();
  CHECK(json.find("\"accuracy\":60") != std::string::npos);
  CHECK(json.find("\"confusion\":[[1,1,0],[0,2,1],[0,0,0]]") != std::string::npos);
  CHECK(json.find("\"recall\":null") != std::string::npos);
  CHECK(json.find("{\"class\":\"a\",\"precision\":1,\"recall\":0.5,\"support\":2}") != std::string::npos);
  const std::string report = p.report();
  CHECK(report.find("Accuracy: 60.00% (5 images)") != std::string::npos);
  CHECK(report.find("\nclass  precision     recall   images\n"
                    "a         1.0000     0.5000        2\n"
                    "b         0.6667     0.6667        3\n"
                    "c         0.0000          -        0\n") != std::string::npos);
}

TEST_CASE("confusion matrix headers: full class names when they fit, else numbers", "[train]") {
  Predictions p;
  p.classes = {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
  p.labelled = true;
  for (int t = 0; t < 10; ++t)
    for (int i = 0; i < 100 + t; ++i) {
      std::vector<float> probs(10, 0.f);
      probs[static_cast<size_t>(i % 7 == 0 ? (t + 1) % 10 : t)] = 1.f;  // every 7th wrong
      p.add("x.png", t, probs);
    }
  auto lines_of = [](const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t nl; (nl = s.find('\n', start)) != std::string::npos; start = nl + 1)
      out.push_back(s.substr(start, nl - start));
    return out;
  };
  auto matrix = [&](int width) {  // the title, the header and the 10 rows
    std::vector<std::string> l = lines_of(p.report(width));
    size_t at = 0;
    while (at < l.size() && l[at].rfind("Confusion matrix", 0) != 0) ++at;
    REQUIRE(at + 12 == l.size());
    return std::vector<std::string>(l.begin() + static_cast<long>(at), l.end());
  };
  // 10-character names + 10 cells of 11 = 120 columns: the names fit at 120.
  std::vector<std::string> wide = matrix(120);
  CHECK(wide[0] == "Confusion matrix (rows: true class, columns: predicted)");
  CHECK(wide[1] ==
        "             airplane automobile       bird        cat       deer        dog       frog      "
        "horse       ship      truck");
  CHECK(wide[3] ==
        "automobile          0         86         15          0          0          0          0          "
        "0          0          0");
  for (const auto& l : wide) CHECK(l.size() <= 120);
  // At 80 (and 119) the columns are numbered as the rows, which keep the full names.
  for (int width : {80, 119}) {
    std::vector<std::string> narrow = matrix(width);
    CHECK(narrow[0] == "Confusion matrix (rows: true class, columns: predicted, numbered as the rows)");
    CHECK(narrow[1] == "               1  2  3  4  5  6  7  8  9 10");
    CHECK(narrow[3] == " 2 automobile  0 86 15  0  0  0  0  0  0  0");
    CHECK(narrow[11] == "10 truck      16  0  0  0  0  0  0  0  0 93");
    for (const auto& l : narrow) CHECK(l.size() <= 80);
  }
  // The per-class table keeps full names at any width.
  CHECK(p.report(80).find("\nautomobile     0.8515     0.8515      101\n") != std::string::npos);
}
