// LearnRateSchedule: the list of schedule objects in sequence. Each runs in its FrequencyUnit:
// per iteration, k counts the iterations since it started; per epoch, k counts the epoch
// boundaries passed since it started, so every iteration of an epoch has the same rate. A
// schedule that ends (warmup, polynomial: NumSteps) hands over to the next at its last step's
// end; the last one keeps its final value.
#include "optim/schedule.h"

#include <algorithm>
#include <vector>

#include "optim/schedules/step_schedule.h"
#include "util/check.h"

namespace dlt {

namespace {

using schedules::StepSchedule;

class Constant : public LearnRateSchedule {
 public:
  double factor(int64_t, int64_t) const override { return 1.0; }
};

class Sequence : public LearnRateSchedule {
 public:
  struct Item {
    std::unique_ptr<StepSchedule> schedule;
    FrequencyUnit unit;
  };
  Sequence(std::vector<Item> items, int64_t max_epochs) : items_(std::move(items)), max_epochs_(max_epochs) {}

  double factor(int64_t iteration, int64_t iterations_per_epoch) const override {
    const int64_t ipe = std::max<int64_t>(iterations_per_epoch, 1);
    int64_t start = 0;  // the global iteration the current item started at
    for (size_t i = 0;; ++i) {
      const Item& item = items_[i];
      const bool per_epoch = item.unit == FrequencyUnit::kEpoch;
      const int64_t training = per_epoch ? max_epochs_ : max_epochs_ * ipe;
      const int64_t k = per_epoch ? iteration / ipe - start / ipe : iteration - start;
      const int64_t n = item.schedule->num_steps(training);
      if (n < 0 || k < n || i + 1 == items_.size()) return item.schedule->factor(k, training);
      start = per_epoch ? (start / ipe + n) * ipe : start + n;
    }
  }

 private:
  std::vector<Item> items_;
  int64_t max_epochs_;
};

std::unique_ptr<StepSchedule> make_step_schedule(const ScheduleSpec& s) {
  switch (s.kind) {
    case ScheduleKind::piecewise: return schedules::make_piecewise(s);
    case ScheduleKind::warmup: return schedules::make_warmup(s);
    case ScheduleKind::cosine: return schedules::make_cosine(s);
    case ScheduleKind::polynomial: return schedules::make_polynomial(s);
    case ScheduleKind::exponential: return schedules::make_exponential(s);
  }
  DLT_CHECK(false, "unknown schedule kind");
  return nullptr;
}

}  // namespace

std::unique_ptr<LearnRateSchedule> make_learn_rate_schedule(const TrainingOptions& o) {
  if (o.learn_rate_schedule.empty()) return std::make_unique<Constant>();
  std::vector<Sequence::Item> items;
  for (ScheduleSpec s : o.learn_rate_schedule) {
    if (s.named && s.kind == ScheduleKind::piecewise) {  // trainingOptions' LearnRateDrop* options
      s.drop_factor = o.learn_rate_drop_factor;
      s.period = o.learn_rate_drop_period;
    }
    items.push_back({make_step_schedule(s), s.frequency_unit});
  }
  return std::make_unique<Sequence>(std::move(items), o.max_epochs);
}

}  // namespace dlt
