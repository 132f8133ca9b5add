#include "train/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "util/csv.h"
#include "util/json.h"
#include "util/terminal.h"

namespace dlt {

void Predictions::add(const std::string& path, int32_t truth, const std::vector<float>& probs) {
  Prediction p;
  p.path = path;
  p.truth = truth;
  std::vector<int32_t> order(probs.size());
  std::iota(order.begin(), order.end(), 0);
  size_t k = std::min<size_t>(static_cast<size_t>(std::max(top, 1)), probs.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<long>(k), order.end(),
                    [&](int32_t a, int32_t b) { return probs[a] > probs[b] || (probs[a] == probs[b] && a < b); });
  p.label = order[0];
  p.score = probs[order[0]];
  for (size_t i = 0; i < k; ++i) p.top.push_back({order[i], probs[order[i]]});
  items_.push_back(std::move(p));
}

double Predictions::accuracy() const {
  int64_t right = 0, n = 0;
  for (const auto& p : items_) {
    if (p.truth < 0) continue;
    ++n;
    right += p.truth == p.label;
  }
  return n ? 100.0 * static_cast<double>(right) / static_cast<double>(n) : NAN;
}

std::vector<std::vector<int64_t>> Predictions::confusion() const {
  std::vector<std::vector<int64_t>> m(classes.size(), std::vector<int64_t>(classes.size(), 0));
  for (const auto& p : items_)
    if (p.truth >= 0) ++m[p.truth][p.label];
  return m;
}

std::vector<Predictions::ClassStats> Predictions::per_class() const {
  auto m = confusion();
  std::vector<ClassStats> out;
  for (size_t c = 0; c < classes.size(); ++c) {
    int64_t tp = m[c][c], row = 0, col = 0;
    for (size_t j = 0; j < classes.size(); ++j) {
      row += m[c][j];
      col += m[j][c];
    }
    out.push_back({col ? static_cast<double>(tp) / static_cast<double>(col) : NAN,
                   row ? static_cast<double>(tp) / static_cast<double>(row) : NAN, row});
  }
  return out;
}

std::string Predictions::csv() const {
  std::string out = "path,label,score";
  if (labelled) out += ",true_label";
  for (int k = 2; k <= top; ++k) out += ",label" + std::to_string(k) + ",score" + std::to_string(k);
  out += "\n";
  char buf[64];
  for (const auto& p : items_) {
    std::snprintf(buf, sizeof buf, "%.6f", p.score);
    out += csv_field(p.path) + "," + csv_field(classes[p.label]) + "," + buf;
    if (labelled) out += "," + csv_field(classes[p.truth]);
    for (size_t k = 1; k < p.top.size(); ++k) {
      std::snprintf(buf, sizeof buf, "%.6f", p.top[k].second);
      out += "," + csv_field(classes[p.top[k].first]) + "," + buf;
    }
    out += "\n";
  }
  return out;
}

std::string Predictions::json() const {
  JsonWriter j;
  j.begin_object();
  j.key("classes").begin_array();
  for (const auto& c : classes) j.value(c);
  j.end_array();
  j.key("predictions").begin_array();
  for (const auto& p : items_) {
    j.begin_object()
        .field("path", p.path)
        .field("label", classes[p.label])
        .field("score", static_cast<double>(p.score));
    if (p.truth >= 0) j.field("true_label", classes[p.truth]);
    j.key("top").begin_array();
    for (const auto& [c, s] : p.top)
      j.begin_object().field("label", classes[c]).field("score", static_cast<double>(s)).end_object();
    j.end_array().end_object();
  }
  j.end_array();
  if (labelled) {
    j.field("accuracy", accuracy());
    j.key("confusion").begin_array();
    for (const auto& row : confusion()) {
      j.begin_array();
      for (int64_t v : row) j.value(v);
      j.end_array();
    }
    j.end_array();
    j.key("per_class").begin_array();
    auto stats = per_class();
    for (size_t c = 0; c < classes.size(); ++c)
      j.begin_object()
          .field("class", classes[c])
          .field("precision", stats[c].precision)
          .field("recall", stats[c].recall)
          .field("support", stats[c].support)
          .end_object();
    j.end_array();
  }
  j.end_object();
  return j.str();
}

std::string Predictions::report(int width) const {
  if (!labelled) return "";
  std::string out;
  char buf[256];
  int64_t n = static_cast<int64_t>(items_.size());
  std::snprintf(buf, sizeof buf, "\nAccuracy: %.2f%% (%lld images)\n\n", accuracy(), static_cast<long long>(n));
  out += buf;
  size_t w = 5;
  for (const auto& c : classes) w = std::max(w, c.size());
  std::snprintf(buf, sizeof buf, "%-*s %10s %10s %8s\n", static_cast<int>(w), "class", "precision", "recall", "images");
  out += buf;
  auto stats = per_class();
  auto frac = [](double v) {  // "-" where undefined (no image predicted / present)
    char b[32];
    if (std::isnan(v)) return std::string("-");
    std::snprintf(b, sizeof b, "%.4f", v);
    return std::string(b);
  };
  for (size_t c = 0; c < classes.size(); ++c) {
    std::snprintf(buf, sizeof buf, "%-*s %10s %10s %8lld\n", static_cast<int>(w), classes[c].c_str(),
                  frac(stats[c].precision).c_str(), frac(stats[c].recall).c_str(),
                  static_cast<long long>(stats[c].support));
    out += buf;
  }
  // The matrix: full class names over the columns when they fit, else numbers that also start
  // the rows (never names cut short).
  auto m = confusion();
  int64_t most = 0;
  for (const auto& row : m)
    for (int64_t v : row) most = std::max(most, v);
  const size_t k = classes.size(), count_w = std::to_string(most).size();
  if (width <= 0) width = terminal_columns(stdout);
  size_t longest = 0;
  for (const auto& c : classes) longest = std::max(longest, c.size());
  const size_t name_cw = std::max(longest, count_w);
  const bool names = w + k * (name_cw + 1) <= static_cast<size_t>(width);
  const size_t num_w = std::to_string(k).size(), cw = names ? name_cw : std::max(num_w, count_w);
  const size_t label_w = names ? w : num_w + 1 + w;
  out += names ? "\nConfusion matrix (rows: true class, columns: predicted)\n"
               : "\nConfusion matrix (rows: true class, columns: predicted, numbered as the rows)\n";
  out += std::string(label_w, ' ');
  for (size_t c = 0; c < k; ++c) {
    std::string head = names ? classes[c] : std::to_string(c + 1);
    out += " " + std::string(cw - std::min(cw, head.size()), ' ') + head;
  }
  out += "\n";
  for (size_t r = 0; r < k; ++r) {
    if (names)
      std::snprintf(buf, sizeof buf, "%-*s", static_cast<int>(w), classes[r].c_str());
    else
      std::snprintf(buf, sizeof buf, "%*zu %-*s", static_cast<int>(num_w), r + 1, static_cast<int>(w),
                    classes[r].c_str());
    out += buf;
    for (int64_t v : m[r]) {
      std::snprintf(buf, sizeof buf, " %*lld", static_cast<int>(cw), static_cast<long long>(v));
      out += buf;
    }
    out += "\n";
  }
  return out;
}

}  // namespace dlt
