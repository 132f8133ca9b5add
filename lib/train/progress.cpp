#include "train/progress.h"

#include <unistd.h>

#include <cmath>

namespace dlt {

std::string format_hms(double seconds) {
  int64_t s = static_cast<int64_t>(seconds);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  return buf;
}

ProgressTable::ProgressTable(bool verbose, bool has_validation, FILE* out)
    : verbose_(verbose), has_validation_(has_validation), tty_(::isatty(2) != 0), out_(out) {}

namespace {
const char* kRule =
    "|======================================================================================================================|\n";
std::string pct(double v) {
  if (std::isnan(v)) return "";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f%%", v);
  return b;
}
std::string num(double v) {
  if (std::isnan(v)) return "";
  char b[32];
  std::snprintf(b, sizeof b, "%.4f", v);
  return b;
}
}  // namespace

void ProgressTable::header() {
  if (!verbose_) return;
  std::fputs(kRule, out_);
  std::fprintf(out_, "|  Epoch  |  Iteration  |  Time Elapsed  |  Mini-batch  |  Validation  |  Mini-batch  |  Validation  |  Base Learning  |\n");
  std::fprintf(out_, "|         |             |   (hh:mm:ss)   |   Accuracy   |   Accuracy   |     Loss     |     Loss     |      Rate       |\n");
  std::fputs(kRule, out_);
  std::fflush(out_);
}

void ProgressTable::row(const IterationRecord& r) {
  if (!verbose_) return;
  clear_bar();
  std::fprintf(out_, "| %7lld | %11lld | %14s | %12s | %12s | %12s | %12s | %15s |\n", static_cast<long long>(r.epoch),
               static_cast<long long>(r.iteration), format_hms(r.seconds).c_str(), pct(r.minibatch_accuracy).c_str(),
               pct(r.validation_accuracy).c_str(), num(r.minibatch_loss).c_str(), num(r.validation_loss).c_str(),
               num(r.learn_rate).c_str());
  std::fflush(out_);
}

void ProgressTable::footer() {
  if (!verbose_) return;
  clear_bar();
  std::fputs(kRule, out_);
  std::fflush(out_);
}

void ProgressTable::bar(int64_t iteration, int64_t total, double elapsed) {
  if (!tty_ || total <= 0) return;
  double f = static_cast<double>(iteration) / static_cast<double>(total);
  int width = 40, filled = static_cast<int>(f * width);
  std::string b(static_cast<size_t>(filled), '=');
  if (filled < width) b += '>';
  b.resize(static_cast<size_t>(width), ' ');
  double eta = iteration > 0 ? elapsed / static_cast<double>(iteration) * static_cast<double>(total - iteration) : 0;
  std::fprintf(stderr, "\r[%s] %3d%%  iteration %lld/%lld  ETA %s ", b.c_str(), static_cast<int>(f * 100),
               static_cast<long long>(iteration), static_cast<long long>(total), format_hms(eta).c_str());
  std::fflush(stderr);
  bar_shown_ = true;
}

void ProgressTable::clear_bar() {
  if (!bar_shown_) return;
  std::fprintf(stderr, "\r%100s\r", "");
  bar_shown_ = false;
}

void IterationLog::add(const IterationRecord& r) { records_.push_back(r); }

std::string IterationLog::csv() const {
  std::string out =
      "epoch,iteration,time_elapsed_seconds,minibatch_accuracy,validation_accuracy,minibatch_loss,validation_loss,"
      "base_learning_rate\n";
  char buf[256];
  auto opt = [](double v) {
    if (std::isnan(v)) return std::string();
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return std::string(b);
  };
  for (const auto& r : records_) {
    std::snprintf(buf, sizeof buf, "%lld,%lld,%.3f,%s,%s,%s,%s,%s\n", static_cast<long long>(r.epoch),
                  static_cast<long long>(r.iteration), r.seconds, opt(r.minibatch_accuracy).c_str(),
                  opt(r.validation_accuracy).c_str(), opt(r.minibatch_loss).c_str(), opt(r.validation_loss).c_str(),
                  opt(r.learn_rate).c_str());
    out += buf;
  }
  return out;
}

}  // namespace dlt
