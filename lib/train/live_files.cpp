// LiveFiles (live_files.h): the run's config.yaml and redrawn progress.png while it trains;
// the plot's start time.
#include "train/live_files.h"

#include <ctime>
#include <filesystem>

#include "util/files.h"

namespace dlt {

namespace fs = std::filesystem;

LiveFiles::LiveFiles(const std::string& dir, const std::string& config_text, bool plot, double plot_interval_seconds)
    : dir_(dir), plot_(plot), interval_(plot_interval_seconds) {
  make_dirs(dir_);
  std::error_code ec;
  fs::remove(fs::path(dir_) / "summary.json", ec);  // a finished earlier run's; this one is not
  write_file_atomic((fs::path(dir_) / "config.yaml").string(), config_text);
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

std::string local_time_now() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &local);
  return buf;
}

}  // namespace dlt
