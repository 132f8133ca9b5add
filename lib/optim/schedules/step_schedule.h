// Internal to lib/optim: one schedule object as a function of its own step count k (the
// FrequencyUnit steps completed since it started, 0 at its first), one file per kind. The
// sequence in optim/schedule.cpp turns global iterations into each one's k.
#pragma once
#include <cstdint>
#include <memory>

#include "config/schedule_options.h"

namespace dlt::schedules {

class StepSchedule {
 public:
  virtual ~StepSchedule() = default;
  // k >= 0. training_steps: the training's length in this schedule's unit, which a Period or
  // NumSteps of 0 stands for.
  virtual double factor(int64_t k, int64_t training_steps) const = 0;
  // Steps after which the next schedule in the list starts; -1: never ends.
  virtual int64_t num_steps(int64_t /*training_steps*/) const { return -1; }
};

// A Period / NumSteps of 0 is the training's length.
inline int64_t steps_or_training(int64_t n, int64_t training_steps) { return n > 0 ? n : training_steps; }

std::unique_ptr<StepSchedule> make_piecewise(const ScheduleSpec& s);
std::unique_ptr<StepSchedule> make_warmup(const ScheduleSpec& s);
std::unique_ptr<StepSchedule> make_cosine(const ScheduleSpec& s);
std::unique_ptr<StepSchedule> make_polynomial(const ScheduleSpec& s);
std::unique_ptr<StepSchedule> make_exponential(const ScheduleSpec& s);

}  // namespace dlt::schedules
