// MATLAB's verbose training table, the per-iteration log (log.csv) and a terminal progress
// bar with ETA (only when stderr is a terminal). Both fit the terminal: the bar is redrawn in
// place and never wider than the terminal; the table has MATLAB's 120-column layout and a
// compact one with the same columns in 79 (chosen by width, or by TrainingOptions.VerboseLayout).
#pragma once
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "config/options.h"

namespace dlt {

// The metric shown beside the loss in the table, log.csv, TensorBoard, the plot and
// summary.json (IterationRecord's minibatch_accuracy / validation_accuracy and
// Evaluation::accuracy hold its values): accuracy in percent for classification and
// segmentation (pixel accuracy), RMSE for regression, F1 (0..1, micro over labels and images)
// for multi-label classification. name: log.csv's minibatch_<name> / validation_<name> and
// the TensorBoard tags; heading / compact: the table's second heading line.
struct HeadlineMetric {
  std::string name = "accuracy";
  std::string heading = "Accuracy";
  std::string compact = "Acc.";
  bool percent = true;
};
// The headline of a task (Network::task(): classification, segmentation, regression, multilabel).
HeadlineMetric headline_metric(const std::string& task);

struct IterationRecord {
  int64_t epoch = 0;      // 1-based
  int64_t iteration = 0;  // 1-based, global
  double seconds = 0;
  double minibatch_accuracy = 0;  // percent
  double minibatch_loss = 0;
  double validation_accuracy = std::numeric_limits<double>::quiet_NaN();  // NaN: not computed
  double validation_loss = std::numeric_limits<double>::quiet_NaN();      // at this iteration
  double learn_rate = 0;                                                  // the rate used at this iteration
  // The Metrics option's values (name, value) in its order, at iterations where validation
  // ran; empty otherwise (validation_metrics.h defines them).
  std::vector<std::pair<std::string, double>> validation_metrics;
  double images_per_second = std::numeric_limits<double>::quiet_NaN();  // the step's; NaN: not measured
};

// The value of the named validation metric in r, NaN when it has none.
double validation_metric(const IterationRecord& r, const std::string& name);

std::string format_hms(double seconds);  // "00:01:05"

// kWide: MATLAB's table, 120 characters a line. kCompact: the same columns with abbreviated
// headings (Batch = Mini-batch, Val = Validation, Base LR = Base Learning Rate), 79 a line.
enum class TableLayout { kWide, kCompact };
constexpr int kWideTableColumns = 120;
// VerboseLayout auto is wide when `columns` >= kWideTableColumns.
TableLayout choose_table_layout(VerboseLayout option, int columns);

// The table's lines, each ending in '\n': the rule (====), the two heading lines, a row.
std::string table_rule(TableLayout layout);
std::string table_heading(TableLayout layout, const HeadlineMetric& headline = {});
std::string table_row(TableLayout layout, const IterationRecord& r, const HeadlineMetric& headline = {});
// The row's validation metrics beyond accuracy ("|  Validation  fscore 0.8123  auc 0.9512 |"),
// on lines of the table's own width below the row, wrapped between metrics; "" when it has none.
std::string table_metrics(TableLayout layout, const IterationRecord& r, const std::string& headline = "accuracy");

// The progress bar line for a terminal `columns` wide, without the leading '\r': at most
// columns - 1 characters (the last column stays free so a redraw never wraps). Parts are
// dropped as the width shrinks: the word "iteration", then the ETA, then the counts.
std::string format_bar(int64_t iteration, int64_t total, double elapsed, int columns);

class ProgressTable {
 public:
  // layout auto measures `out` (terminal_columns). The bar goes to
  // `bar_out` when that is a terminal.
  ProgressTable(bool verbose, bool has_validation, VerboseLayout layout = VerboseLayout::kAuto, FILE* out = stdout,
                FILE* bar_out = stderr, HeadlineMetric headline = {});
  void header();
  void row(const IterationRecord& r);
  void footer();
  // Redraws the progress bar in place, sized to the terminal's current width.
  void bar(int64_t iteration, int64_t total, double elapsed);
  void clear_bar();
  TableLayout layout() const { return layout_; }

 private:
  bool verbose_, has_validation_, tty_;
  TableLayout layout_;
  HeadlineMetric headline_;
  FILE *out_, *bar_out_;
  size_t bar_chars_ = 0;  // length of the bar on screen; 0: none
};

// The metrics that get log.csv columns of their own, validation_<name>, after the fixed ones:
// those of `metrics` (metric names) but the headline, which has its column already.
std::vector<std::string> metric_columns(const std::vector<std::string>& metrics,
                                        const std::string& headline = "accuracy");
// log.csv's header line, with its newline.
std::string log_csv_header(const std::vector<std::string>& metric_columns = {}, const HeadlineMetric& headline = {});
// One log.csv row for r, with its newline (IterationLog::csv and the live log both use it):
// the fixed columns, then r's value of each of metric_columns (empty where it has none).
std::string log_csv_line(const IterationRecord& r, const std::vector<std::string>& metric_columns = {});

// log.csv: one row per iteration with the table's columns, then one per metric column.
class IterationLog {
 public:
  void add(const IterationRecord& r);
  std::string csv() const;
  const std::vector<IterationRecord>& records() const { return records_; }
  void set(std::vector<IterationRecord> records) { records_ = std::move(records); }
  const std::vector<std::string>& metric_columns() const { return metric_columns_; }
  void set_metric_columns(std::vector<std::string> columns) { metric_columns_ = std::move(columns); }
  const HeadlineMetric& headline() const { return headline_; }
  void set_headline(HeadlineMetric headline) { headline_ = std::move(headline); }

 private:
  std::vector<IterationRecord> records_;
  std::vector<std::string> metric_columns_;
  HeadlineMetric headline_;
};

}  // namespace dlt
