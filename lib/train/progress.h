// MATLAB's verbose training table, the per-iteration log (log.csv) and a terminal progress
// bar with ETA (only when stderr is a terminal).
#pragma once
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace dlt {

struct IterationRecord {
  int64_t epoch = 0;      // 1-based
  int64_t iteration = 0;  // 1-based, global
  double seconds = 0;
  double minibatch_accuracy = 0;  // percent
  double minibatch_loss = 0;
  double validation_accuracy = std::numeric_limits<double>::quiet_NaN();  // NaN: not computed
  double validation_loss = std::numeric_limits<double>::quiet_NaN();       // at this iteration
  double learn_rate = 0;
};

std::string format_hms(double seconds);  // "00:01:05"

class ProgressTable {
 public:
  ProgressTable(bool verbose, bool has_validation, FILE* out = stdout);
  void header();
  void row(const IterationRecord& r);
  void footer();
  // Redraws the progress bar on stderr when it is a terminal (no-op otherwise).
  void bar(int64_t iteration, int64_t total, double elapsed);
  void clear_bar();

 private:
  bool verbose_, has_validation_, tty_;
  FILE* out_;
  bool bar_shown_ = false;
};

// log.csv: one row per iteration with the table's columns.
class IterationLog {
 public:
  void add(const IterationRecord& r);
  std::string csv() const;
  const std::vector<IterationRecord>& records() const { return records_; }
  void set(std::vector<IterationRecord> records) { records_ = std::move(records); }

 private:
  std::vector<IterationRecord> records_;
};

}  // namespace dlt
