#include "train/multilabel_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

#include "util/csv.h"
#include "util/json.h"

namespace dlt {

namespace {

double ratio(int64_t a, int64_t b) { return b ? static_cast<double>(a) / static_cast<double>(b) : NAN; }

}  // namespace

double average_precision(const std::vector<float>& scores, const std::vector<uint8_t>& truth) {
  if (scores.size() != truth.size()) throw std::invalid_argument("average_precision: sizes differ");
  const int64_t positives = std::count_if(truth.begin(), truth.end(), [](uint8_t t) { return t != 0; });
  if (positives == 0) return NAN;
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  double ap = 0, last_recall = 0;
  int64_t tp = 0, fp = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    (truth[order[k]] ? tp : fp) += 1;
    // A threshold is a distinct score: its point counts every image scored at least that.
    if (k + 1 < order.size() && scores[order[k + 1]] == scores[order[k]]) continue;
    const double recall = static_cast<double>(tp) / static_cast<double>(positives);
    const double precision = static_cast<double>(tp) / static_cast<double>(tp + fp);
    ap += (recall - last_recall) * precision;
    last_recall = recall;
  }
  return ap;
}

MultiLabelPredictions::MultiLabelPredictions(std::vector<std::string> classes, float threshold)
    : classes_(std::move(classes)), threshold_(threshold) {}

void MultiLabelPredictions::add(const std::string& path, const std::vector<float>& probs,
                                const std::vector<uint8_t>& truth) {
  if (probs.size() != classes_.size() || (!truth.empty() && truth.size() != classes_.size()))
    throw std::invalid_argument("MultiLabelPredictions::add: " + std::to_string(probs.size()) + " scores and " +
                                std::to_string(truth.size()) + " true values for " + std::to_string(classes_.size()) +
                                " classes");
  paths_.push_back(path);
  probs_.push_back(probs);
  truth_.push_back(truth);
}

std::vector<int32_t> MultiLabelPredictions::labels(size_t i) const {
  std::vector<int32_t> out;
  for (size_t c = 0; c < classes_.size(); ++c)
    if (on(i, c)) out.push_back(static_cast<int32_t>(c));
  return out;
}

bool MultiLabelPredictions::labelled() const {
  if (paths_.empty()) return false;
  return std::all_of(truth_.begin(), truth_.end(), [](const std::vector<uint8_t>& t) { return !t.empty(); });
}

std::vector<LabelStats> MultiLabelPredictions::per_label() const {
  std::vector<LabelStats> out;
  for (size_t c = 0; c < classes_.size(); ++c) {
    int64_t tp = 0, fp = 0, fn = 0;
    std::vector<float> scores;
    std::vector<uint8_t> truth;
    for (size_t i = 0; i < paths_.size(); ++i) {
      if (truth_[i].empty()) continue;
      const bool t = truth_[i][c] != 0, y = on(i, c);
      tp += t && y;
      fp += !t && y;
      fn += t && !y;
      scores.push_back(probs_[i][c]);
      truth.push_back(t);
    }
    out.push_back({ratio(tp, tp + fp), ratio(tp, tp + fn), ratio(2 * tp, 2 * tp + fp + fn),
                   average_precision(scores, truth), tp + fn, tp + fp});
  }
  return out;
}

double MultiLabelPredictions::f1_micro() const {
  int64_t tp = 0, fp = 0, fn = 0;
  for (size_t i = 0; i < paths_.size(); ++i) {
    if (truth_[i].empty()) continue;
    for (size_t c = 0; c < classes_.size(); ++c) {
      const bool t = truth_[i][c] != 0, y = on(i, c);
      tp += t && y;
      fp += !t && y;
      fn += t && !y;
    }
  }
  return ratio(2 * tp, 2 * tp + fp + fn);
}

double MultiLabelPredictions::jaccard() const {
  double sum = 0;
  int64_t images = 0;
  for (size_t i = 0; i < paths_.size(); ++i) {
    if (truth_[i].empty()) continue;
    int64_t both = 0, either = 0;
    for (size_t c = 0; c < classes_.size(); ++c) {
      const bool t = truth_[i][c] != 0, y = on(i, c);
      both += t && y;
      either += t || y;
    }
    sum += either ? static_cast<double>(both) / static_cast<double>(either) : 1.0;
    ++images;
  }
  return images ? sum / static_cast<double>(images) : NAN;
}

double MultiLabelPredictions::mean_average_precision() const {
  double sum = 0;
  int64_t n = 0;
  for (const LabelStats& s : per_label())
    if (s.support > 0) {
      sum += s.average_precision;
      ++n;
    }
  return n ? sum / static_cast<double>(n) : NAN;
}

