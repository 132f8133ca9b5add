// Training options that the configured run would not use: an option of another solver is
// refused (MATLAB's trainingOptions refuses it too), OutputNetwork best-validation without
// validation data is refused (it cannot work), and an option that only matters with validation
// data or with LearnRateSchedule piecewise is warned about (MATLAB accepts those). Only options
// the user wrote (the file or --set) are judged, never defaults; value checks are the fields'.
#include <algorithm>

#include "config/sections.h"
#include "util/error.h"
#include "util/strings.h"

namespace dlt::cfg {

namespace {

// The solvers that read an option; an option not listed here is read by every solver.
struct SolverOption {
  const char* name;
  std::vector<Solver> solvers;
};
const std::vector<SolverOption>& solver_options() {
  static const std::vector<SolverOption> v = {
      {"Momentum", {Solver::kSgdm}},
      {"GradientDecayFactor", {Solver::kAdam, Solver::kAdamW}},
      {"SquaredGradientDecayFactor", {Solver::kAdam, Solver::kRmsprop, Solver::kAdamW}},
      {"Epsilon", {Solver::kAdam, Solver::kRmsprop, Solver::kAdamW}},
      {"WeightDecay", {Solver::kAdamW}},
  };
  return v;
}

// "sgdm", "adam and adamw", "adam, rmsprop and adamw".
std::string solver_list(const std::vector<Solver>& solvers) {
  std::vector<std::string> names;
  for (Solver s : solvers) names.push_back(to_string(s));
  const std::string last = names.back();
  names.pop_back();
  return names.empty() ? last : join(names, ", ") + " and " + last;
}

// Whether the schedule list has a named piecewise entry (the one that reads LearnRateDrop*).
bool reads_drop_options(const std::vector<ScheduleSpec>& schedules) {
  for (const ScheduleSpec& s : schedules)
    if (s.named && s.kind == ScheduleKind::piecewise) return true;
  return false;
}

}  // namespace

bool solver_reads(const std::string& option, Solver solver) {
  for (const SolverOption& o : solver_options())
    if (option == o.name) return std::find(o.solvers.begin(), o.solvers.end(), solver) != o.solvers.end();
  return true;
}

void check_option_use(const YAML::Node& training, const Origin& origin, const DataOptions& data,
                      const TrainingOptions& o, std::vector<std::string>& warnings) {
  if (!training.IsDefined() || !training.IsMap()) return;  // nothing written
  const TrainingOptions defaults;
  const bool validation = !data.validation.empty() || data.validation_split > 0;
  const std::string no_validation = "there is no validation data (give data.validation or data.ValidationSplit";
  for (const Entry& e : map_entries(training, origin, "training")) {
    const std::string at = origin.loc(e.key_node, e.value).prefix() + "training." + e.key;
    for (const SolverOption& s : solver_options())
      if (e.key == s.name && !solver_reads(e.key, o.solver))
        throw ConfigError(at + " is read by Solver " + solver_list(s.solvers) + " only, but Solver is " +
                          to_string(o.solver) + " (remove " + e.key + ", or change Solver)");
    if (!validation) {
      if (e.key == "OutputNetwork" && o.output_network == OutputNetwork::kBestValidation)
        throw ConfigError(at + " is best-validation but " + no_validation +
                          ", or write OutputNetwork: last-iteration)");
      // Warned about only when the value asks for something (config.yaml writes every option).
      const bool asks = (e.key == "ValidationFrequency" && o.validation_frequency != defaults.validation_frequency) ||
                        (e.key == "ValidationPatience" && o.validation_patience >= 0) ||
                        (e.key == "Metrics" && !o.metrics.empty()) ||
                        (e.key == "ObjectiveMetricName" && o.objective_metric != Metric::kLoss);
      if (asks) warnings.push_back(at + " has no effect: " + no_validation + ")");
    }
    if (!reads_drop_options(o.learn_rate_schedule)) {
      const bool asks =
          (e.key == "LearnRateDropFactor" && o.learn_rate_drop_factor != defaults.learn_rate_drop_factor) ||
          (e.key == "LearnRateDropPeriod" && o.learn_rate_drop_period != defaults.learn_rate_drop_period);
      if (asks)
        warnings.push_back(at + " has no effect: LearnRateSchedule is not piecewise (write LearnRateSchedule: " +
                           "piecewise, or a piecewiseLearnRate object with DropFactor and Period)");
    }
  }
}

}  // namespace dlt::cfg
