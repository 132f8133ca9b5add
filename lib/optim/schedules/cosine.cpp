// cosineLearnRate: cosine annealing with warm restarts (SGDR). Within a cycle of length T that
// started t steps ago: FinalFactor + (InitialFactor - FinalFactor) (1 + cos(pi t / T)) / 2. The
// first cycle lasts Period steps, each next one PeriodGrowthFactor times longer; a growth factor
// of Inf means no restart: FinalFactor holds after the first cycle.
#include <cmath>
#include <numbers>

#include "optim/schedules/step_schedule.h"

namespace dlt::schedules {

namespace {

class Cosine : public StepSchedule {
 public:
  explicit Cosine(const ScheduleSpec& s)
      : g0_(s.initial_factor), gn_(s.final_factor), growth_(s.period_growth_factor), period_(s.period) {}

  double factor(int64_t k, int64_t training_steps) const override {
    const int64_t p = steps_or_training(period_, training_steps);
    double t, cycle;  // steps into the current cycle, its length
    if (growth_ == 1) {
      t = static_cast<double>(k % p);
      cycle = static_cast<double>(p);
    } else if (std::isinf(growth_)) {
      if (k >= p) return gn_;
      t = static_cast<double>(k);
      cycle = static_cast<double>(p);
    } else {
      // Cycle n starts at p (g^n - 1) / (g - 1); n from the logarithm, then corrected by one
      // where rounding put k on the wrong side of a boundary.
      const double kd = static_cast<double>(k), pd = static_cast<double>(p);
      auto start = [&](double n) { return pd * (std::pow(growth_, n) - 1) / (growth_ - 1); };
      double n = std::floor(std::log(kd / pd * (growth_ - 1) + 1) / std::log(growth_));
      while (n > 0 && start(n) > kd) n -= 1;
      while (start(n + 1) <= kd) n += 1;
      t = kd - start(n);
      cycle = pd * std::pow(growth_, n);
    }
    return gn_ + (g0_ - gn_) * (1 + std::cos(std::numbers::pi * t / cycle)) / 2;
  }

 private:
  double g0_, gn_, growth_;
  int64_t period_;
};

}  // namespace

std::unique_ptr<StepSchedule> make_cosine(const ScheduleSpec& s) { return std::make_unique<Cosine>(s); }

}  // namespace dlt::schedules
