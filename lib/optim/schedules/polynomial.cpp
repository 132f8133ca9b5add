// polynomialLearnRate: FinalFactor + (InitialFactor - FinalFactor) (1 - k/NumSteps)^Power, k
// capped at NumSteps (FinalFactor from there; the next schedule of a list starts there).
#include <algorithm>
#include <cmath>

#include "optim/schedules/step_schedule.h"

namespace dlt::schedules {

namespace {

class Polynomial : public StepSchedule {
 public:
  explicit Polynomial(const ScheduleSpec& s)
      : g0_(s.initial_factor), gn_(s.final_factor), power_(s.power), n_(s.num_steps) {}
  double factor(int64_t k, int64_t training_steps) const override {
    const double n = static_cast<double>(steps_or_training(n_, training_steps));
    const double left = 1.0 - std::min(static_cast<double>(k), n) / n;
    return gn_ + (g0_ - gn_) * std::pow(left, power_);
  }
  int64_t num_steps(int64_t training_steps) const override { return steps_or_training(n_, training_steps); }

 private:
  double g0_, gn_, power_;
  int64_t n_;
};

}  // namespace

std::unique_ptr<StepSchedule> make_polynomial(const ScheduleSpec& s) { return std::make_unique<Polynomial>(s); }

}  // namespace dlt::schedules
