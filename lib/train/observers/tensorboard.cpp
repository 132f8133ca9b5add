// TensorBoard (training.TensorBoard), rank 0: an event file (train/event_file.h) in
// <output-dir>/tensorboard or the folder given, one record per iteration with its scalars
//   train/loss, train/<headline>, train/learn_rate, train/images_per_second,
//   validation/loss, validation/<headline> and validation/<metric> (where validation ran),
// the headline being accuracy, rmse or f1 (progress.h's HeadlineMetric),
// the log.csv values as float32 (a NaN, an empty log.csv cell, is left out), and the progress
// plot as the image "progress" each time progress.png is redrawn (seen by its file identity
// changing: every drawing is a new file renamed into place), the final one included. Every
// record is one append, so TensorBoard shows each iteration as it is written.
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <memory>

#include "train/event_file.h"
#include "train/observer.h"
#include "train/training_run.h"
#include "util/files.h"
#include "util/log.h"

namespace dlt {
namespace {

namespace fs = std::filesystem;

// What tells one drawing of progress.png from the next: a rename gives a new inode.
struct FileIdentity {
  ino_t inode = 0;
  int64_t mtime_ns = 0, size = -1;
  bool operator==(const FileIdentity&) const = default;
};

bool identity_of(const std::string& path, FileIdentity* id) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return false;
  id->inode = st.st_ino;
  id->mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  id->size = st.st_size;
  return true;
}

// A PNG's size and summary.proto colorspace from its IHDR chunk; false when it is no PNG.
bool png_header(const std::string& png, int* width, int* height, int* colorspace) {
  if (png.size() < 26 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return false;
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(png[at])) << 24) | (uint32_t(uint8_t(png[at + 1])) << 16) |
           (uint32_t(uint8_t(png[at + 2])) << 8) | uint32_t(uint8_t(png[at + 3]));
  };
  *width = static_cast<int>(be32(16));
  *height = static_cast<int>(be32(20));
  const int colour_type = static_cast<uint8_t>(png[25]);  // 0 grey, 2 RGB, 4 grey+alpha, 6 RGBA
  *colorspace = colour_type == 0 ? 1 : colour_type == 4 ? 2 : colour_type == 6 ? 4 : 3;
  return true;
}

class TensorBoard : public TrainingObserver {
 public:
  explicit TensorBoard(const TrainingRun& run) : run_(run) {}

  void on_start(const RunInfo& info) override {
    const TrainingOptions& o = run_.options;
    const std::string dir =
        o.tensorboard_dir.empty() ? (fs::path(info.output_dir) / "tensorboard").string() : o.tensorboard_dir;
    writer_ = std::make_unique<EventFileWriter>(dir);
    if (o.plots != Plots::kNone) png_path_ = (fs::path(info.output_dir) / "progress.png").string();
    log::info("TensorBoard: {} (tensorboard --logdir {})", writer_->path(), dir);
    add_new_plot(run_.position.iteration);
  }

  Requests on_iteration(const IterationRecord& r, const RunState&) override {
    std::vector<std::pair<std::string, float>> values;
    auto add = [&](const std::string& tag, double v) {
      if (!std::isnan(v)) values.emplace_back(tag, static_cast<float>(v));
    };
    const std::string& headline = run_.history.headline().name;  // accuracy, rmse or f1
    add("train/loss", r.minibatch_loss);
    add("train/" + headline, r.minibatch_accuracy);
    add("train/learn_rate", r.learn_rate);
    add("train/images_per_second", r.images_per_second);
    add("validation/loss", r.validation_loss);
    add("validation/" + headline, r.validation_accuracy);
    for (const auto& [name, v] : r.validation_metrics)
      if (name != headline && !std::isnan(v)) values.emplace_back("validation/" + name, static_cast<float>(v));
    writer_->add_scalars(r.iteration, values);
    add_new_plot(r.iteration);
    return {};
  }

  void on_end(const RunState&) override {
    if (!writer_) return;
    const auto& recs = run_.history.records();
    add_new_plot(recs.empty() ? 0 : recs.back().iteration);  // the final (or failed) drawing, made before on_end
  }

 private:
  // Appends progress.png as an image when it changed since the last look.
  void add_new_plot(int64_t step) {
    FileIdentity now;
    if (png_path_.empty() || !identity_of(png_path_, &now) || now == seen_) return;
    seen_ = now;
    const std::string png = read_file(png_path_);
    int width, height, colorspace;
    if (!png_header(png, &width, &height, &colorspace)) return;
    writer_->add_image(step, "progress", height, width, colorspace, png);
  }

  const TrainingRun& run_;
  std::unique_ptr<EventFileWriter> writer_;
  std::string png_path_;
  FileIdentity seen_;
};

}  // namespace

std::unique_ptr<TrainingObserver> make_tensorboard(const TrainingRun& run) {
  return std::make_unique<TensorBoard>(run);
}

}  // namespace dlt
