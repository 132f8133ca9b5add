// The schedule objects' defaults and names (config/schedule_options.h).
#include "config/schedule_options.h"

namespace dlt {

ScheduleSpec default_schedule(ScheduleKind kind) {
  ScheduleSpec s;
  s.kind = kind;
  switch (kind) {
    case ScheduleKind::piecewise:  // drop by 10x every 10 epochs
      s.drop_factor = 0.1;
      s.period = 10;
      s.frequency_unit = FrequencyUnit::kEpoch;
      break;
    case ScheduleKind::warmup:  // ramp from 0.1x to 1x over the first 5 iterations
      s.initial_factor = 0.1;
      s.final_factor = 1;
      s.num_steps = 5;
      s.frequency_unit = FrequencyUnit::kIteration;
      break;
    case ScheduleKind::cosine:  // one cosine from 1x to 0x over the training, every epoch
      s.initial_factor = 1;
      s.final_factor = 0;
      s.period = 0;
      s.period_growth_factor = 1;
      s.frequency_unit = FrequencyUnit::kEpoch;
      break;
    case ScheduleKind::polynomial:  // a power law (exponent 1) from 1x to 0x over the training
      s.initial_factor = 1;
      s.final_factor = 0;
      s.power = 1;
      s.num_steps = 0;
      s.frequency_unit = FrequencyUnit::kEpoch;
      break;
    case ScheduleKind::exponential:  // 10x lower every epoch
      s.initial_factor = 1;
      s.drop_factor = 0.1;
      s.period = 1;
      s.frequency_unit = FrequencyUnit::kEpoch;
      break;
  }
  return s;
}

std::string schedule_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::piecewise: return "piecewise";
    case ScheduleKind::warmup: return "warmup";
    case ScheduleKind::cosine: return "cosine";
    case ScheduleKind::polynomial: return "polynomial";
    case ScheduleKind::exponential: return "exponential";
  }
  return "";
}

std::string schedule_object_name(ScheduleKind kind) { return schedule_name(kind) + "LearnRate"; }

bool schedule_ends(ScheduleKind kind) { return kind == ScheduleKind::warmup || kind == ScheduleKind::polynomial; }

}  // namespace dlt
