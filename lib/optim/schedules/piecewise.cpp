// piecewiseLearnRate: DropFactor^floor(k / Period). LearnRateSchedule: piecewise with
// LearnRateDropFactor / LearnRateDropPeriod is this one per epoch (the same arithmetic as before
// schedules ran per iteration, so those runs keep their rates bit for bit).
#include <cmath>

#include "optim/schedules/step_schedule.h"

namespace dlt::schedules {

namespace {

class Piecewise : public StepSchedule {
 public:
  explicit Piecewise(const ScheduleSpec& s) : drop_(s.drop_factor), period_(s.period) {}
  double factor(int64_t k, int64_t training_steps) const override {
    return std::pow(drop_, static_cast<double>(k / steps_or_training(period_, training_steps)));
  }

 private:
  double drop_;
  int64_t period_;
};

}  // namespace

std::unique_ptr<StepSchedule> make_piecewise(const ScheduleSpec& s) { return std::make_unique<Piecewise>(s); }

}  // namespace dlt::schedules
