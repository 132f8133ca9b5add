// The learning rate of every iteration: LearnRateSchedule (config/schedule_options.h) as a factor
// of InitialLearnRate. The trainer calls factor(iteration, iterations_per_epoch) every iteration;
// the factor is a function of the global iteration alone, so a resumed run continues the
// schedule exactly. Formulas and their sources: docs/config.md "Learning-rate schedules".
#pragma once
#include <cstdint>
#include <memory>

#include "config/options.h"

namespace dlt {

class LearnRateSchedule {
 public:
  virtual ~LearnRateSchedule() = default;
  // iteration: 0-based global step index; returns the factor applied to InitialLearnRate.
  virtual double factor(int64_t iteration, int64_t iterations_per_epoch) const = 0;
};

// The schedules of o.learn_rate_schedule in sequence (none: a constant 1). A named piecewise
// (LearnRateSchedule: piecewise) drops by LearnRateDropFactor every LearnRateDropPeriod epochs.
std::unique_ptr<LearnRateSchedule> make_learn_rate_schedule(const TrainingOptions& o);

}  // namespace dlt
