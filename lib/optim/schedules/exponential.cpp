// exponentialLearnRate: InitialFactor DropFactor^(k / Period): DropFactor^(1/Period) per step,
// DropFactor after Period steps.
#include <cmath>

#include "optim/schedules/step_schedule.h"

namespace dlt::schedules {

namespace {

class Exponential : public StepSchedule {
 public:
  explicit Exponential(const ScheduleSpec& s) : g0_(s.initial_factor), drop_(s.drop_factor), period_(s.period) {}
  double factor(int64_t k, int64_t training_steps) const override {
    const double p = static_cast<double>(steps_or_training(period_, training_steps));
    return g0_ * std::pow(drop_, static_cast<double>(k) / p);
  }

 private:
  double g0_, drop_;
  int64_t period_;
};

}  // namespace

std::unique_ptr<StepSchedule> make_exponential(const ScheduleSpec& s) { return std::make_unique<Exponential>(s); }

}  // namespace dlt::schedules
