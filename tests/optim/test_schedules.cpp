// Learning-rate schedules (optim/schedule.h) iteration by iteration against values computed by
// hand from the formulas in docs/config.md: cosine (with restarts and growing periods), a warmup
// followed by a cosine, polynomial, exponential, piecewise per iteration and per epoch, and the
// names' defaults (piecewise with LearnRateDropFactor / LearnRateDropPeriod exactly as before).
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "optim/schedule.h"

using namespace dlt;

namespace {

ScheduleSpec object(ScheduleKind kind, FrequencyUnit unit) {
  ScheduleSpec s = default_schedule(kind);
  s.frequency_unit = unit;
  return s;
}

// The factors of iterations 0 .. want.size()-1 equal want (to 1e-12).
void check_factors(const TrainingOptions& o, int64_t per_epoch, const std::vector<double>& want) {
  const auto schedule = make_learn_rate_schedule(o);
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("iteration " << i << " (" << per_epoch << " per epoch)");
    CHECK(schedule->factor(static_cast<int64_t>(i), per_epoch) == Approx(want[i]).margin(1e-12).epsilon(1e-12));
  }
}

constexpr double kC4 = 0.85355339059327373;  // (1 + cos(pi/4)) / 2
constexpr double kS4 = 0.14644660940672627;  // (1 - cos(pi/4)) / 2

}  // namespace

TEST_CASE("schedules: none is a constant 1", "[optim][schedule]") {
  TrainingOptions o;
  check_factors(o, 3, {1, 1, 1, 1, 1, 1, 1});
}

TEST_CASE("schedules: cosine per iteration restarts every Period", "[optim][schedule]") {
  TrainingOptions o;
  ScheduleSpec s = object(ScheduleKind::cosine, FrequencyUnit::kIteration);
  s.period = 4;
  o.learn_rate_schedule = {s};
  check_factors(o, 3, {1, kC4, 0.5, kS4, 1, kC4, 0.5, kS4, 1});
  // InitialFactor 2, FinalFactor 0.5: 0.5 + 1.5 (1 + cos(pi k / 4)) / 2
  o.learn_rate_schedule[0].initial_factor = 2;
  o.learn_rate_schedule[0].final_factor = 0.5;
  check_factors(o, 3, {2, 0.5 + 1.5 * kC4, 1.25, 0.5 + 1.5 * kS4, 2});
}

TEST_CASE("schedules: cosine cycles grow by PeriodGrowthFactor", "[optim][schedule]") {
  TrainingOptions o;
  ScheduleSpec s = object(ScheduleKind::cosine, FrequencyUnit::kIteration);
  s.period = 2;
  s.period_growth_factor = 2;  // cycles [0, 2), [2, 6), [6, 14), [14, 30)
  o.learn_rate_schedule = {s};
  const double c8 = 0.96193976625564337;  // (1 + cos(pi/8)) / 2
  check_factors(o, 5, {1, 0.5, 1, kC4, 0.5, kS4, 1, c8, kC4, 0.5 + 0.5 * std::cos(3 * M_PI / 8), 0.5});
  CHECK(make_learn_rate_schedule(o)->factor(13, 5) == Approx((1 + std::cos(7 * M_PI / 8)) / 2));
  CHECK(make_learn_rate_schedule(o)->factor(14, 5) == 1);
  CHECK(make_learn_rate_schedule(o)->factor(30, 5) == 1);
  CHECK(make_learn_rate_schedule(o)->factor(46, 5) == Approx(0.5));  // 16 into the 32-long cycle
  // Inf: one cycle, then FinalFactor
  o.learn_rate_schedule[0].period_growth_factor = INFINITY;
  check_factors(o, 5, {1, 0.5, 0, 0, 0});
}

TEST_CASE("schedules: cosine per epoch keeps the rate within an epoch", "[optim][schedule]") {
  TrainingOptions o;
  ScheduleSpec s = object(ScheduleKind::cosine, FrequencyUnit::kEpoch);
  s.period = 4;
  o.learn_rate_schedule = {s};
  check_factors(o, 2, {1, 1, kC4, kC4, 0.5, 0.5, kS4, kS4, 1, 1});
}

