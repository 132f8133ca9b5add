// The verbose table and the progress bar fit the terminal: MATLAB's wide table unchanged at
// 120 columns, the compact one <= 80 with every column, the bar never wider than columns - 1.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <sstream>

#include "train/progress.h"
#include "util/terminal.h"

using namespace dlt;

namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

IterationRecord full_record() {
  IterationRecord r;
  r.epoch = 12;
  r.iteration = 1234567;
  r.seconds = 3 * 3600 + 25 * 60 + 7;
  r.minibatch_accuracy = 100;
  r.validation_accuracy = 99.99;
  r.minibatch_loss = 0.123456;
  r.validation_loss = 2.5;
  r.learn_rate = 0.001;
  return r;
}

}  // namespace

TEST_CASE("wide table is MATLAB's, 120 columns", "[train][progress]") {
  const TableLayout w = TableLayout::kWide;
  CHECK(table_rule(w) == "|" + std::string(118, '=') + "|\n");
  CHECK(table_heading(w) ==
        "|  Epoch  |  Iteration  |  Time Elapsed  |  Mini-batch  |  Validation  |  Mini-batch  |  Validation  |  Base "
        "Learning  |\n"
        "|         |             |   (hh:mm:ss)   |   Accuracy   |   Accuracy   |     Loss     |     Loss     |      "
        "Rate       |\n");
  IterationRecord r = full_record();
  CHECK(table_row(w, r) ==
        "|      12 |     1234567 |       03:25:07 |      100.00% |       99.99% |       0.1235 |       2.5000 |        "
        "  0.0010 |\n");
  r.validation_accuracy = r.validation_loss = std::numeric_limits<double>::quiet_NaN();
  CHECK(table_row(w, r).size() == 121);  // blank validation cells keep the columns
}

TEST_CASE("compact table fits 80 columns with MATLAB's columns", "[train][progress]") {
  const TableLayout c = TableLayout::kCompact;
  std::vector<std::string> lines = lines_of(table_rule(c) + table_heading(c) + table_rule(c));
  IterationRecord r = full_record();
  lines.push_back(lines_of(table_row(c, r))[0]);
  CHECK(lines[4] == "|    12 |   1234567 | 03:25:07 | 100.00% |  99.99% | 0.1235 | 2.5000 | 0.0010 |");
  r.minibatch_loss = 123.456789;  // a diverging loss loses decimals, not alignment
  r.validation_loss = 98765.4;
  r.learn_rate = 12.5;
  lines.push_back(lines_of(table_row(c, r))[0]);
  CHECK(lines[5] == "|    12 |   1234567 | 03:25:07 | 100.00% |  99.99% | 123.46 |  98765 | 12.500 |");
  r.minibatch_loss = 12345678;
  lines.push_back(lines_of(table_row(c, r))[0]);
  CHECK(lines[6].find("|  1e+07 |") != std::string::npos);
  for (const auto& l : lines) {
    INFO(l);
    CHECK(l.size() == 79);
    CHECK(l.front() == '|');
    CHECK(l.back() == '|');
  }
  CHECK(lines[1] == "| Epoch | Iteration |   Time   |  Batch  |   Val   | Batch  |  Val   |  Base  |");
  CHECK(lines[2] == "|       |           | Elapsed  |  Acc.   |  Acc.   |  Loss  |  Loss  |   LR   |");
}

TEST_CASE("table layout follows the option and the width", "[train][progress]") {
  CHECK(choose_table_layout(VerboseLayout::kAuto, 80) == TableLayout::kCompact);
  CHECK(choose_table_layout(VerboseLayout::kAuto, 119) == TableLayout::kCompact);
  CHECK(choose_table_layout(VerboseLayout::kAuto, 120) == TableLayout::kWide);
  CHECK(choose_table_layout(VerboseLayout::kAuto, 200) == TableLayout::kWide);
  CHECK(choose_table_layout(VerboseLayout::kWide, 80) == TableLayout::kWide);
  CHECK(choose_table_layout(VerboseLayout::kCompact, 200) == TableLayout::kCompact);
}

