// MultiLabelPredictions (dltrain classify on a multi-label model): per label precision, recall,
// F1, average precision, and micro F1, Jaccard, mean AP and exact match on values worked out by
// hand and on the numpy fixture (fixtures/make_metric_fixtures.py); the CSV, JSON and report.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "train/multilabel_metrics.h"

using namespace dlt;

namespace {

std::vector<std::string> fixture_tokens(const std::string& name) {
  std::ifstream in(std::string(DLT_SOURCE_DIR) + "/tests/train/fixtures/" + name);
  REQUIRE(in.good());
  std::vector<std::string> out;
  std::string line, word;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    while (words >> word) out.push_back(word);
  }
  return out;
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == Approx(b).epsilon(1e-12); }

}  // namespace

TEST_CASE("average precision: scikit-learn's definition", "[train][multilabel_metrics]") {
  // scikit-learn's documented example: average_precision_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
  // = 0.8333: thresholds 0.8 (P 1, R 0.5), 0.4 (P 1/2, R 0.5), 0.35 (P 2/3, R 1), 0.1.
  CHECK(average_precision({0.1f, 0.4f, 0.35f, 0.8f}, {0, 0, 1, 1}) == Approx(0.5 * 1 + 0.5 * (2.0 / 3)));
  // Tied scores are one threshold: 0.9 (P 1, R 1/2), then 0.5 holding a positive and a negative
  // together (P 2/3, R 1): 0.5 + 0.5 * 2/3. Taken one by one the positive first would give 1.
  CHECK(average_precision({0.9f, 0.5f, 0.5f}, {1, 1, 0}) == Approx(0.5 + 0.5 * (2.0 / 3)));
  CHECK(average_precision({0.9f, 0.5f, 0.5f}, {1, 0, 1}) == Approx(0.5 + 0.5 * (2.0 / 3)));
  CHECK(average_precision({0.2f, 0.7f}, {1, 0}) == Approx(0.5));  // the positive ranked last
  CHECK(std::isnan(average_precision({0.2f, 0.7f}, {0, 0})));     // no positive
  CHECK_THROWS_AS(average_precision({0.2f}, {0, 1}), std::invalid_argument);
}

TEST_CASE("multi-label metrics on a set worked out by hand", "[train][multilabel_metrics]") {
  MultiLabelPredictions p({"cat", "dog", "car"}, 0.5f);
  // predicted (>= 0.5)      true
  p.add("1.png", {0.9f, 0.2f, 0.6f}, {1, 0, 1});  // {cat, car}   {cat, car}: exact
  p.add("2.png", {0.8f, 0.7f, 0.1f}, {1, 0, 0});  // {cat, dog}   {cat}
  p.add("3.png", {0.3f, 0.5f, 0.4f}, {0, 1, 1});  // {dog}        {dog, car}
  p.add("4.png", {0.1f, 0.2f, 0.3f}, {0, 0, 0});  // {}           {}: exact, Jaccard 1
  REQUIRE(p.labelled());
  CHECK(p.labels(2) == std::vector<int32_t>{1});  // 0.5 reaches the threshold
  const auto s = p.per_label();
  // cat: TP 2, FP 0, FN 0. dog: TP 1, FP 1, FN 0. car: TP 1, FP 0, FN 1.
  CHECK(s[0].precision == Approx(1.0));
  CHECK(s[0].recall == Approx(1.0));
  CHECK(s[0].f1 == Approx(1.0));
  CHECK(s[0].support == 2);
  CHECK(s[1].precision == Approx(0.5));
  CHECK(s[1].recall == Approx(1.0));
  CHECK(s[1].f1 == Approx(2.0 / 3));
  CHECK(s[1].predicted == 2);
  CHECK(s[2].precision == Approx(1.0));
  CHECK(s[2].recall == Approx(0.5));
  CHECK(s[2].f1 == Approx(2.0 / 3));
  // AP: cat's positives score highest (1); dog's one positive is 2nd of 0.7 0.5 0.2 0.2 (1/2);
  // car: 0.6 (+, P 1, R 1/2), 0.4 (+, P 1, R 1) -> 1.
  CHECK(s[0].average_precision == Approx(1.0));
  CHECK(s[1].average_precision == Approx(0.5));
  CHECK(s[2].average_precision == Approx(1.0));
  // Micro F1: TP 4, FP 1, FN 1 -> 8 / 10. Jaccard: (1 + 1/2 + 1/2 + 1) / 4.
  CHECK(p.f1_micro() == Approx(0.8));
  CHECK(p.jaccard() == Approx(0.75));
  CHECK(p.mean_average_precision() == Approx(2.5 / 3));
  CHECK(p.exact_match() == Approx(0.5));

  CHECK(p.csv().rfind("path,labels,true_labels,score_cat,score_dog,score_car\n"
                      "1.png,cat;car,cat;car,0.900000,0.200000,0.600000\n"
                      "2.png,cat;dog,cat,0.800000,0.700000,0.100000\n",
                      0) == 0);
  CHECK(p.csv().find("\n4.png,,,0.100000,0.200000,0.300000\n") != std::string::npos);
  const std::string json = p.json();
  CHECK(json.find("\"threshold\":0.5") != std::string::npos);
  CHECK(json.find("{\"path\":\"3.png\",\"labels\":[\"dog\"],\"true_labels\":[\"dog\",\"car\"],\"scores\":[") !=
        std::string::npos);
  CHECK(json.find("\"f1_micro\":0.8,\"jaccard\":0.75,") != std::string::npos);
  CHECK(json.find("{\"class\":\"dog\",\"precision\":0.5,\"recall\":1,\"f1\":0.666666667,\"average_precision\":0.5,"
                  "\"support\":1}") != std::string::npos);
  const std::string report = p.report();
  CHECK(report.find("F1 (micro) 0.8000  Jaccard 0.7500  mean AP 0.8333  exact match 0.5000  (4 images, threshold "
                    "0.5)") != std::string::npos);
  CHECK(report.find("class  precision     recall         F1         AP   images\n"
                    "cat       1.0000     1.0000     1.0000     1.0000        2\n"
                    "dog       0.5000     1.0000     0.6667     0.5000        1\n") != std::string::npos);
}

