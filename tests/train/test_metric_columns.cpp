// The Metrics option's outputs: log.csv's extra columns after the fixed ones, the table's
// metric line within the table's width, summary.json's validation_metrics and best_validation.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "train/progress.h"
#include "train/run_files.h"

using namespace dlt;

namespace {
IterationRecord validated_record() {
  IterationRecord r;
  r.epoch = 1;
  r.iteration = 50;
  r.seconds = 2;
  r.minibatch_accuracy = 50;
  r.minibatch_loss = 0.5;
  r.validation_accuracy = 75;
  r.validation_loss = 0.25;
  r.learn_rate = 0.01;
  r.validation_metrics = {{"fscore", 0.8125}, {"accuracy", 75}, {"auc", 0.90625}, {"recall", NAN}};
  return r;
}
}  // namespace

TEST_CASE("metric outputs: log.csv columns follow the fixed ones, accuracy not twice", "[progress]") {
  const std::vector<std::string> cols = metric_columns({"fscore", "accuracy", "auc", "recall"});
  CHECK(cols == std::vector<std::string>{"fscore", "auc", "recall"});
  CHECK(log_csv_header(cols) ==
        "epoch,iteration,time_elapsed_seconds,minibatch_accuracy,validation_accuracy,minibatch_loss,validation_loss,"
        "base_learning_rate,validation_fscore,validation_auc,validation_recall\n");
  CHECK(log_csv_header() ==
        "epoch,iteration,time_elapsed_seconds,minibatch_accuracy,validation_accuracy,minibatch_loss,validation_loss,"
        "base_learning_rate\n");
  const IterationRecord r = validated_record();
  CHECK(log_csv_line(r, cols) == "1,50,2.000,50,75,0.5,0.25,0.01,0.8125,0.90625,\n");  // NaN: empty
  CHECK(log_csv_line(r) == "1,50,2.000,50,75,0.5,0.25,0.01\n");
  IterationRecord plain = r;
  plain.validation_metrics.clear();
  plain.validation_accuracy = plain.validation_loss = NAN;
  CHECK(log_csv_line(plain, cols) == "1,50,2.000,50,,0.5,,0.01,,,\n");
  IterationLog log;
  log.set_metric_columns(cols);
  log.add(r);
  log.add(plain);
  CHECK(log.csv() == log_csv_header(cols) + log_csv_line(r, cols) + log_csv_line(plain, cols));
  CHECK(validation_metric(r, "auc") == 0.90625);
  CHECK(std::isnan(validation_metric(r, "precision")));
}

TEST_CASE("metric outputs: the table's metric line keeps the table's width", "[progress]") {
  const IterationRecord r = validated_record();
  for (TableLayout layout : {TableLayout::kWide, TableLayout::kCompact}) {
    const size_t width = table_rule(layout).size();  // with its newline
    const std::string text = table_metrics(layout, r);
    REQUIRE_FALSE(text.empty());
    for (size_t at = 0; at < text.size();) {
      const size_t end = text.find('\n', at);
      CHECK(end - at + 1 == width);
      CHECK(text[at] == '|');
      CHECK(text[end - 1] == '|');
      at = end + 1;
    }
    CHECK(text.find("accuracy") == std::string::npos);  // the Accuracy column has it
    CHECK(text.find("fscore 0.8125") != std::string::npos);
    CHECK(text.find("auc 0.9062") != std::string::npos);
    CHECK(text.find("recall NaN") != std::string::npos);
  }
  CHECK(table_metrics(TableLayout::kWide, r) ==
        "|  Validation  fscore 0.8125  auc 0.9062  recall NaN" + std::string(118 - 51, ' ') + "|\n");
  // All five metrics fill the compact table's 77 inner columns exactly (values are at most 6
  // characters); more would wrap.
  IterationRecord many = r;
  many.validation_metrics = {{"fscore", 0.5}, {"precision", 0.5}, {"recall", 0.5}, {"auc", 0.5}, {"iou", 0.5}};
  CHECK(table_metrics(TableLayout::kCompact, many) ==
        "|  Val  fscore 0.5000  precision 0.5000  recall 0.5000  auc 0.5000  iou 0.5000|\n");
  many.validation_metrics.back().second = NAN;  // "iou NaN" is shorter: still one line
  CHECK(table_metrics(TableLayout::kCompact, many).size() == 80);
  many.validation_metrics.back() = {"ious", 0.5};  // a longer name (none is yet) wraps
  CHECK(table_metrics(TableLayout::kCompact, many) ==
        "|  Val  fscore 0.5000  precision 0.5000  recall 0.5000  auc 0.5000" + std::string(77 - 65, ' ') + "|\n" +
            "|       ious 0.5000" + std::string(77 - 18, ' ') + "|\n");
  IterationRecord none = r;
  none.validation_metrics = {{"accuracy", 75}};
  CHECK(table_metrics(TableLayout::kWide, none).empty());
}

TEST_CASE("metric outputs: summary.json's validation_metrics and best_validation", "[progress]") {
  IterationLog log;
  log.add(validated_record());
  RunFiles f;
  f.status = RunStatus::kCompleted;
  f.log = &log;
  f.validation_metrics = {{"fscore", 0.8125}, {"auc", 0.5}};
  std::string json = summary_json(f);
  CHECK(json.find("\"validation_metrics\":{\"fscore\":0.8125,\"auc\":0.5}") != std::string::npos);
  CHECK(json.find("best_validation") == std::string::npos);
  f.objective_metric = "fscore";
  f.best_objective = 0.8125;
  f.best_iteration = 50;
  json = summary_json(f);
  CHECK(json.find("\"best_validation\":{\"metric\":\"fscore\",\"value\":0.8125,\"iteration\":50}") !=
        std::string::npos);
}

TEST_CASE("metric outputs: the plot's series carry the log's metric columns per check", "[progress]") {
  IterationLog log;
  log.set_metric_columns({"fscore", "auc"});
  IterationRecord a = validated_record(), b = validated_record(), c = validated_record();
  b.iteration = 51;
  b.validation_accuracy = b.validation_loss = NAN;
  b.validation_metrics.clear();
  c.iteration = 52;
  c.validation_metrics = {{"auc", 0.75}};  // no fscore at this check
  log.add(a);
  log.add(b);
  log.add(c);
  const ProgressSeries s = progress_series(log);
  REQUIRE(s.val_iteration == std::vector<double>{50, 52});
  REQUIRE(s.val_metrics.size() == 2);
  CHECK(s.val_metrics[0].first == "fscore");
  CHECK(s.val_metrics[0].second[0] == 0.8125);
  CHECK(std::isnan(s.val_metrics[0].second[1]));
  CHECK(s.val_metrics[1].first == "auc");
  CHECK(s.val_metrics[1].second == std::vector<double>{0.90625, 0.75});
}
