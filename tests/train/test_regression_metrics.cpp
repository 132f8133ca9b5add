// RegressionPredictions (dltrain predict's errors): RMSE, MAE and MAPE on values worked out by
// hand, then on the numpy fixture (fixtures/make_metric_fixtures.py); the CSV, JSON and report.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "train/regression_metrics.h"

using namespace dlt;

namespace {

// The fixture's numbers, comment lines left out ("nan" read as NaN).
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

}  // namespace

TEST_CASE("regression errors on values worked out by hand", "[train][regression_metrics]") {
  RegressionPredictions p({"Angle", "Scale"});
  // Angle errors: +1, -3, +2 (true 10, 0, -4); Scale errors: 0, +0.5, -1 (true 2, 1, 0).
  p.add("a.png", {11.f, 2.f}, {10.f, 2.f});
  p.add("b.png", {-3.f, 1.5f}, {0.f, 1.f});
  p.add("c.png", {-2.f, -1.f}, {-4.f, 0.f});
  REQUIRE(p.labelled());
  const auto per = p.per_response();
  REQUIRE(per.size() == 2);
  CHECK(per[0].rmse == Approx(std::sqrt((1.0 + 9 + 4) / 3)));
  CHECK(per[0].mae == Approx(2.0));
  // MAPE over the true values that are not 0: |1/10| and |2/-4| -> (10% + 50%) / 2.
  CHECK(per[0].mape == Approx(30.0));
  CHECK(per[0].values == 3);
  CHECK(per[0].mape_values == 2);
  CHECK(per[1].rmse == Approx(std::sqrt((0 + 0.25 + 1) / 3)));
  CHECK(per[1].mae == Approx(0.5));
  CHECK(per[1].mape == Approx(25.0));  // 0% and 50%
  const RegressionErrors all = p.overall();
  CHECK(all.rmse == Approx(std::sqrt((1.0 + 9 + 4 + 0 + 0.25 + 1) / 6)));
  CHECK(all.mae == Approx(7.5 / 6));
  CHECK(all.mape == Approx((10.0 + 50 + 0 + 50) / 4));
  CHECK(all.values == 6);
  CHECK(all.mape_values == 4);

  CHECK(p.csv() ==
        "path,Angle,Scale,true_Angle,true_Scale\n"
        "a.png,11,2,10,2\n"
        "b.png,-3,1.5,0,1\n"
        "c.png,-2,-1,-4,0\n");
  const std::string json = p.json();
  CHECK(json.find("\"responses\":[\"Angle\",\"Scale\"]") != std::string::npos);
  CHECK(json.find("{\"path\":\"b.png\",\"responses\":[-3,1.5],\"true_responses\":[0,1]}") != std::string::npos);
  CHECK(json.find("\"overall\":{\"rmse\":") != std::string::npos);
  CHECK(json.find("{\"response\":\"Angle\",\"rmse\":2.1602469,\"mae\":2,\"mape\":30,\"values\":3,\"mape_values\":2}") !=
        std::string::npos);
  const std::string report = p.report();
  CHECK(report.find("Errors over 3 images") != std::string::npos);
  CHECK(report.find("response         RMSE          MAE     MAPE %\n"
                    "Angle         2.16025            2      30.00\n"
                    "Scale        0.645497          0.5      25.00\n"
                    "(all)         1.59426         1.25      27.50\n") != std::string::npos);
}

TEST_CASE("regression errors: no truth, every true value 0, bad counts", "[train][regression_metrics]") {
  RegressionPredictions p({"y"});
  p.add("a.png", {1.5f});
  CHECK_FALSE(p.labelled());
  CHECK(p.csv() == "path,y\na.png,1.5\n");
  CHECK(p.report().empty());
  CHECK(p.json().find("overall") == std::string::npos);
  CHECK(std::isnan(p.overall().rmse));  // nothing to compare

  RegressionPredictions z({"y"});
  z.add("a.png", {2.f}, {0.f});
  CHECK(z.overall().rmse == Approx(2.0));
  CHECK(std::isnan(z.overall().mape));  // every true value is 0
  CHECK(z.report().find("     -\n") != std::string::npos);
  CHECK(z.json().find("\"mape\":null") != std::string::npos);

  CHECK_THROWS_AS(z.add("b.png", {1.f, 2.f}), std::invalid_argument);
  CHECK_THROWS_AS(z.add("b.png", {1.f}, {1.f, 2.f}), std::invalid_argument);
  RegressionPredictions q({"a,b"});  // a name that needs quoting
  q.add("x, y.png", {1.f});
  CHECK(q.csv() == "path,\"a,b\"\n\"x, y.png\",1\n");
}

TEST_CASE("regression errors agree with numpy on the fixture", "[train][regression_metrics]") {
  const auto tok = fixture_tokens("regression.txt");
  size_t at = 0;
  auto next = [&] { return tok.at(at++); };
  const int n = std::stoi(next()), r = std::stoi(next());
  std::vector<std::string> names;
  for (int k = 0; k < r; ++k) names.push_back("r" + std::to_string(k));
  std::vector<std::vector<float>> pred(static_cast<size_t>(n), std::vector<float>(static_cast<size_t>(r)));
  std::vector<std::vector<float>> truth = pred;
  for (auto* rows : {&pred, &truth})
    for (auto& row : *rows)
      for (float& v : row) v = std::strtof(next().c_str(), nullptr);
  RegressionPredictions p(names);
  for (int i = 0; i < n; ++i) p.add("x.png", pred[size_t(i)], truth[size_t(i)]);
  auto expect = [&](const RegressionErrors& e) {
    CHECK(e.rmse == Approx(std::strtod(next().c_str(), nullptr)).epsilon(1e-12));
    CHECK(e.mae == Approx(std::strtod(next().c_str(), nullptr)).epsilon(1e-12));
    CHECK(e.mape == Approx(std::strtod(next().c_str(), nullptr)).epsilon(1e-12));
    CHECK(e.values == std::stoll(next()));
    CHECK(e.mape_values == std::stoll(next()));
  };
  const auto per = p.per_response();
  for (int k = 0; k < r; ++k) expect(per[size_t(k)]);
  expect(p.overall());
  CHECK(at == tok.size());
  CHECK(per[0].mape_values < per[0].values);  // the fixture has true values of 0
}
