// Training-progress PNG: smoothing, robust loss axis, and the written image read back with
// stb_image (size, not blank, curve colours in the right panel) for typical and edge-case series.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "train/draw/plot.h"
#include "util/error.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

using namespace dlt;
namespace fs = std::filesystem;

namespace {

struct Png {
  int w = 0, h = 0;
  std::vector<uint8_t> px;  // RGB
  Rgb at(int x, int y) const {
    const size_t i = (static_cast<size_t>(y) * w + x) * 3;
    return {px[i], px[i + 1], px[i + 2]};
  }
  // Pixels of exactly colour c in [x0, x1) x [y0, y1).
  int count(Rgb c, int x0, int y0, int x1, int y1) const {
    int n = 0;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        const Rgb p = at(x, y);
        n += p.r == c.r && p.g == c.g && p.b == c.b;
      }
    return n;
  }
  // Pixels within tol of colour c per channel (anti-aliased thin lines rarely hit it exactly).
  int count_near(Rgb c, int tol, int x0, int y0, int x1, int y1) const {
    int n = 0;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        const Rgb p = at(x, y);
        n += std::abs(p.r - c.r) <= tol && std::abs(p.g - c.g) <= tol && std::abs(p.b - c.b) <= tol;
      }
    return n;
  }
  int non_white() const {
    int n = 0;
    for (size_t i = 0; i < px.size(); i += 3) n += !(px[i] == 255 && px[i + 1] == 255 && px[i + 2] == 255);
    return n;
  }
};

Png read_png(const fs::path& p) {
  Png out;
  int n = 0;
  uint8_t* data = stbi_load(p.string().c_str(), &out.w, &out.h, &n, 3);
  REQUIRE(data != nullptr);
  out.px.assign(data, data + static_cast<size_t>(out.w) * out.h * 3);
  stbi_image_free(data);
  return out;
}

