#include "train/progress.h"

#include <algorithm>
#include <cmath>

#include "util/terminal.h"

namespace dlt {

std::string format_hms(double seconds) {
  int64_t s = static_cast<int64_t>(seconds);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  return buf;
}

namespace {

// A column of the table: content width and its two heading lines.
struct Column {
  int width;
  const char* line1;
  const char* line2;
};
constexpr int kNumColumns = 8;
const Column kWide[kNumColumns] = {  // MATLAB's table
    {7, "Epoch", ""},
    {11, "Iteration", ""},
    {14, "Time Elapsed", "(hh:mm:ss)"},
    {12, "Mini-batch", "Accuracy"},
    {12, "Validation", "Accuracy"},
    {12, "Mini-batch", "Loss"},
    {12, "Validation", "Loss"},
    {15, "Base Learning", "Rate"}};
const Column kCompact[kNumColumns] = {  // the same columns in 79 characters
    {5, "Epoch", ""},   {9, "Iteration", ""}, {8, "Time", "Elapsed"}, {7, "Batch", "Acc."},
    {7, "Val", "Acc."}, {6, "Batch", "Loss"}, {6, "Val", "Loss"},     {6, "Base", "LR"}};

const Column* columns_of(TableLayout layout) { return layout == TableLayout::kWide ? kWide : kCompact; }

std::string centred(const std::string& s, size_t width) {
  if (s.size() >= width) return s;
  size_t left = (width - s.size()) / 2;
  return std::string(left, ' ') + s + std::string(width - s.size() - left, ' ');
}

// "| a | b |\n" with each cell right-aligned in its column's width.
std::string table_line(TableLayout layout, const std::string (&cells)[kNumColumns], bool centre) {
  const Column* cols = columns_of(layout);
  std::string out = "|";
  for (int i = 0; i < kNumColumns; ++i) {
    size_t w = static_cast<size_t>(cols[i].width);
    const std::string& c = cells[i];
    if (centre)
      out += centred(c, w + 2);
    else
      out += " " + (c.size() < w ? std::string(w - c.size(), ' ') + c : c) + " ";
    out += "|";
  }
  return out + "\n";
}

std::string pct(double v) {
  if (std::isnan(v)) return "";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f%%", v);
  return b;
}

// v with 4 decimals, fewer when that is wider than `width` ("0.1235", "123.46", "12346").
std::string num(double v, int width) {
  if (std::isnan(v)) return "";
  char b[64];
  for (int decimals = 4; decimals >= 0; --decimals) {
    std::snprintf(b, sizeof b, "%.*f", decimals, v);
    if (static_cast<int>(std::char_traits<char>::length(b)) <= width) return b;
  }
  std::snprintf(b, sizeof b, "%.0e", v);  // 1e+07
  return b;
}

}  // namespace

HeadlineMetric headline_metric(const std::string& task) {
  if (task == "regression") return {"rmse", "RMSE", "RMSE", false};
  if (task == "multilabel") return {"f1", "F1", "F1", false};
  return {};
}

TableLayout choose_table_layout(VerboseLayout option, int columns) {
  if (option == VerboseLayout::kWide) return TableLayout::kWide;
  if (option == VerboseLayout::kCompact) return TableLayout::kCompact;
  return columns >= kWideTableColumns ? TableLayout::kWide : TableLayout::kCompact;
}

std::string table_rule(TableLayout layout) {
  size_t inner = 0;
  for (int i = 0; i < kNumColumns; ++i) inner += static_cast<size_t>(columns_of(layout)[i].width) + 3;
  return "|" + std::string(inner - 1, '=') + "|\n";
}

std::string table_heading(TableLayout layout, const HeadlineMetric& headline) {
  const Column* cols = columns_of(layout);
  std::string l1[kNumColumns], l2[kNumColumns];
  for (int i = 0; i < kNumColumns; ++i) l1[i] = cols[i].line1, l2[i] = cols[i].line2;
  l2[3] = l2[4] = layout == TableLayout::kWide ? headline.heading : headline.compact;
  return table_line(layout, l1, true) + table_line(layout, l2, true);
}

std::string table_row(TableLayout layout, const IterationRecord& r, const HeadlineMetric& headline) {
  const Column* cols = columns_of(layout);
  auto metric = [&](double v, int width) { return headline.percent ? pct(v) : num(v, width); };
  const std::string cells[kNumColumns] = {std::to_string(r.epoch),
                                          std::to_string(r.iteration),
                                          format_hms(r.seconds),
                                          metric(r.minibatch_accuracy, cols[3].width),
                                          metric(r.validation_accuracy, cols[4].width),
                                          num(r.minibatch_loss, cols[5].width),
                                          num(r.validation_loss, cols[6].width),
                                          num(r.learn_rate, cols[7].width)};
  return table_line(layout, cells, false);
}

double validation_metric(const IterationRecord& r, const std::string& name) {
  for (const auto& [n, v] : r.validation_metrics)
    if (n == name) return v;
  return std::numeric_limits<double>::quiet_NaN();
}

std::string table_metrics(TableLayout layout, const IterationRecord& r, const std::string& headline) {
  const size_t inner = table_rule(layout).size() - 3;  // between the two '|'
  const std::string lead = layout == TableLayout::kWide ? "  Validation" : "  Val";
  std::string out, line = lead;
  for (const auto& [name, value] : r.validation_metrics) {
    if (name == headline) continue;  // the headline's column
    const std::string item = "  " + name + " " + (std::isnan(value) ? std::string("NaN") : num(value, 6));
    if (line.size() + item.size() > inner && line != lead) {
      out += "|" + line + std::string(inner - line.size(), ' ') + "|\n";
      line = std::string(lead.size(), ' ');
    }
    line += item;
  }
  if (line.size() == lead.size()) return out;
  if (line.size() > inner) line.resize(inner);  // one metric wider than the table: never here
  return out + "|" + line + std::string(inner - line.size(), ' ') + "|\n";
}

std::string format_bar(int64_t iteration, int64_t total, double elapsed, int columns) {
  const size_t budget = static_cast<size_t>(std::max(columns - 1, 1));
  constexpr size_t kMaxBar = 40, kMinBar = 10;
  const double f = total > 0 ? std::clamp(static_cast<double>(iteration) / static_cast<double>(total), 0.0, 1.0) : 0;
  const double eta = iteration > 0 ? elapsed / static_cast<double>(iteration) *
                                         static_cast<double>(std::max<int64_t>(total - iteration, 0))
                                   : 0;
  char p[16];
  std::snprintf(p, sizeof p, " %3d%%", static_cast<int>(f * 100));
  const std::string counts = std::to_string(iteration) + "/" + std::to_string(total);
  const std::string eta_text = "  ETA " + format_hms(eta);
  // The text after the bar, from the most to the least informative.
  const std::string tails[] = {std::string(p) + "  iteration " + counts + eta_text,
                               std::string(p) + "  " + counts + eta_text, std::string(p) + "  " + counts,
                               std::string(p)};
  for (const std::string& tail : tails) {
    if (tail.size() + 2 + kMinBar > budget) continue;
    const size_t width = std::min(kMaxBar, budget - tail.size() - 2);
    const size_t filled = static_cast<size_t>(f * static_cast<double>(width));
    std::string b(filled, '=');
    if (filled < width) b += '>';
    b.resize(width, ' ');
    return "[" + b + "]" + tail;
  }
  // Too narrow for a bar: the numbers that fit, never a number cut short.
  const std::string percent = std::to_string(static_cast<int>(f * 100)) + "%";
  for (const std::string& s : {percent + " " + counts, percent + " " + std::to_string(iteration), percent})
    if (s.size() <= budget) return s;
  return percent.substr(0, budget);
}

ProgressTable::ProgressTable(bool verbose, bool has_validation, VerboseLayout layout, FILE* out, FILE* bar_out,
                             HeadlineMetric headline)
    : verbose_(verbose),
      has_validation_(has_validation),
      tty_(is_terminal(bar_out)),
      layout_(choose_table_layout(layout, terminal_columns(out))),
      headline_(std::move(headline)),
      out_(out),
      bar_out_(bar_out) {}

void ProgressTable::header() {
  if (!verbose_) return;
  std::fputs((table_rule(layout_) + table_heading(layout_, headline_) + table_rule(layout_)).c_str(), out_);
  std::fflush(out_);
}

void ProgressTable::row(const IterationRecord& r) {
  if (!verbose_) return;
  clear_bar();
  std::fputs((table_row(layout_, r, headline_) + table_metrics(layout_, r, headline_.name)).c_str(), out_);
  std::fflush(out_);
}

void ProgressTable::footer() {
  if (!verbose_) return;
  clear_bar();
  std::fputs(table_rule(layout_).c_str(), out_);
  std::fflush(out_);
}

void ProgressTable::bar(int64_t iteration, int64_t total, double elapsed) {
  if (!tty_ || total <= 0) return;
  // Measured on every redraw: the terminal may have been resized.
  const int columns = terminal_columns(bar_out_);
  const std::string line = format_bar(iteration, total, elapsed, columns);
  // Blank what is left of a longer previous bar, within the current width.
  const size_t old = std::min(bar_chars_, static_cast<size_t>(std::max(columns - 1, 1)));
  const int stale = old > line.size() ? static_cast<int>(old - line.size()) : 0;
  std::fprintf(bar_out_, "\r%s%*s", line.c_str(), stale, "");
  if (stale) std::fprintf(bar_out_, "\r%s", line.c_str());
  std::fflush(bar_out_);
  bar_chars_ = line.size();
}

void ProgressTable::clear_bar() {
  if (bar_chars_ == 0) return;
  const size_t n = std::min(bar_chars_, static_cast<size_t>(std::max(terminal_columns(bar_out_) - 1, 1)));
  std::fprintf(bar_out_, "\r%*s\r", static_cast<int>(n), "");
  std::fflush(bar_out_);
  bar_chars_ = 0;
}

void IterationLog::add(const IterationRecord& r) { records_.push_back(r); }

std::vector<std::string> metric_columns(const std::vector<std::string>& metrics, const std::string& headline) {
  std::vector<std::string> out;
  for (const auto& m : metrics)
    if (m != headline) out.push_back(m);
  return out;
}

std::string log_csv_header(const std::vector<std::string>& metric_columns, const HeadlineMetric& headline) {
  std::string h = "epoch,iteration,time_elapsed_seconds,minibatch_" + headline.name + ",validation_" + headline.name +
                  ",minibatch_loss,validation_loss,base_learning_rate";
  for (const auto& m : metric_columns) h += ",validation_" + m;
  return h + "\n";
}

std::string log_csv_line(const IterationRecord& r, const std::vector<std::string>& metric_columns) {
  auto opt = [](double v) {
    if (std::isnan(v)) return std::string();
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return std::string(b);
  };
  char buf[256];
  std::snprintf(buf, sizeof buf, "%lld,%lld,%.3f,%s,%s,%s,%s,%s\n", static_cast<long long>(r.epoch),
                static_cast<long long>(r.iteration), r.seconds, opt(r.minibatch_accuracy).c_str(),
                opt(r.validation_accuracy).c_str(), opt(r.minibatch_loss).c_str(), opt(r.validation_loss).c_str(),
                opt(r.learn_rate).c_str());
  std::string line = buf;
  line.pop_back();
  for (const auto& m : metric_columns) line += "," + opt(validation_metric(r, m));
  return line + "\n";
}

std::string IterationLog::csv() const {
  std::string out = log_csv_header(metric_columns_, headline_);
  for (const auto& r : records_) out += log_csv_line(r, metric_columns_);
  return out;
}

}  // namespace dlt