TEST_CASE("multi-label metrics: threshold, no truth, a label never true", "[train][multilabel_metrics]") {
  MultiLabelPredictions p({"a", "b"}, 0.25f);
  p.add("x.png", {0.3f, 0.2f});
  CHECK(p.labels(0) == std::vector<int32_t>{0});
  CHECK_FALSE(p.labelled());
  CHECK(p.report().empty());
  CHECK(p.csv() == "path,labels,score_a,score_b\nx.png,a,0.300000,0.200000\n");
  CHECK(p.json().find("f1_micro") == std::string::npos);
  CHECK_THROWS_AS(p.add("y.png", {0.3f}), std::invalid_argument);

  MultiLabelPredictions q({"a", "never"}, 0.5f);
  q.add("1.png", {0.9f, 0.6f}, {1, 0});
  q.add("2.png", {0.2f, 0.1f}, {1, 0});
  const auto s = q.per_label();
  CHECK(std::isnan(s[1].recall));             // no true image
  CHECK(std::isnan(s[1].average_precision));  // left out of the mean
  CHECK(s[1].precision == 0);
  CHECK(q.mean_average_precision() == Approx(1.0));
  CHECK(q.report().find("never     0.0000          -     0.0000          -        0\n") != std::string::npos);
  CHECK(q.json().find("\"recall\":null") != std::string::npos);
}

TEST_CASE("multi-label metrics agree with numpy on the fixture", "[train][multilabel_metrics]") {
  const auto tok = fixture_tokens("multilabel.txt");
  size_t at = 0;
  auto next = [&] { return tok.at(at++); };
  const int n = std::stoi(next()), c = std::stoi(next());
  const float threshold = std::strtof(next().c_str(), nullptr);
  std::vector<std::string> classes;
  for (int k = 0; k < c; ++k) classes.push_back("c" + std::to_string(k));
  std::vector<std::vector<float>> probs(static_cast<size_t>(n), std::vector<float>(static_cast<size_t>(c)));
  std::vector<std::vector<uint8_t>> truth(static_cast<size_t>(n), std::vector<uint8_t>(static_cast<size_t>(c)));
  for (auto& row : probs)
    for (float& v : row) v = std::strtof(next().c_str(), nullptr);
  for (auto& row : truth)
    for (uint8_t& v : row) v = static_cast<uint8_t>(std::stoi(next()));
  MultiLabelPredictions p(classes, threshold);
  for (int i = 0; i < n; ++i) p.add("x.png", probs[size_t(i)], truth[size_t(i)]);
  auto number = [&] { return std::strtod(next().c_str(), nullptr); };
  const auto s = p.per_label();
  for (int k = 0; k < c; ++k) {
    INFO("label " << k);
    CHECK(same(s[size_t(k)].precision, number()));
    CHECK(same(s[size_t(k)].recall, number()));
    CHECK(same(s[size_t(k)].f1, number()));
    CHECK(same(s[size_t(k)].average_precision, number()));
    CHECK(s[size_t(k)].support == std::stoll(next()));
  }
  CHECK(same(p.f1_micro(), number()));
  CHECK(same(p.jaccard(), number()));
  CHECK(same(p.mean_average_precision(), number()));
  CHECK(same(p.exact_match(), number()));
  CHECK(at == tok.size());
}