// Per-process folder; the PNGs are deleted after checking unless DLT_KEEP_TEST_PLOTS is set
// (then look at them: they are the plots this test describes).
fs::path out_dir() {
  fs::path d = fs::temp_directory_path() / ("dlt_test_plot_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

void done_with(const fs::path& p) {
  if (std::getenv("DLT_KEEP_TEST_PLOTS")) return;
  fs::remove(p);
  std::error_code ec;
  fs::remove(p.parent_path(), ec);  // only once empty
}

// Panel rectangles of the layout (plot.cpp): accuracy on top, loss below; the info panel
// below kInfoTop.
constexpr int kX0 = 110, kX1 = 760, kTopY0 = 64, kTopY1 = 310, kBotY0 = 372, kBotY1 = 618;
const Rgb kBlackPx{0, 0, 0};

ProgressSeries typical(int n) {
  ProgressSeries s;
  s.title = "Typical run";
  for (int i = 1; i <= n; ++i) {
    const double noise = 6 * std::sin(i * 1.7);
    s.iteration.push_back(i);
    s.minibatch_accuracy.push_back(std::min(100.0, 95 - 85 * std::exp(-i / 60.0) + noise));
    s.minibatch_loss.push_back(2.0 * std::exp(-i / 100.0) + 0.1 + 0.05 * std::sin(i * 2.3));
    if (i % 50 == 0) {
      s.val_iteration.push_back(i);
      s.val_accuracy.push_back(93 - 80 * std::exp(-i / 60.0));
      s.val_loss.push_back(2.0 * std::exp(-i / 100.0) + 0.15);
    }
  }
  for (int e = 1; e <= n; e += 100) s.epoch_start_iterations.push_back(e);
  return s;
}

Png write_and_read(const ProgressSeries& s, const std::string& name) {
  const fs::path p = out_dir() / name;
  fs::remove(p);
  write_progress_png(p.string(), s);
  CHECK_FALSE(fs::exists(p.string() + ".tmp"));
  Png png = read_png(p);
  CHECK(png.w == kProgressWidth);
  CHECK(png.h == kProgressHeight);
  done_with(p);
  return png;
}

}  // namespace

TEST_CASE("smooth_ema is bias-corrected and skips non-finite values", "[train][plot]") {
  const std::vector<double> out = smooth_ema({4, 4, 4});
  for (double v : out) CHECK(v == Approx(4));
  const std::vector<double> two = smooth_ema({0, 10}, 0.6);
  CHECK(two[0] == 0);
  CHECK(two[1] == Approx(0.4 * 10 / (1 - 0.36)));  // 6.25
  const std::vector<double> gap = smooth_ema({0, NAN, 10, INFINITY}, 0.6);
  CHECK(std::isnan(gap[1]));
  CHECK(std::isnan(gap[3]));
  CHECK(gap[2] == Approx(6.25));
  CHECK(smooth_ema({}).empty());
}

TEST_CASE("robust_max ignores rare exploding values but keeps real ones", "[train][plot]") {
  std::vector<double> v;
  for (int i = 0; i < 300; ++i) v.push_back(2.0 * std::exp(-i / 50.0) + 0.1);
  CHECK(robust_max(v) == Approx(2.1));
  v[250] = 1e30;
  v[120] = INFINITY;
  v[121] = NAN;
  CHECK(robust_max(v) == Approx(2.1));
  // A loss that falls fast keeps its first, highest values on the axis.
  std::vector<double> fast;
  for (int i = 0; i < 1000; ++i) fast.push_back(2.3 * std::exp(-i / 5.0) + 0.05);
  CHECK(robust_max(fast) == Approx(2.35));
  CHECK(robust_max({}) == 1);
  CHECK(robust_max({NAN, INFINITY}) == 1);
  CHECK(robust_max({0, 0, 0}) == 0);
  // Diverging for a third of the run: that is real, so the axis shows it.
  std::vector<double> d(300, 1.0);
  for (int i = 200; i < 300; ++i) d[i] = 1000.0 * i;
  CHECK(robust_max(d) == Approx(299000.0));
}

TEST_CASE("progress plot of a typical run draws both panels", "[train][plot]") {
  const Png png = write_and_read(typical(300), "typical.png");
  CHECK(png.non_white() > png.w * png.h / 50);
  CHECK(png.count(kAccuracyColour, kX0, kTopY0, kX1, kTopY1) > 300);
  CHECK(png.count(kLossColour, kX0, kBotY0, kX1, kBotY1) > 300);
  CHECK(png.count(kAccuracyColour, kX0, kBotY0, kX1, kBotY1) == 0);
  CHECK(png.count(kLossColour, kX0, kTopY0, kX1, kTopY1) == 0);
  const Rgb light = mix(kAccuracyColour, {255, 255, 255}, 0.6);
  CHECK(png.count_near(light, 10, kX0, kTopY0, kX1, kTopY1) > 300);
  CHECK(png.count(kBlackPx, kX0, kTopY0, kX1, kTopY1) > 6 * 20);  // 6 validation markers
  CHECK(png.count(kBlackPx, kX0, kBotY0, kX1, kBotY1) > 6 * 20);
  // Smoothed accuracy climbs: near the bottom early, in the top quarter late.
  auto rows_with = [&](Rgb c, int x) {
    std::vector<int> rows;
    for (int y = kTopY0; y < kTopY1; ++y)
      if (png.count(c, x, y, x + 1, y + 1)) rows.push_back(y);
    return rows;
  };
  const std::vector<int> late = rows_with(kAccuracyColour, kX0 + (kX1 - kX0) * 280 / 300);
  REQUIRE_FALSE(late.empty());
  CHECK(late.front() < kTopY0 + (kTopY1 - kTopY0) / 4);
}

TEST_CASE("progress plot edge cases still write a valid image", "[train][plot]") {
  SECTION("no points at all") {
    ProgressSeries s;
    const Png png = write_and_read(s, "empty.png");
    CHECK(png.non_white() > 2000);  // axes, labels, title
    CHECK(png.count(kAccuracyColour, kX0, kTopY0, kX1, kTopY1) == 0);
  }
  SECTION("a single point") {
    ProgressSeries s;
    s.iteration = {1};
    s.minibatch_accuracy = {50};
    s.minibatch_loss = {0.7};
    const Png png = write_and_read(s, "single.png");
    CHECK(png.count(kAccuracyColour, kX0, kTopY0, kX1, kTopY1) > 5);
    CHECK(png.count(kLossColour, kX0, kBotY0, kX1, kBotY1) > 5);
  }
  SECTION("no validation data draws no markers") {
    ProgressSeries s = typical(120);
    s.val_iteration.clear(), s.val_accuracy.clear(), s.val_loss.clear();
    const Png png = write_and_read(s, "noval.png");
    CHECK(png.count(kBlackPx, kX0, kTopY0, kX1, kTopY1) == 0);
    CHECK(png.count(kAccuracyColour, kX0, kTopY0, kX1, kTopY1) > 100);
  }
  SECTION("NaN, inf and an exploding loss do not flatten the loss curve") {
    ProgressSeries s = typical(300);
    s.minibatch_loss[249] = 1e30;
    s.minibatch_loss[100] = NAN;
    s.minibatch_loss[101] = INFINITY;
    s.minibatch_accuracy[50] = NAN;
    s.val_loss[2] = -INFINITY;
    const Png png = write_and_read(s, "huge.png");
    // At iteration 30 the loss is about 1.6 of a 2.1 maximum: its curve is in the upper half.
    const int x = kX0 + (kX1 - kX0) * 30 / 300;
    CHECK(png.count(kLossColour, x - 1, kBotY0, x + 2, (kBotY0 + kBotY1) / 2) > 0);
    CHECK(png.count(kAccuracyColour, kX0, kTopY0, kX1, kTopY1) > 300);
  }
  SECTION("series of unequal length and resumed iterations") {
    ProgressSeries s = typical(200);
    s.minibatch_loss.resize(50);
    for (double& it : s.iteration) it += 5000;
    for (double& it : s.val_iteration) it += 5000;
    s.epoch_start_iterations = {1, 2001, 4001, 5101, 7001};  // resumed in epoch 3
    const Png png = write_and_read(s, "resumed.png");
    CHECK(png.count(kLossColour, kX0, kBotY0, kX1, kBotY1) > 50);
  }
}

TEST_CASE("progress info lines carry MATLAB's side panel", "[train][plot]") {
  CHECK(progress_info_lines(ProgressInfo{}).empty());
  ProgressInfo info;
  info.start_time = "2026-11-03 14:02:11";
  info.elapsed_seconds = 3725.4;
  info.epoch = 3;
  info.max_epochs = 40;
  info.iteration = 150;
  info.max_iterations = 2000;
  info.iterations_per_epoch = 50;
  info.learn_rate = 0.001;
  info.hardware = "cpu (oneDNN 3.0.0, avx2, 2 threads)";
  info.status = RunStatus::kRunning;
  info.stop_reason = "ignored while running";
  auto value_of = [](const std::vector<InfoLine>& lines, const std::string& label) {
    for (const InfoLine& l : lines)
      if (l.label == label) return l.value;
    return std::string("(none)");
  };
  std::vector<InfoLine> lines = progress_info_lines(info);
  REQUIRE(lines.size() == 7);
  CHECK(value_of(lines, "Start time") == "2026-11-03 14:02:11");
  CHECK(value_of(lines, "Elapsed time") == "01:02:05");
  CHECK(value_of(lines, "Epoch") == "3 of 40");
  CHECK(value_of(lines, "Iteration") == "150 of 2000 (50 per epoch)");
  CHECK(value_of(lines, "Learning rate") == "0.001");
  CHECK(value_of(lines, "Hardware") == "cpu (oneDNN 3.0.0, avx2, 2 threads)");
  CHECK(value_of(lines, "Status") == "running");
  CHECK(lines[5].wide);
  CHECK(lines[6].wide);
  CHECK_FALSE(lines[0].wide);
  info.status = RunStatus::kCompleted;
  info.stop_reason = "max epochs completed";
  CHECK(value_of(progress_info_lines(info), "Status") == "finished: max epochs completed");
  info.status = RunStatus::kStoppedEarly;
  info.stop_reason = "validation loss did not improve for 5 checks (ValidationPatience)";
  CHECK(value_of(progress_info_lines(info), "Status") ==
        "stopped early: validation loss did not improve for 5 checks (ValidationPatience)");
  info.status = RunStatus::kDiverged;
  info.stop_reason = "non-finite mini-batch loss at iteration 7";
  CHECK(value_of(progress_info_lines(info), "Status") == "diverged: non-finite mini-batch loss at iteration 7");
  info.status = RunStatus::kFailed;
  info.stop_reason = "data/x.png: cannot decode";
  CHECK(value_of(progress_info_lines(info), "Status") == "failed: data/x.png: cannot decode");
  // A learning rate of 0 is shown; an unknown one (< 0) is not.
  info.learn_rate = 0;
  CHECK(value_of(progress_info_lines(info), "Learning rate") == "0");
  info.learn_rate = -1;
  CHECK(value_of(progress_info_lines(info), "Learning rate") == "(none)");
}

TEST_CASE("progress plot draws the info panel and the title note", "[train][plot]") {
  const Rgb white{255, 255, 255};
  ProgressSeries plain = typical(120);
  const Png without = write_and_read(plain, "noinfo.png");
  CHECK(without.count(white, 0, kInfoTop, kProgressWidth, kProgressHeight) ==
        kProgressWidth * (kProgressHeight - kInfoTop));
  CHECK(without.count_near(kNoteColour, 40, 0, 0, kProgressWidth, 40) == 0);

  ProgressSeries s = plain;
  s.info.start_time = "2026-11-03 14:02:11";
  s.info.epoch = 2;
  s.info.max_epochs = 4;
  s.info.hardware = "cpu";
  s.info.status = RunStatus::kRunning;
  s.title_note = "learning rate too high?";
  const Png with = write_and_read(s, "info.png");
  // Text below the plots, in the panel only; the plots are unchanged.
  const int text =
      kProgressWidth * (kProgressHeight - kInfoTop) - with.count(white, 0, kInfoTop, kProgressWidth, kProgressHeight);
  CHECK(text > 500);
  CHECK(with.count(kAccuracyColour, kX0, kTopY0, kX1, kTopY1) ==
        without.count(kAccuracyColour, kX0, kTopY0, kX1, kTopY1));
  // The note in its colour on the title line.
  CHECK(with.count_near(kNoteColour, 40, 0, 0, kProgressWidth, 40) > 50);
  // Different info, different pixels: a watcher sees the panel change.
  s.info.epoch = 3;
  const Png later = write_and_read(s, "info3.png");
  CHECK(later.px != with.px);
}

TEST_CASE("progress plot draws the learning rate over the loss panel", "[train][plot]") {
  ProgressSeries s = typical(300);
  const Png without = write_and_read(s, "no_rate.png");
  CHECK(without.count(kLearnRateColour, 0, 0, kProgressWidth, kProgressHeight) == 0);
  for (int i = 1; i <= 300; ++i) s.learn_rate.push_back(0.01 * (1 + std::cos(M_PI * (i - 1) / 300)) / 2);
  const Png png = write_and_read(s, "rate.png");
  CHECK(png.count(kLearnRateColour, kX0, kBotY0, kX1, kBotY1) > 300);
  CHECK(png.count(kLearnRateColour, kX0, kTopY0, kX1, kTopY1) == 0);
  CHECK(png.count_near(kLearnRateColour, 40, kX1 + 10, kBotY0, kProgressWidth, kBotY1) > 20);  // the legend sample
  // The largest rate at 90% of the panel's height; at iteration 250, 7% of it.
  auto rows_with = [&](int x) {
    std::vector<int> rows;
    for (int y = kBotY0; y < kBotY1; ++y)
      if (png.count_near(kLearnRateColour, 40, x, y, x + 1, y + 1)) rows.push_back(y);
    return rows;
  };
  const std::vector<int> early = rows_with(kX0 + 2), late = rows_with(kX0 + (kX1 - kX0) * 250 / 300);
  REQUIRE_FALSE(early.empty());
  REQUIRE_FALSE(late.empty());
  const int top_row = kBotY1 - static_cast<int>(0.9 * (kBotY1 - kBotY0));
  CHECK(std::abs(early.front() - top_row) <= 3);
  const int late_row = kBotY1 - static_cast<int>(0.9 * (kBotY1 - kBotY0) * (1 + std::cos(M_PI * 249 / 300)) / 2);
  CHECK(std::abs(late.front() - late_row) <= 3);
  // The loss curves are still drawn.
  CHECK(png.count(kLossColour, kX0, kBotY0, kX1, kBotY1) > 300);
}

TEST_CASE("progress plot joins only consecutive validation checks", "[train][plot]") {
  // Checks every 50 iterations; the one at 150 has no value (NaN): no dashed line may cross it.
  ProgressSeries s = typical(300);
  REQUIRE(s.val_iteration.size() == 6);
  const double x = kX0 + (kX1 - kX0) * 150.0 / 300.0;                      // the axis runs 0..300
  const int x0 = static_cast<int>(x) - 25, x1 = static_cast<int>(x) + 25;  // 20 px from the neighbours' markers
  auto dark = [&](const Png& png) { return png.count_near(kBlackPx, 60, x0, kTopY0, x1, kTopY1); };
  const Png joined = write_and_read(s, "val_joined.png");
  CHECK(dark(joined) > 10);
  s.val_accuracy[2] = NAN;
  s.val_loss[2] = NAN;
  const Png broken = write_and_read(s, "val_broken.png");
  CHECK(dark(broken) == 0);
  CHECK(broken.count(kBlackPx, kX0, kTopY0, kX1, kTopY1) > 5 * 20);  // the other 5 markers stay
}

TEST_CASE("progress plot reports an unwritable path", "[train][plot]") {
  const fs::path missing = fs::temp_directory_path() / ("dlt_no_such_dir_" + std::to_string(::getpid()));
  const std::string bad = (missing / "plot.png").string();
  CHECK_THROWS_AS(write_progress_png(bad, typical(10)), Error);
  CHECK_THROWS_WITH(write_progress_png(bad, typical(10)), Catch::Contains(bad));
}

TEST_CASE("progress plot draws the validation metrics in percent in the accuracy panel", "[train][plot]") {
  // typical(300) validates every 50 iterations; fscore is 0.5 at every check: its line and
  // markers lie on the 50% row (y = 64 + 246 / 2 = 187), in its own colour, with a legend entry.
  ProgressSeries s = typical(300);
  const Rgb colour = kMetricColours[0];
  const Png without = write_and_read(s, "no_metrics.png");
  CHECK(without.count(colour, 0, 0, kProgressWidth, kProgressHeight) == 0);
  s.val_metrics = {{"fscore", std::vector<double>(s.val_iteration.size(), 0.5)}};
  const Png with = write_and_read(s, "metrics.png");
  CHECK(with.count(colour, kX0, 187 - 4, kX1, 187 + 5) > 6 * 12);  // six markers and the dashes
  CHECK(with.count(colour, kX0, kTopY0, kX1, 187 - 5) == 0);
  CHECK(with.count(colour, kX0, 187 + 6, kX1, kTopY1) == 0);
  CHECK(with.count(colour, 780, kTopY0, kProgressWidth, kBotY0) > 20);         // the legend's sample
  CHECK(with.count(colour, 0, kBotY0, kProgressWidth, kProgressHeight) == 0);  // not in the loss panel
}

TEST_CASE("progress plot wraps a long Status line onto more rows instead of cutting it", "[train][plot]") {
  const Rgb white{255, 255, 255};
  ProgressSeries s = typical(120);
  s.info.start_time = "2026-11-03 14:02:11";
  s.info.elapsed_seconds = 65;
  s.info.epoch = 6;
  s.info.max_epochs = 30;
  s.info.iteration = 27;
  s.info.max_iterations = 150;
  s.info.learn_rate = 0.05;
  s.info.hardware = "cpu (oneDNN 3.0.0, avx2, 2 threads)";
  s.info.status = RunStatus::kStoppedEarly;
  s.info.stop_reason = "validation loss did not improve for 3 validations in a row (ValidationPatience 3)";
  auto draw = [&](const std::string& name) {
    const fs::path p = out_dir() / name;
    write_progress_png(p.string(), s);
    Png png = read_png(p);
    done_with(p);
    return png;
  };
  const Png short_reason = draw("short_status.png");  // fits on two rows
  CHECK(short_reason.w == kProgressWidth);
  CHECK(short_reason.h == kProgressHeight + 24);
  s.info.stop_reason +=
      "; its best, 0.412345, came after 24 iterations; model.bin is the best-validation network, after 24 "
      "iterations (validation loss 0.412345)";
  const Png long_reason = draw("long_status.png");
  CHECK(long_reason.h >= kProgressHeight + 3 * 24);  // every word on a row of its own width
  const int extra = long_reason.h - kProgressHeight;
  CHECK(long_reason.count(white, 0, kProgressHeight, kProgressWidth, long_reason.h) < kProgressWidth * extra);
  s.info.stop_reason = "MaxEpochs 30 reached";
  s.info.status = RunStatus::kCompleted;
  CHECK(draw("one_row.png").h == kProgressHeight);
}
