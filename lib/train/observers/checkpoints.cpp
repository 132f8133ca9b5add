// Checkpoints (CheckpointPath, train/checkpoint.h) as an observer, rank 0: after every
// CheckpointFrequency iterations, or at the end of every CheckpointFrequency-th epoch
// (CheckpointFrequencyUnit), the network, the solver, the position to resume at and the
// history, as checkpoint-iteration-N.bin and latest.bin (what --resume usually points at).
#include <algorithm>
#include <filesystem>

#include "train/checkpoint.h"
#include "train/observer.h"
#include "train/progress.h"
#include "train/training_run.h"
#include "util/files.h"
#include "util/log.h"

namespace dlt {
namespace {

namespace fs = std::filesystem;

class Checkpoints : public TrainingObserver {
 public:
  explicit Checkpoints(const TrainingRun& run) : run_(run) {}

  Requests on_iteration(const IterationRecord& rec, const RunState&) override {
    const TrainingOptions& o = run_.options;
    const bool end_of_epoch = run_.position.batch_in_epoch == run_.iterations_per_epoch;
    if (!due(o, rec.iteration, rec.epoch - 1, end_of_epoch)) return {};
    if (run_.table) run_.table->clear_bar();  // the checkpoint's line starts at the left, not after the bar
    // A resumed run goes on at the next epoch's start after an epoch's end, else at the next batch.
    TrainPosition resume_at = run_.position;
    if (end_of_epoch) {
      resume_at.epoch += 1;
      resume_at.batch_in_epoch = 0;
    }
    resume_at.elapsed = rec.seconds;
    make_dirs(o.checkpoint_path);
    const std::string name = "checkpoint-iteration-" + std::to_string(resume_at.iteration) + ".bin";
    const std::string path = (fs::path(o.checkpoint_path) / name).string();
    save_checkpoint(path, *run_.net, *run_.optimizer, resume_at, run_.history, run_.args.config_text);
    // latest.bin is written the same atomic way.
    save_checkpoint((fs::path(o.checkpoint_path) / "latest.bin").string(), *run_.net, *run_.optimizer, resume_at,
                    run_.history, run_.args.config_text);
    log::info("checkpoint: {}", path);
    return {};
  }

 private:
  static bool due(const TrainingOptions& o, int64_t iteration, int64_t epoch, bool end_of_epoch) {
    if (o.checkpoint_path.empty()) return false;
    const int64_t every = std::max<int64_t>(o.checkpoint_frequency, 1);
    if (o.checkpoint_frequency_unit == FrequencyUnit::kIteration) return iteration % every == 0;
    return end_of_epoch && (epoch + 1) % every == 0;
  }

  const TrainingRun& run_;
};

}  // namespace

std::unique_ptr<TrainingObserver> make_checkpoints(const TrainingRun& run) {
  return std::make_unique<Checkpoints>(run);
}

}  // namespace dlt