TEST_CASE("progress bar never exceeds the width", "[train][progress]") {
  // Before: 81 characters at 240 iterations, so an 80-column terminal wrapped every redraw.
  std::string b = format_bar(120, 240, 60, 80);
  CHECK(b == "[===================>                   ]  50%  iteration 120/240  ETA 00:01:00");
  CHECK(b.size() == 79);
  CHECK(format_bar(240, 240, 60, 200) ==
        "[========================================] 100%  iteration 240/240  ETA 00:00:00");
  for (int columns : {1, 2, 5, 10, 15, 20, 30, 40, 60, 79, 80, 81, 100, 140, 300}) {
    for (auto [it, total] :
         {std::pair<int64_t, int64_t>{1, 1}, {1234567, 9999999}, {9999999, 9999999}, {0, 123456789012}}) {
      std::string s = format_bar(it, total, 1e6, columns);
      INFO(columns << " columns, " << it << "/" << total << ": '" << s << "'");
      CHECK(s.size() <= static_cast<size_t>(std::max(columns - 1, 1)));
      CHECK(!s.empty());
      CHECK(s.find('\n') == std::string::npos);
    }
  }
  // Parts go in order: the word, the ETA, the counts; the bar keeps at least 10 cells, and
  // below that the numbers that fit are shown whole.
  CHECK(format_bar(1234567, 9999999, 100, 60) == "[=>         ]  12%  iteration 1234567/9999999  ETA 00:11:50");
  CHECK(format_bar(1234567, 9999999, 100, 58) == "[==>                ]  12%  1234567/9999999  ETA 00:11:50");
  CHECK(format_bar(1234567, 9999999, 100, 40) == "[=>             ]  12%  1234567/9999999");
  CHECK(format_bar(1234567, 9999999, 100, 20) == "[=>          ]  12%");
  CHECK(format_bar(1234567, 9999999, 100, 16) == "12% 1234567");
  CHECK(format_bar(1234567, 9999999, 100, 5) == "12%");
  CHECK(format_bar(1234567, 9999999, 100, 3) == "12");
}

TEST_CASE("terminal width falls back to COLUMNS, then 80", "[util][progress]") {
  FILE* f = std::tmpfile();  // not a terminal
  REQUIRE(f);
  const char* saved = std::getenv("COLUMNS");
  std::string keep = saved ? saved : "";
  ::setenv("COLUMNS", "132", 1);
  CHECK(terminal_columns(f) == 132);
  ::setenv("COLUMNS", "abc", 1);
  CHECK(terminal_columns(f) == 80);
  ::unsetenv("COLUMNS");
  CHECK(terminal_columns(f) == 80);
  CHECK(!is_terminal(f));
  // The table measures its own stream: 132 columns -> wide, unset -> compact.
  ::setenv("COLUMNS", "132", 1);
  CHECK(ProgressTable(true, true, VerboseLayout::kAuto, f, f).layout() == TableLayout::kWide);
  ::unsetenv("COLUMNS");
  CHECK(ProgressTable(true, true, VerboseLayout::kAuto, f, f).layout() == TableLayout::kCompact);
  // Not a terminal: no bar is drawn.
  ProgressTable t(true, true, VerboseLayout::kCompact, f, f);
  t.bar(5, 10, 1);
  CHECK(std::ftell(f) == 0);
  if (saved) ::setenv("COLUMNS", keep.c_str(), 1);
  std::fclose(f);
}

TEST_CASE("regression and multi-label runs show RMSE and F1 in the accuracy columns", "[train][progress]") {
  const TableLayout w = TableLayout::kWide, c = TableLayout::kCompact;
  const HeadlineMetric rmse = headline_metric("regression");
  CHECK(rmse.name == "rmse");
  CHECK(!rmse.percent);
  CHECK(headline_metric("multilabel").name == "f1");
  CHECK(headline_metric("segmentation").name == "accuracy");
  CHECK(table_heading(w, rmse) ==
        "|  Epoch  |  Iteration  |  Time Elapsed  |  Mini-batch  |  Validation  |  Mini-batch  |  Validation  |  Base "
        "Learning  |\n"
        "|         |             |   (hh:mm:ss)   |     RMSE     |     RMSE     |     Loss     |     Loss     |      "
        "Rate       |\n");
  IterationRecord r = full_record();
  r.minibatch_accuracy = 12.3456;
  r.validation_accuracy = 7.5;
  const std::string row = table_row(w, r, rmse);
  CHECK(row.find("|      12.3456 |       7.5000 |") != std::string::npos);
  CHECK(row.size() == 121);
  CHECK(lines_of(table_heading(c, rmse))[1].find("RMSE") != std::string::npos);
  CHECK(log_csv_header({"mae", "mape"}, rmse) ==
        "epoch,iteration,time_elapsed_seconds,minibatch_rmse,validation_rmse,minibatch_loss,validation_loss,"
        "base_learning_rate,validation_mae,validation_mape\n");
  CHECK(metric_columns({"rmse", "mae", "mape"}, "rmse") == std::vector<std::string>{"mae", "mape"});
}
