// One run per output folder (output_folder.h): what an earlier run left, refused or removed.
#include "train/output_folder.h"

#include <algorithm>
#include <filesystem>

#include "util/error.h"
#include "util/log.h"

namespace dlt {

namespace fs = std::filesystem;

namespace {

constexpr const char* kRunFiles[] = {"model.bin", "log.csv", "summary.json", "config.yaml", "progress.png"};
constexpr const char* kEventPrefix = "events.out.tfevents.";

// The TensorBoard event files directly in dir, sorted.
std::vector<std::string> event_files(const fs::path& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind(kEventPrefix, 0) == 0 && !it->is_directory(ec))
      found.push_back(it->path().string());
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

std::vector<std::string> earlier_run_outputs(const std::string& output_dir, const TrainingOptions& o) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const char* name : kRunFiles) {
    const fs::path p = fs::path(output_dir) / name;
    if (fs::symlink_status(p, ec).type() != fs::file_type::not_found && !ec) found.push_back(p.string());
  }
  std::vector<fs::path> boards = {fs::path(output_dir) / "tensorboard"};
  if (o.tensorboard && !o.tensorboard_dir.empty() && !fs::equivalent(o.tensorboard_dir, boards[0], ec))
    boards.push_back(o.tensorboard_dir);
  for (const fs::path& dir : boards)
    for (std::string& f : event_files(dir)) found.push_back(std::move(f));
  return found;
}

void claim_output_folder(const std::string& output_dir, const TrainingOptions& o, bool overwrite) {
  const std::vector<std::string> found = earlier_run_outputs(output_dir, o);
  if (found.empty()) return;
  if (overwrite) {
    for (const std::string& f : found) {
      std::error_code ec;
      fs::remove(f, ec);
      if (ec) throw Error(f + ": cannot remove the earlier run's file (" + ec.message() + ")");
    }
    log::info("--overwrite: removed {} file{} of an earlier run from {}", found.size(), found.size() == 1 ? "" : "s",
              output_dir);
    return;
  }
  std::string names;
  std::vector<std::pair<std::string, size_t>> events;  // (folder, event files in it)
  for (const std::string& f : found) {
    const fs::path p(f);
    if (p.filename().string().rfind(kEventPrefix, 0) != 0) {
      names += (names.empty() ? "" : ", ") + p.filename().string();
    } else if (!events.empty() && events.back().first == p.parent_path().string()) {
      ++events.back().second;
    } else {
      events.emplace_back(p.parent_path().string(), 1);
    }
  }
  for (const auto& [dir, n] : events)
    names += (names.empty() ? "" : ", ") + std::to_string(n) + " TensorBoard event file" + (n == 1 ? "" : "s") +
             " in " + dir;
  throw UsageError(output_dir + ": holds an earlier run's outputs (" + names +
                   "); train into a new --output-dir, continue that run with --resume CHECKPOINT, or replace its "
                   "outputs with --overwrite");
}

}  // namespace dlt
