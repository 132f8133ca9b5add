// The typed LearnRateSchedule option: MATLAB's learning-rate schedule objects (R2024b:
// piecewiseLearnRate, warmupLearnRate, cosineLearnRate, polynomialLearnRate,
// exponentialLearnRate) with their properties. lib/config fills it from YAML; lib/optim turns it
// into factors (optim/schedule.h). No YAML and no arithmetic here.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlt {

enum class ScheduleKind { piecewise, warmup, cosine, polynomial, exponential };
// The unit of a frequency or period: a schedule object's FrequencyUnit and the training
// option CheckpointFrequencyUnit (words: epoch, iteration; config/options.h).
enum class FrequencyUnit { kEpoch, kIteration };

// One schedule object. Each kind reads only its own properties (docs/config.md); the others keep
// their defaults. A Period or NumSteps of 0 means "the training's length in FrequencyUnit"
// (MaxEpochs epochs, or MaxEpochs x iterations per epoch).
struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::piecewise;
  // Given as a name (LearnRateSchedule: cosine) rather than as an object: MATLAB's string form,
  // written back as the name. A named piecewise reads LearnRateDropFactor / LearnRateDropPeriod.
  bool named = false;
  double initial_factor = 1;        // InitialFactor: warmup, cosine, polynomial, exponential
  double final_factor = 0;          // FinalFactor: warmup, cosine, polynomial
  double drop_factor = 0.1;         // DropFactor: piecewise, exponential
  int64_t period = 10;              // Period: piecewise, exponential, cosine
  double period_growth_factor = 1;  // PeriodGrowthFactor: cosine (Inf: no restart)
  double power = 1;                 // Power: polynomial
  int64_t num_steps = 5;            // NumSteps: warmup, polynomial
  FrequencyUnit frequency_unit = FrequencyUnit::kEpoch;
  bool operator==(const ScheduleSpec&) const = default;
};

// A kind's defaults, as the object created without arguments (and as the name) has them.
ScheduleSpec default_schedule(ScheduleKind kind);
// "warmup" / "warmupLearnRate" ...
std::string schedule_name(ScheduleKind kind);
std::string schedule_object_name(ScheduleKind kind);
// Whether the kind ends after NumSteps (warmup, polynomial); the others run until training ends.
bool schedule_ends(ScheduleKind kind);

}  // namespace dlt
