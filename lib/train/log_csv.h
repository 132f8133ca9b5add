// log.csv while a run trains: created as training starts (its header, with the log's metric
// columns, and the rows a resumed run restored) and one row appended per iteration, each in a
// single write(2), so that a reader (a shell loop, a spreadsheet) sees whole rows. Rank 0 only;
// write_run_files (run_files.h) writes the final log.csv when the run ends.
#pragma once
#include <string>
#include <vector>

#include "train/progress.h"

namespace dlt {

class LogCsv {
 public:
  // Creates dir and writes dir/log.csv from log (temporary name, then renamed), then opens it
  // for appending. Throws Error naming the file that cannot be written.
  LogCsv(const std::string& dir, const IterationLog& log);
  ~LogCsv();
  LogCsv(const LogCsv&) = delete;
  LogCsv& operator=(const LogCsv&) = delete;

  // Appends r as one line in a single write(2), unbuffered: a reader sees whole rows, and at
  // most a last line still without its newline (never a short row as a whole one).
  void append(const IterationRecord& r);

 private:
  std::string path_;
  std::vector<std::string> metric_columns_;  // the validation_<metric> columns (the log's)
  int fd_ = -1;
};

}  // namespace dlt
