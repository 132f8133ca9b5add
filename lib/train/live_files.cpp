// LiveFiles (live_files.h): the run's config.yaml, growing log.csv and redrawn progress.png
// while it trains; the plot's stop reason and start time.
#include "train/live_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "util/error.h"
#include "util/files.h"

namespace dlt {

namespace fs = std::filesystem;

LiveFiles::LiveFiles(const std::string& dir, const std::string& config_text, const IterationLog& log, bool plot,
                     double plot_interval_seconds)
    : dir_(dir), metric_columns_(log.metric_columns()), plot_(plot), interval_(plot_interval_seconds) {
  make_dirs(dir_);
  std::error_code ec;
  fs::remove(fs::path(dir_) / "summary.json", ec);  // a finished earlier run's; this one is not
  write_file_atomic((fs::path(dir_) / "config.yaml").string(), config_text);
  const std::string log_path = (fs::path(dir_) / "log.csv").string();
  write_file_atomic(log_path, log.csv());
  fd_ = ::open(log_path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) throw Error(log_path + ": cannot open for appending (" + std::strerror(errno) + ")");
}

LiveFiles::~LiveFiles() {
  if (fd_ >= 0) ::close(fd_);
}

void LiveFiles::append(const IterationRecord& r) {
  const std::string line = log_csv_line(r, metric_columns_);
  const off_t before = ::lseek(fd_, 0, SEEK_END);
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // a short write is followed by this one, which says why (ENOSPC)
      const int err = n < 0 ? errno : EIO;
      // No partial row is left behind (best effort: the run's final log.csv is written whole).
      if (before >= 0 && ::ftruncate(fd_, before) != 0) (void)0;
      throw Error((fs::path(dir_) / "log.csv").string() + ": cannot append a row (" + std::strerror(err) + ")");
    }
    done += static_cast<size_t>(n);
  }
}

bool LiveFiles::plot_due(bool validated) {
  if (!plot_) return false;
  pending_ = pending_ || validated;
  const double since = since_plot_.seconds();
  return since >= interval_ || (pending_ && since >= kDrawGap * draw_seconds_);
}

void LiveFiles::plot(const ProgressSeries& s) {
  if (!plot_) return;
  Timer t;
  write_progress_png((fs::path(dir_) / "progress.png").string(), s);
  draw_seconds_ = t.seconds();
  pending_ = false;
  since_plot_.reset();
}

std::string stop_reason(const std::string& status, const TrainingOptions& o, int64_t iteration) {
  if (status == "completed") return "max epochs completed";
  if (status == "stopped-early")
    return std::string("validation ") + metric_name(o.objective_metric) + " did not improve for " +
           std::to_string(o.validation_patience) +
           " checks (ValidationPatience)";
  if (status == "diverged") return "non-finite mini-batch loss at iteration " + std::to_string(iteration);
  return "";
}

std::string local_time_now() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &local);
  return buf;
}

}  // namespace dlt
