// The files a run keeps current while it trains: LiveFiles (config.yaml at the start, the plot
// redrawn when due, the start time) and LogCsv (log.csv with a
// resumed run's rows at the start, whole rows appended).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "train/live_files.h"
#include "train/log_csv.h"
#include "train/run_files.h"
#include "util/files.h"

using namespace dlt;
namespace fs = std::filesystem;

namespace {

struct TempFolder {
  fs::path path = fs::temp_directory_path() / ("dlt_test_live_" + std::to_string(::getpid()));
  TempFolder() { fs::create_directories(path); }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

IterationRecord record(int64_t it, bool validated) {
  IterationRecord r;
  r.epoch = 1 + (it - 1) / 4;
  r.iteration = it;
  r.seconds = 0.25 * static_cast<double>(it);
  r.minibatch_accuracy = 10.0 * static_cast<double>(it);
  r.minibatch_loss = 2.0 / static_cast<double>(it);
  r.learn_rate = 0.01;
  if (validated) {
    r.validation_accuracy = 5.0 * static_cast<double>(it);
    r.validation_loss = 1.0 / static_cast<double>(it);
  }
  return r;
}

}  // namespace

TEST_CASE("live files: config.yaml at the start, an earlier run's summary.json removed", "[train][live]") {
  TempFolder tmp;
  const std::string dir = tmp.file("run");
  make_dirs(dir);
  write_file_atomic(dir + "/summary.json", "{\"status\":\"completed\"}\n");  // an earlier run's
  LiveFiles live(dir, "training: {}\n", true, 1000);
  CHECK(read_file(dir + "/config.yaml") == "training: {}\n");
  CHECK_FALSE(fs::exists(dir + "/summary.json"));
  CHECK_FALSE(fs::exists(dir + "/progress.png"));  // only when plot() is called
  CHECK_FALSE(fs::exists(dir + "/log.csv"));       // LogCsv's (below)
}

TEST_CASE("log.csv: the header and a resumed run's rows at the start, whole rows appended", "[train][live]") {
  TempFolder tmp;
  const std::string dir = tmp.file("run");
  IterationLog resumed;  // a run resumed after iteration 2
  resumed.add(record(1, true));
  resumed.add(record(2, false));
  LogCsv log(dir, resumed);
  CHECK(read_file(dir + "/log.csv") == resumed.csv());

  IterationLog full = resumed;
  for (int64_t it = 3; it <= 9; ++it) {
    IterationRecord r = record(it, it % 3 == 0);
    full.add(r);
    log.append(r);
    // After each append the file is exactly what IterationLog writes at the end.
    REQUIRE(read_file(dir + "/log.csv") == full.csv());
  }
  CHECK(log_csv_line(record(3, true)).back() == '\n');
  const std::string csv = read_file(dir + "/log.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 10);  // the header and 9 rows
}

TEST_CASE("live files: the plot is due at a validation or after the interval", "[train][live]") {
  TempFolder tmp;
  IterationLog log;
  SECTION("long interval: only validations") {
    LiveFiles live(tmp.file("a"), "", true, 1000);
    CHECK_FALSE(live.plot_due(false));
    CHECK(live.plot_due(true));
    CHECK(live.plot_due(false));  // still due: that validation is not drawn yet
    live.plot(progress_series(log));
    CHECK(fs::file_size(tmp.file("a") + "/progress.png") > 1000);
    CHECK_FALSE(live.plot_due(false));
  }
  SECTION("short interval: due again once it has passed") {
    LiveFiles live(tmp.file("b"), "", true, 0.05);
    live.plot(progress_series(log));
    CHECK_FALSE(live.plot_due(false));
    ::usleep(80000);
    CHECK(live.plot_due(false));
    live.plot(progress_series(log));
    CHECK_FALSE(live.plot_due(false));
  }
  SECTION("validations closer than kDrawGap drawing times wait, then draw") {
    IterationLog many;
    for (int64_t it = 1; it <= 3000; ++it) many.add(record(it, it % 10 == 0));
    LiveFiles live(tmp.file("d"), "", true, 1000);
    CHECK(live.plot_due(true));
    Timer drawing;
    live.plot(progress_series(many));
    const double drawn = drawing.seconds();
    CHECK_FALSE(live.plot_due(true));  // right after a drawing: pending
    Timer waited;
    bool due = false;
    // Bounded only to stop a hang: the gap is kDrawGap times this machine's drawing time.
    while (!due && waited.seconds() < 30 + 3 * LiveFiles::kDrawGap * drawn) {
      ::usleep(2000);
      due = live.plot_due(false);  // no new validation: the pending one makes it due
    }
    CHECK(due);
    CHECK(waited.seconds() >= LiveFiles::kDrawGap * drawn * 0.5);
  }
  SECTION("Plots: none never draws") {
    LiveFiles live(tmp.file("c"), "", false, 0.001);
    ::usleep(5000);
    CHECK_FALSE(live.plot_due(true));
    CHECK_FALSE(live.plot_due(false));
    live.plot(progress_series(log));
    CHECK_FALSE(fs::exists(tmp.file("c") + "/progress.png"));
  }
}

TEST_CASE("live files: an unwritable folder is named", "[train][live]") {
  TempFolder tmp;
  std::ofstream(tmp.file("plain")) << "a file, not a folder";
  CHECK_THROWS_WITH(LiveFiles(tmp.file("plain") + "/run", "", true, 10), Catch::Contains(tmp.file("plain")));
  CHECK_THROWS_WITH(LogCsv(tmp.file("plain") + "/run", IterationLog{}), Catch::Contains(tmp.file("plain")));
}

TEST_CASE("progress_series: one validation entry per check, NaN loss included", "[train][live]") {
  IterationLog log;
  log.add(record(1, true));
  log.add(record(2, false));
  IterationRecord nan_loss = record(3, true);
  nan_loss.validation_loss = std::numeric_limits<double>::quiet_NaN();  // a diverging check
  log.add(nan_loss);
  log.add(record(4, true));
  log.add(record(5, false));  // epoch 2
  const ProgressSeries s = progress_series(log);
  CHECK(s.iteration.size() == 5);
  CHECK(s.val_iteration == std::vector<double>{1, 3, 4});
  CHECK(std::isnan(s.val_loss[1]));
  CHECK(s.val_accuracy[1] == 15);
  CHECK(s.epoch_start_iterations == std::vector<int64_t>{1, 5});
}

TEST_CASE("local_time_now is YYYY-MM-DD hh:mm:ss", "[train][live]") {
  const std::string now = local_time_now();
  CHECK(now.size() == 19);
  CHECK(now[4] == '-');
  CHECK(now[13] == ':');
}
