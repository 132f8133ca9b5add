// warmupLearnRate: a straight line from InitialFactor (k = 0) towards FinalFactor, reached at
// k = NumSteps, where the next schedule of a list starts (alone, FinalFactor holds from there).
#include <algorithm>

#include "optim/schedules/step_schedule.h"

namespace dlt::schedules {

namespace {

class Warmup : public StepSchedule {
 public:
  explicit Warmup(const ScheduleSpec& s) : g0_(s.initial_factor), gn_(s.final_factor), n_(s.num_steps) {}
  double factor(int64_t k, int64_t training_steps) const override {
    const int64_t n = steps_or_training(n_, training_steps);
    if (k >= n) return gn_;
    return g0_ + (gn_ - g0_) * static_cast<double>(k) / static_cast<double>(n);
  }
  int64_t num_steps(int64_t training_steps) const override { return steps_or_training(n_, training_steps); }

 private:
  double g0_, gn_;
  int64_t n_;
};

}  // namespace

std::unique_ptr<StepSchedule> make_warmup(const ScheduleSpec& s) { return std::make_unique<Warmup>(s); }

}  // namespace dlt::schedules