TEST_CASE("schedules: warmup then cosine, MATLAB's {warmupLearnRate, cosineLearnRate}", "[optim][schedule]") {
  TrainingOptions o;
  ScheduleSpec w = object(ScheduleKind::warmup, FrequencyUnit::kIteration);
  w.initial_factor = 0.2;
  w.final_factor = 1;
  w.num_steps = 4;
  ScheduleSpec c = object(ScheduleKind::cosine, FrequencyUnit::kIteration);
  c.period = 4;
  o.learn_rate_schedule = {w, c};
  // warmup 0.2 + 0.8 k/4 for k = 0..3, then the cosine from its own k = 0
  check_factors(o, 3, {0.2, 0.4, 0.6, 0.8, 1, kC4, 0.5, kS4, 1, kC4});

  // A per-epoch cosine after 4 warmup iterations (3 per epoch) starts within epoch 2 (its k = 0
  // there) and steps at every epoch boundary after: k = epoch - 1.
  o.learn_rate_schedule[1].frequency_unit = FrequencyUnit::kEpoch;
  o.learn_rate_schedule[1].period = 3;
  check_factors(o, 3, {0.2, 0.4, 0.6, 0.8, 1, 1, 0.75, 0.75, 0.75, 0.25, 0.25, 0.25, 1});

  // A per-epoch warmup ends at an epoch boundary: 2 epochs of 3 iterations, then the cosine.
  o.learn_rate_schedule[0].frequency_unit = FrequencyUnit::kEpoch;
  o.learn_rate_schedule[0].num_steps = 2;
  o.learn_rate_schedule[1].frequency_unit = FrequencyUnit::kIteration;
  o.learn_rate_schedule[1].period = 4;
  check_factors(o, 3, {0.2, 0.2, 0.2, 0.6, 0.6, 0.6, 1, kC4, 0.5, kS4, 1});
}

TEST_CASE("schedules: a warmup alone holds FinalFactor after NumSteps", "[optim][schedule]") {
  TrainingOptions o;
  ScheduleSpec w = object(ScheduleKind::warmup, FrequencyUnit::kIteration);
  w.initial_factor = 0;
  w.final_factor = 2;
  w.num_steps = 2;
  o.learn_rate_schedule = {w};
  check_factors(o, 10, {0, 1, 2, 2, 2});
}

TEST_CASE("schedules: polynomial", "[optim][schedule]") {
  TrainingOptions o;
  ScheduleSpec s = object(ScheduleKind::polynomial, FrequencyUnit::kIteration);
  s.initial_factor = 1;
  s.final_factor = 0.1;
  s.power = 2;
  s.num_steps = 4;
  o.learn_rate_schedule = {s};
  // 0.1 + 0.9 (1 - k/4)^2, then 0.1
  check_factors(o, 3, {1, 0.60625, 0.325, 0.15625, 0.1, 0.1, 0.1});
  // per epoch, 2 iterations each, Power 0.5: 0.1 + 0.9 sqrt(1 - e/4)
  o.learn_rate_schedule[0].frequency_unit = FrequencyUnit::kEpoch;
  o.learn_rate_schedule[0].power = 0.5;
  const double a = 0.1 + 0.9 * std::sqrt(0.75), b = 0.1 + 0.9 * std::sqrt(0.5), c = 0.1 + 0.9 * 0.5;
  check_factors(o, 2, {1, 1, a, a, b, b, c, c, 0.1, 0.1});
}

TEST_CASE("schedules: exponential", "[optim][schedule]") {
  TrainingOptions o;
  ScheduleSpec s = object(ScheduleKind::exponential, FrequencyUnit::kIteration);
  s.initial_factor = 0.5;
  s.drop_factor = 0.25;
  s.period = 2;
  o.learn_rate_schedule = {s};
  // 0.5 0.25^(k/2): a factor 0.5 per iteration
  check_factors(o, 4, {0.5, 0.25, 0.125, 0.0625, 0.03125});
  o.learn_rate_schedule[0].frequency_unit = FrequencyUnit::kEpoch;
  check_factors(o, 3, {0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125});
}