double MultiLabelPredictions::exact_match() const {
  int64_t right = 0, images = 0;
  for (size_t i = 0; i < paths_.size(); ++i) {
    if (truth_[i].empty()) continue;
    bool all = true;
    for (size_t c = 0; c < classes_.size() && all; ++c) all = (truth_[i][c] != 0) == on(i, c);
    right += all;
    ++images;
  }
  return ratio(right, images);
}

std::string MultiLabelPredictions::label_list(size_t i, bool truth) const {
  std::string out;
  for (size_t c = 0; c < classes_.size(); ++c)
    if (truth ? truth_[i][c] != 0 : on(i, c)) out += (out.empty() ? "" : ";") + classes_[c];
  return out;
}

std::string MultiLabelPredictions::csv() const {
  const bool with_truth = labelled();
  std::string out = "path,labels";
  if (with_truth) out += ",true_labels";
  for (const auto& c : classes_) out += "," + csv_field("score_" + c);
  out += "\n";
  char buf[32];
  for (size_t i = 0; i < paths_.size(); ++i) {
    out += csv_field(paths_[i]) + "," + csv_field(label_list(i, false));
    if (with_truth) out += "," + csv_field(label_list(i, true));
    for (float p : probs_[i]) {
      std::snprintf(buf, sizeof buf, ",%.6f", p);
      out += buf;
    }
    out += "\n";
  }
  return out;
}

std::string MultiLabelPredictions::json() const {
  JsonWriter j;
  j.begin_object();
  j.key("classes").begin_array();
  for (const auto& c : classes_) j.value(c);
  j.end_array();
  j.field("threshold", static_cast<double>(threshold_));
  j.key("predictions").begin_array();
  for (size_t i = 0; i < paths_.size(); ++i) {
    j.begin_object().field("path", paths_[i]);
    j.key("labels").begin_array();
    for (int32_t c : labels(i)) j.value(classes_[static_cast<size_t>(c)]);
    j.end_array();
    if (!truth_[i].empty()) {
      j.key("true_labels").begin_array();
      for (size_t c = 0; c < classes_.size(); ++c)
        if (truth_[i][c]) j.value(classes_[c]);
      j.end_array();
    }
    j.key("scores").begin_array();
    for (float p : probs_[i]) j.value(static_cast<double>(p));
    j.end_array().end_object();
  }
  j.end_array();
  if (labelled()) {
    j.field("f1_micro", f1_micro())
        .field("jaccard", jaccard())
        .field("mean_average_precision", mean_average_precision())
        .field("exact_match", exact_match());
    j.key("per_label").begin_array();
    const auto stats = per_label();
    for (size_t c = 0; c < classes_.size(); ++c)
      j.begin_object()
          .field("class", classes_[c])
          .field("precision", stats[c].precision)
          .field("recall", stats[c].recall)
          .field("f1", stats[c].f1)
          .field("average_precision", stats[c].average_precision)
          .field("support", stats[c].support)
          .end_object();
    j.end_array();
  }
  j.end_object();
  return j.str();
}

std::string MultiLabelPredictions::report() const {
  if (!labelled()) return "";
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "\nF1 (micro) %.4f  Jaccard %.4f  mean AP %.4f  exact match %.4f  (%zu images, threshold %g)\n\n",
                f1_micro(), jaccard(), mean_average_precision(), exact_match(), paths_.size(),
                static_cast<double>(threshold_));
  out += buf;
  size_t w = 5;
  for (const auto& c : classes_) w = std::max(w, c.size());
  std::snprintf(buf, sizeof buf, "%-*s %10s %10s %10s %10s %8s\n", static_cast<int>(w), "class", "precision", "recall",
                "F1", "AP", "images");
  out += buf;
  auto frac = [](double v) {  // "-" where undefined
    if (std::isnan(v)) return std::string("-");
    char b[32];
    std::snprintf(b, sizeof b, "%.4f", v);
    return std::string(b);
  };
  const auto stats = per_label();
  for (size_t c = 0; c < classes_.size(); ++c) {
    std::snprintf(buf, sizeof buf, "%-*s %10s %10s %10s %10s %8lld\n", static_cast<int>(w), classes_[c].c_str(),
                  frac(stats[c].precision).c_str(), frac(stats[c].recall).c_str(), frac(stats[c].f1).c_str(),
                  frac(stats[c].average_precision).c_str(), static_cast<long long>(stats[c].support));
    out += buf;
  }
  return out;
}

}  // namespace dlt
