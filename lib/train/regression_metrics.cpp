#include "train/regression_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "util/csv.h"
#include "util/json.h"

namespace dlt {

namespace {

std::string number(double v) {  // a float's 7 significant digits: 0.9f is 0.9
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7g", v);
  return buf;
}

}  // namespace

RegressionPredictions::RegressionPredictions(std::vector<std::string> names) : names_(std::move(names)) {}

void RegressionPredictions::add(const std::string& path, const std::vector<float>& predicted,
                                const std::vector<float>& truth) {
  if (predicted.size() != names_.size() || (!truth.empty() && truth.size() != names_.size()))
    throw std::invalid_argument("RegressionPredictions::add: " + std::to_string(predicted.size()) + " predicted and " +
                                std::to_string(truth.size()) + " true values for " + std::to_string(names_.size()) +
                                " responses");
  paths_.push_back(path);
  predicted_.push_back(predicted);
  truth_.push_back(truth);
}

bool RegressionPredictions::labelled() const {
  if (paths_.empty()) return false;
  return std::all_of(truth_.begin(), truth_.end(), [](const std::vector<float>& t) { return !t.empty(); });
}

RegressionErrors RegressionPredictions::errors(int64_t response) const {
  double sq = 0, abs = 0, ape = 0;
  RegressionErrors e;
  const size_t r0 = response < 0 ? 0 : static_cast<size_t>(response);
  const size_t r1 = response < 0 ? names_.size() : r0 + 1;
  for (size_t i = 0; i < paths_.size(); ++i) {
    if (truth_[i].empty()) continue;
    for (size_t r = r0; r < r1; ++r) {
      const double t = truth_[i][r], d = static_cast<double>(predicted_[i][r]) - t;
      sq += d * d;
      abs += std::fabs(d);
      ++e.values;
      if (t != 0) {
        ape += std::fabs(d / t);
        ++e.mape_values;
      }
    }
  }
  const double n = static_cast<double>(e.values);
  e.rmse = e.values ? std::sqrt(sq / n) : NAN;
  e.mae = e.values ? abs / n : NAN;
  e.mape = e.mape_values ? 100.0 * ape / static_cast<double>(e.mape_values) : NAN;
  return e;
}

std::vector<RegressionErrors> RegressionPredictions::per_response() const {
  std::vector<RegressionErrors> out;
  for (size_t r = 0; r < names_.size(); ++r) out.push_back(errors(static_cast<int64_t>(r)));
  return out;
}

RegressionErrors RegressionPredictions::overall() const { return errors(-1); }

std::string RegressionPredictions::csv() const {
  const bool with_truth = labelled();
  std::string out = "path";
  for (const auto& n : names_) out += "," + csv_field(n);
  if (with_truth)
    for (const auto& n : names_) out += "," + csv_field("true_" + n);
  out += "\n";
  for (size_t i = 0; i < paths_.size(); ++i) {
    out += csv_field(paths_[i]);
    for (float v : predicted_[i]) out += "," + number(v);
    if (with_truth)
      for (float v : truth_[i]) out += "," + number(v);
    out += "\n";
  }
  return out;
}

namespace {
void write_errors(JsonWriter& j, const RegressionErrors& e) {
  j.field("rmse", e.rmse)
      .field("mae", e.mae)
      .field("mape", e.mape)
      .field("values", e.values)
      .field("mape_values", e.mape_values);
}
}  // namespace

std::string RegressionPredictions::json() const {
  JsonWriter j;
  j.begin_object();
  j.key("responses").begin_array();
  for (const auto& n : names_) j.value(n);
  j.end_array();
  j.key("predictions").begin_array();
  for (size_t i = 0; i < paths_.size(); ++i) {
    j.begin_object().field("path", paths_[i]);
    j.key("responses").begin_array();
    for (float v : predicted_[i]) j.value(static_cast<double>(v));
    j.end_array();
    if (!truth_[i].empty()) {
      j.key("true_responses").begin_array();
      for (float v : truth_[i]) j.value(static_cast<double>(v));
      j.end_array();
    }
    j.end_object();
  }
  j.end_array();
  if (labelled()) {
    j.key("overall").begin_object();
    write_errors(j, overall());
    j.end_object();
    j.key("per_response").begin_array();
    const auto per = per_response();
    for (size_t r = 0; r < names_.size(); ++r) {
      j.begin_object().field("response", names_[r]);
      write_errors(j, per[r]);
      j.end_object();
    }
    j.end_array();
  }
  j.end_object();
  return j.str();
}

std::string RegressionPredictions::report() const {
  if (!labelled()) return "";
  char buf[256];
  std::string out;
  std::snprintf(buf, sizeof buf, "\nErrors over %zu images (MAPE in percent, over true values that are not 0)\n\n",
                paths_.size());
  out += buf;
  size_t w = 8;  // "response"
  for (const auto& n : names_) w = std::max(w, n.size());
  auto cell = [](double v, const char* format) {
    if (std::isnan(v)) return std::string("-");
    char b[32];
    std::snprintf(b, sizeof b, format, v);
    return std::string(b);
  };
  auto row = [&](const std::string& name, const RegressionErrors& e) {
    std::snprintf(buf, sizeof buf, "%-*s %12s %12s %10s\n", static_cast<int>(w), name.c_str(),
                  cell(e.rmse, "%.6g").c_str(), cell(e.mae, "%.6g").c_str(), cell(e.mape, "%.2f").c_str());
    out += buf;
  };
  std::snprintf(buf, sizeof buf, "%-*s %12s %12s %10s\n", static_cast<int>(w), "response", "RMSE", "MAE", "MAPE %");
  out += buf;
  const auto per = per_response();
  for (size_t r = 0; r < names_.size(); ++r) row(names_[r], per[r]);
  if (names_.size() > 1) row("(all)", overall());
  return out;
}

}  // namespace dlt
