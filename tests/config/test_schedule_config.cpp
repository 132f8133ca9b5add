// training.LearnRateSchedule: names, schedule objects as maps with MATLAB's properties, lists run
// in sequence, --set, the dumped config loading back the same, and one error line per mistake
// with its file:line and did-you-mean.
#include <catch2/catch.hpp>
#include <cmath>

#include "config/config.h"
#include "config_test_util.h"
#include "util/error.h"

namespace dlt {
namespace {

using test::kNet;

Config load(const std::string& text, const std::vector<std::string>& overrides = {}) {
  test::TempDir dir;
  return load_config(dir.write("cfg.yaml", text), overrides);
}

using test::config_error_of;

// Loads the dump of `c` and checks it reads back the same schedule.
void check_round_trip(const Config& c) {
  test::TempDir dir;
  const Config back = load_config(dir.write("dump.yaml", dump_config(c)), {});
  CHECK(back.training.learn_rate_schedule == c.training.learn_rate_schedule);
}

}  // namespace

TEST_CASE("schedule config: names", "[config][schedule]") {
  CHECK(load(kNet).training.learn_rate_schedule.empty());
  CHECK(load(kNet + "training:\n  LearnRateSchedule: none\n").training.learn_rate_schedule.empty());
  for (ScheduleKind kind : {ScheduleKind::piecewise, ScheduleKind::warmup, ScheduleKind::cosine,
                            ScheduleKind::polynomial, ScheduleKind::exponential}) {
    INFO(schedule_name(kind));
    const Config c = load(kNet + "training:\n  LearnRateSchedule: " + schedule_name(kind) + "\n");
    REQUIRE(c.training.learn_rate_schedule.size() == 1);
    ScheduleSpec want = default_schedule(kind);
    want.named = true;
    CHECK(c.training.learn_rate_schedule[0] == want);
    check_round_trip(c);
  }
  // MATLAB's spelling "Cosine" and the seeds' piecewise with its drop options
  CHECK(load(kNet + "training:\n  LearnRateSchedule: Cosine\n").training.learn_rate_schedule[0].kind ==
        ScheduleKind::cosine);
  const Config p = load(kNet + "training:\n  LearnRateSchedule: piecewise\n  LearnRateDropFactor: 0.5\n"
                               "  LearnRateDropPeriod: 3\n");
  CHECK(p.training.learn_rate_schedule[0].named);
  CHECK(p.training.learn_rate_drop_factor == 0.5);
  CHECK(p.training.learn_rate_drop_period == 3);
}

TEST_CASE("schedule config: objects with MATLAB's properties, and lists", "[config][schedule]") {
  const Config c = load(kNet + R"(training:
  LearnRateSchedule:
    - {type: warmupLearnRate, InitialFactor: 0.25, FinalFactor: 2, NumSteps: 40}
    - type: cosineLearnRate
      InitialFactor: 2
      FinalFactor: 0.01
      Period: 7
      PeriodGrowthFactor: 1.5
      FrequencyUnit: iteration
)");
  const auto& s = c.training.learn_rate_schedule;
  REQUIRE(s.size() == 2);
  CHECK(s[0].kind == ScheduleKind::warmup);
  CHECK_FALSE(s[0].named);
  CHECK(s[0].initial_factor == 0.25);
  CHECK(s[0].final_factor == 2);
  CHECK(s[0].num_steps == 40);
  CHECK(s[0].frequency_unit == FrequencyUnit::kIteration);  // warmupLearnRate's default
  CHECK(s[1].kind == ScheduleKind::cosine);
  CHECK(s[1].initial_factor == 2);
  CHECK(s[1].final_factor == 0.01);
  CHECK(s[1].period == 7);
  CHECK(s[1].period_growth_factor == 1.5);
  CHECK(s[1].frequency_unit == FrequencyUnit::kIteration);
  check_round_trip(c);

  const Config d = load(kNet + R"(training:
  LearnRateSchedule:
    - warmup
    - {type: polynomialLearnRate, Power: 2, NumSteps: 3, FrequencyUnit: epoch}
    - {type: exponentialLearnRate, InitialFactor: 0.5, DropFactor: 0.5, Period: 4}
)");
  const auto& t = d.training.learn_rate_schedule;
  REQUIRE(t.size() == 3);
  CHECK(t[0].named);
  CHECK(t[1].power == 2);
  CHECK(t[1].num_steps == 3);
  CHECK(t[2].initial_factor == 0.5);
  CHECK(t[2].drop_factor == 0.5);
  CHECK(t[2].period == 4);
  CHECK(t[2].frequency_unit == FrequencyUnit::kEpoch);
  check_round_trip(d);

  const Config e = load(kNet + "training:\n  LearnRateSchedule: {type: piecewiseLearnRate, DropFactor: 0.5, "
                               "Period: 100, FrequencyUnit: iteration}\n");
  REQUIRE(e.training.learn_rate_schedule.size() == 1);
  CHECK(e.training.learn_rate_schedule[0].period == 100);
  CHECK(std::isinf(load(kNet + "training:\n  LearnRateSchedule: {type: cosineLearnRate, PeriodGrowthFactor: Inf}\n")
                       .training.learn_rate_schedule[0]
                       .period_growth_factor));
  check_round_trip(e);
}

TEST_CASE("schedule config: --set gives a name, an object or a list", "[config][schedule]") {
  CHECK(load(kNet, {"training.LearnRateSchedule=cosine"}).training.learn_rate_schedule[0].kind ==
        ScheduleKind::cosine);
  const Config c = load(kNet, {"training.LearnRateSchedule=[warmup, {type: cosineLearnRate, Period: 9}]"});
  REQUIRE(c.training.learn_rate_schedule.size() == 2);
  CHECK(c.training.learn_rate_schedule[1].period == 9);
  CHECK(config_error_of(kNet, {"training.LearnRateSchedule={type: cosineLearnRate, Period: 0}"}) ==
        "--set training.LearnRateSchedule={type: cosineLearnRate, Period: 0}: "
        "training.LearnRateSchedule.Period must be a positive integer, got '0'");
}

TEST_CASE("schedule config: errors name the line, the option and the fix", "[config][schedule]") {
  const std::string head = kNet + "training:\n  Solver: sgdm\n";  // training options start at line 10
  CHECK(config_error_of(head + "  LearnRateSchedule: cosin\n") ==
        "cfg.yaml:10: training.LearnRateSchedule must be one of none, piecewise, warmup, cosine, polynomial, "
        "exponential, or a schedule object such as {type: cosineLearnRate, Period: 20}, got 'cosin' "
        "(did you mean 'cosine'?)");
  CHECK(config_error_of(head + "  LearnRateSchedule: {type: warmupLearnRate, NumStep: 5}\n") ==
        "cfg.yaml:10: unknown warmupLearnRate property 'NumStep' (did you mean 'NumSteps'?)");
  CHECK(config_error_of(head + "  LearnRateSchedule: {type: warmupLearnRate, Period: 5}\n") ==
        "cfg.yaml:10: unknown warmupLearnRate property 'Period' (known: InitialFactor, FinalFactor, NumSteps, "
        "FrequencyUnit)");
  CHECK(config_error_of(head + "  LearnRateSchedule: {type: cosineLearnRat}\n") ==
        "cfg.yaml:10: training.LearnRateSchedule.type must be one of piecewiseLearnRate, warmupLearnRate, "
        "cosineLearnRate, polynomialLearnRate, exponentialLearnRate, got 'cosineLearnRat' "
        "(did you mean 'cosineLearnRate'?)");
  CHECK(config_error_of(head + "  LearnRateSchedule: {Period: 5}\n") ==
        "cfg.yaml:10: training.LearnRateSchedule: a schedule object needs type: followed by one of "
        "piecewiseLearnRate, warmupLearnRate, cosineLearnRate, polynomialLearnRate, exponentialLearnRate");
  CHECK(config_error_of(head + "  LearnRateSchedule:\n    - warmup\n    - type: polynomialLearnRate\n"
                        "      NumSteps: 0\n") ==
        "cfg.yaml:13: training.LearnRateSchedule[1].NumSteps must be a positive integer, got '0'");
  CHECK(config_error_of(head + "  LearnRateSchedule: {type: cosineLearnRate, FrequencyUnit: epochs}\n") ==
        "cfg.yaml:10: training.LearnRateSchedule.FrequencyUnit must be one of epoch, iteration, got 'epochs' "
        "(did you mean 'epoch'?)");
  CHECK(config_error_of(head + "  LearnRateSchedule: {type: cosineLearnRate, PeriodGrowthFactor: 0.5}\n") ==
        "cfg.yaml:10: training.LearnRateSchedule.PeriodGrowthFactor must be a number >= 1 or Inf, got '0.5'");
  CHECK(config_error_of(head + "  LearnRateSchedule: {type: exponentialLearnRate, DropFactor: 2}\n") ==
        "cfg.yaml:10: training.LearnRateSchedule.DropFactor must be a number in [0, 1], got '2'");
  CHECK(config_error_of(head + "  LearnRateSchedule: {type: polynomialLearnRate, Power: 0}\n") ==
        "cfg.yaml:10: training.LearnRateSchedule.Power must be a positive number, got '0'");
  CHECK(config_error_of(head + "  LearnRateSchedule: {type: warmupLearnRate, InitialFactor: -1}\n") ==
        "cfg.yaml:10: training.LearnRateSchedule.InitialFactor must be a number >= 0, got '-1'");
  CHECK(config_error_of(head + "  LearnRateSchedule:\n    - cosine\n    - warmup\n") ==
        "cfg.yaml:12: training.LearnRateSchedule[1]: the cosineLearnRate before it never ends, so this schedule "
        "would never start (only warmup and polynomial schedules end after NumSteps: put the others last)");
  CHECK(config_error_of(head + "  LearnRateSchedule: [warmup, none]\n") ==
        "cfg.yaml:10: training.LearnRateSchedule[1]: none cannot be part of a list (remove it)");
  CHECK(config_error_of(head + "  LearnRateSchedule: []\n") ==
        "cfg.yaml:10: training.LearnRateSchedule must be a schedule or a non-empty list of schedules, got '[]'");
  CHECK(config_error_of(head + "  LearnRateSchedul: cosine\n") ==
        "cfg.yaml:10: unknown training option 'LearnRateSchedul' (did you mean 'LearnRateSchedule'?)");
}

}  // namespace dlt