TEST_CASE("schedules: piecewise per iteration and per epoch", "[optim][schedule]") {
  TrainingOptions o;
  ScheduleSpec s = object(ScheduleKind::piecewise, FrequencyUnit::kIteration);
  s.drop_factor = 0.5;
  s.period = 3;
  o.learn_rate_schedule = {s};
  check_factors(o, 2, {1, 1, 1, 0.5, 0.5, 0.5, 0.25});
  o.learn_rate_schedule[0].frequency_unit = FrequencyUnit::kEpoch;
  o.learn_rate_schedule[0].period = 2;
  check_factors(o, 2, {1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.25});
}

TEST_CASE("schedules: the names' defaults", "[optim][schedule]") {
  TrainingOptions o;
  o.max_epochs = 4;
  auto named = [](ScheduleKind kind) {
    ScheduleSpec s = default_schedule(kind);
    s.named = true;
    return s;
  };
  // piecewise: LearnRateDropFactor every LearnRateDropPeriod epochs, bit for bit the rate
  // InitialLearnRate * DropFactor^floor(epoch / period)
  o.learn_rate_schedule = {named(ScheduleKind::piecewise)};
  o.initial_learn_rate = 0.0125;
  o.learn_rate_drop_factor = 0.3;
  o.learn_rate_drop_period = 2;
  const auto piecewise = make_learn_rate_schedule(o);
  for (int64_t it = 0; it < 40; ++it) {
    const int64_t epoch = it / 3;
    CHECK(o.initial_learn_rate * piecewise->factor(it, 3) ==
          o.initial_learn_rate * std::pow(0.3, static_cast<double>(epoch / 2)));
  }
  // warmup: 0.1 to 1 over 5 iterations
  o.learn_rate_schedule = {named(ScheduleKind::warmup)};
  check_factors(o, 2, {0.1, 0.28, 0.46, 0.64, 0.82, 1, 1});
  // cosine: one cycle over MaxEpochs epochs
  o.learn_rate_schedule = {named(ScheduleKind::cosine)};
  check_factors(o, 2, {1, 1, kC4, kC4, 0.5, 0.5, kS4, kS4});
  // polynomial: 1 - epoch / MaxEpochs
  o.learn_rate_schedule = {named(ScheduleKind::polynomial)};
  check_factors(o, 2, {1, 1, 0.75, 0.75, 0.5, 0.5, 0.25, 0.25});
  // exponential: 10x lower every epoch
  o.learn_rate_schedule = {named(ScheduleKind::exponential)};
  check_factors(o, 2, {1, 1, 0.1, 0.1, 0.01, 0.01});
  // ["warmup", "cosine"]: 5 warmup iterations, then the cosine from the epoch it starts in
  o.learn_rate_schedule = {named(ScheduleKind::warmup), named(ScheduleKind::cosine)};
  check_factors(o, 3, {0.1, 0.28, 0.46, 0.64, 0.82, 1, kC4, kC4, kC4, 0.5});
}

TEST_CASE("schedules: the factor depends on the iteration alone (a resumed run continues it)", "[optim][schedule]") {
  TrainingOptions o;
  ScheduleSpec w = object(ScheduleKind::warmup, FrequencyUnit::kIteration);
  w.num_steps = 7;
  ScheduleSpec c = object(ScheduleKind::cosine, FrequencyUnit::kIteration);
  c.period = 5;
  c.period_growth_factor = 1.5;
  o.learn_rate_schedule = {w, c};
  const auto a = make_learn_rate_schedule(o);
  std::vector<double> forward;
  for (int64_t it = 0; it < 60; ++it) forward.push_back(a->factor(it, 4));
  const auto b = make_learn_rate_schedule(o);  // a fresh one, asked from the middle, backwards
  for (int64_t it = 59; it >= 30; --it) CHECK(b->factor(it, 4) == forward[static_cast<size_t>(it)]);
}
