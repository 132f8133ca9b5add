// Training options the configured run would not use: an option of another solver and
// OutputNetwork best-validation without validation data are refused (one ConfigError line with
// the file:line, the option, why and the fix); validation options without validation data and
// LearnRateDrop* without a piecewise schedule load with one warning line each. Only options the
// user wrote count: defaults, and the resolved config.yaml read back, give neither.
#include <catch2/catch.hpp>

#include <algorithm>

#include "config/config.h"
#include "config_test_util.h"
#include "util/error.h"

namespace dlt {
namespace {

using test::config_error_of;
using test::kNet;

// kNet (7 lines), "training:" on line 8, the training lines from line 9, then `tail`.
std::string cfg(const std::string& training, const std::string& tail = "") {
  return kNet + "training:\n" + training + tail;
}

// The warnings of loading `text`, the temp path shown as cfg.yaml.
std::vector<std::string> warnings_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  test::TempDir dir;
  const std::string path = dir.write("cfg.yaml", text);
  std::vector<std::string> out = load_config(path, overrides).warnings;
  for (std::string& w : out)
    for (size_t p; (p = w.find(path)) != std::string::npos;) w.replace(p, path.size(), "cfg.yaml");
  return out;
}

using Lines = std::vector<std::string>;

struct SolverCase {
  std::string option, value;
  std::vector<std::string> read_by;  // the solvers that read it
};

TEST_CASE("option use: each solver option is read by its solvers and refused by the others", "[config]") {
  const std::vector<SolverCase> cases = {
      {"Momentum", "0.5", {"sgdm"}},
      {"GradientDecayFactor", "0.5", {"adam", "adamw"}},
      {"SquaredGradientDecayFactor", "0.5", {"adam", "rmsprop", "adamw"}},
      {"Epsilon", "0.001", {"adam", "rmsprop", "adamw"}},
      {"WeightDecay", "0.05", {"adamw"}},
  };
  for (const SolverCase& c : cases)
    for (const std::string solver : {"sgdm", "adam", "rmsprop", "adamw"}) {
      INFO(c.option << " with " << solver);
      const std::string text = cfg("  Solver: " + solver + "\n  " + c.option + ": " + c.value + "\n");
      const bool reads = std::find(c.read_by.begin(), c.read_by.end(), solver) != c.read_by.end();
      if (reads) {
        CHECK(config_error_of(text) == "no error");
        continue;
      }
      std::string who;  // "adam", "adam and adamw", "adam, rmsprop and adamw"
      for (size_t i = 0; i < c.read_by.size(); ++i)
        who += (i == 0 ? "" : i + 1 == c.read_by.size() ? " and " : ", ") + c.read_by[i];
      CHECK(config_error_of(text) == "cfg.yaml:10: training." + c.option + " is read by Solver " + who +
                                         " only, but Solver is " + solver + " (remove " + c.option +
                                         ", or change Solver)");
    }
  // The values reach the options of the solvers that read them.
  test::TempDir dir;
  const Config a = load_config(dir.write("a.yaml", cfg("  Solver: adam\n  GradientDecayFactor: 0.5\n  "
                                                       "SquaredGradientDecayFactor: 0.25\n  Epsilon: 0.001\n")));
  CHECK(a.training.gradient_decay_factor == 0.5);
  CHECK(a.training.squared_gradient_decay_factor == 0.25);
  CHECK(a.training.epsilon == 0.001);
  CHECK(load_config(dir.write("s.yaml", cfg("  Momentum: 0.5\n"))).training.momentum == 0.5);
  const Config w = load_config(dir.write("w.yaml", cfg("  Solver: adamw\n  WeightDecay: 0.05\n  "
                                                       "GradientDecayFactor: 0.8\n")));
  CHECK(w.training.weight_decay == 0.05);
  CHECK(w.training.gradient_decay_factor == 0.8);
}

TEST_CASE("option use: WeightDecay with sgdm and a negative WeightDecay are refused in one line", "[config]") {
  CHECK(config_error_of(cfg("  WeightDecay: 0.05\n")) ==
        "cfg.yaml:9: training.WeightDecay is read by Solver adamw only, but Solver is sgdm (remove WeightDecay, or "
        "change Solver)");
  CHECK(config_error_of(cfg("  Solver: adam\n"), {"training.WeightDecay=0.05"}) ==
        "--set training.WeightDecay=0.05: training.WeightDecay is read by Solver adamw only, but Solver is adam "
        "(remove WeightDecay, or change Solver)");
  CHECK(config_error_of(cfg("  Solver: adamw\n  WeightDecay: -0.01\n")) ==
        "cfg.yaml:10: training.WeightDecay must be a number >= 0, got '-0.01'");
  CHECK(config_error_of(cfg("  Solver: adamw\n  WeightDecay: 0\n")) == "no error");  // plain adam's step
}

TEST_CASE("option use: adamw's defaults are PyTorch's AdamW; L2Regularization is 0 unless written", "[config]") {
  test::TempDir dir;
  const TrainingOptions d = load_config(dir.write("d.yaml", cfg("  Solver: adamw\n"))).training;
  CHECK(d.solver == Solver::kAdamW);
  CHECK(d.initial_learn_rate == 0.001);
  CHECK(d.gradient_decay_factor == 0.9);
  CHECK(d.squared_gradient_decay_factor == 0.999);
  CHECK(d.epsilon == 1e-8);
  CHECK(d.weight_decay == 0.01);
  CHECK(d.l2_regularization == 0);
  // Written, L2Regularization is kept (an L2 term in the gradient besides the decay).
  const TrainingOptions l2 =
      load_config(dir.write("l.yaml", cfg("  Solver: adamw\n  L2Regularization: 0.0005\n"))).training;
  CHECK(l2.l2_regularization == 0.0005);
  CHECK(l2.weight_decay == 0.01);
  // The other solvers keep MATLAB's L2Regularization default.
  CHECK(load_config(dir.write("a.yaml", cfg("  Solver: adam\n"))).training.l2_regularization == 1e-4);
}

TEST_CASE("option use: --set is judged like the file, at the option's own place", "[config]") {
  // The option from --set on an adam file.
  CHECK(config_error_of(cfg("  Solver: adam\n"), {"training.Momentum=0.5"}) ==
        "--set training.Momentum=0.5: training.Momentum is read by Solver sgdm only, but Solver is adam "
        "(remove Momentum, or change Solver)");
  // The solver from --set: the file's Momentum line is named.
  CHECK(config_error_of(cfg("  Momentum: 0.95\n"), {"training.Solver=rmsprop"}) ==
        "cfg.yaml:9: training.Momentum is read by Solver sgdm only, but Solver is rmsprop "
        "(remove Momentum, or change Solver)");
  CHECK(config_error_of(cfg("  Solver: adam\n  Epsilon: 0.001\n"), {"training.Solver=sgdm"}) ==
        "cfg.yaml:10: training.Epsilon is read by Solver adam, rmsprop and adamw only, but Solver is sgdm "
        "(remove Epsilon, or change Solver)");
}

TEST_CASE("option use: config.yaml leaves out the other solvers' options and loads back", "[config]") {
  test::TempDir dir;
  for (const std::string solver : {"sgdm", "adam", "rmsprop", "adamw"}) {
    INFO(solver);
    const Config a = load_config(dir.write("a.yaml", cfg("  Solver: " + solver + "\n")));
    const std::string dumped = dump_config(a);
    CHECK((dumped.find("Momentum:") != std::string::npos) == (solver == "sgdm"));
    CHECK((dumped.find("  GradientDecayFactor:") != std::string::npos) == (solver == "adam" || solver == "adamw"));
    CHECK((dumped.find("WeightDecay:") != std::string::npos) == (solver == "adamw"));
    CHECK((dumped.find("SquaredGradientDecayFactor:") != std::string::npos) == (solver != "sgdm"));
    CHECK((dumped.find("Epsilon:") != std::string::npos) == (solver != "sgdm"));
    const Config b = load_config(dir.write("config.yaml", dumped));
    test::require_same_config(a, b);
    CHECK(b.warnings.empty());
  }
}

TEST_CASE("option use: OutputNetwork best-validation without validation data is refused", "[config]") {
  const std::string fix =
      " is best-validation but there is no validation data (give data.validation or data.ValidationSplit, or "
      "write OutputNetwork: last-iteration)";
  CHECK(config_error_of(cfg("  OutputNetwork: best-validation\n")) == "cfg.yaml:9: training.OutputNetwork" + fix);
  CHECK(config_error_of(cfg("  MaxEpochs: 2\n  OutputNetwork: best-validation-loss\n")) ==
        "cfg.yaml:10: training.OutputNetwork" + fix);
  CHECK(config_error_of(cfg("  MaxEpochs: 2\n"), {"training.OutputNetwork=best-validation"}) ==
        "--set training.OutputNetwork=best-validation: training.OutputNetwork" + fix);
  // --set data.validation= takes the file's validation folder away.
  CHECK(config_error_of(cfg("  OutputNetwork: best-validation\n", "data: {validation: val}\n"), {"data.validation="}) ==
        "cfg.yaml:9: training.OutputNetwork" + fix);
  // With a validation folder or a split it loads; last-iteration never needs validation.
  CHECK(config_error_of(cfg("  OutputNetwork: best-validation\n", "data: {validation: val}\n")) == "no error");
  CHECK(config_error_of(cfg("  OutputNetwork: best-validation\n", "data: {ValidationSplit: 0.2}\n")) == "no error");
  CHECK(config_error_of(cfg("  OutputNetwork: last-iteration\n")) == "no error");
}

TEST_CASE("option use: validation options without validation data load with one warning each", "[config]") {
  const std::string why = " has no effect: there is no validation data (give data.validation or data.ValidationSplit)";
  CHECK(warnings_of(cfg("  ValidationPatience: 3\n")) == Lines{"cfg.yaml:9: training.ValidationPatience" + why});
  CHECK(warnings_of(cfg("  ValidationFrequency: 10\n")) == Lines{"cfg.yaml:9: training.ValidationFrequency" + why});
  CHECK(warnings_of(cfg("  Metrics: [fscore, auc]\n  ObjectiveMetricName: fscore\n")) ==
        Lines{"cfg.yaml:9: training.Metrics" + why, "cfg.yaml:10: training.ObjectiveMetricName" + why});
  CHECK(warnings_of(cfg("  MaxEpochs: 2\n"), {"training.ValidationPatience=4"}) ==
        Lines{"--set training.ValidationPatience=4: training.ValidationPatience" + why});
  // The values still load (they take effect once validation data is given).
  test::TempDir dir;
  CHECK(load_config(dir.write("p.yaml", cfg("  ValidationPatience: 3\n"))).training.validation_patience == 3);
  // Values that ask for nothing (what config.yaml writes), and any value with validation data: no warning.
  CHECK(warnings_of(cfg("  ValidationPatience: Inf\n  ValidationFrequency: 50\n  Metrics: []\n"
                        "  ObjectiveMetricName: loss\n  OutputNetwork: last-iteration\n"))
            .empty());
  CHECK(warnings_of(cfg("  ValidationPatience: 3\n  Metrics: [fscore]\n", "data: {validation: val}\n")).empty());
  CHECK(warnings_of(cfg("  ValidationFrequency: 10\n", "data: {ValidationSplit: 0.1}\n")).empty());
}

TEST_CASE("option use: LearnRateDrop options without a piecewise schedule load with a warning", "[config]") {
  const std::string why =
      " has no effect: LearnRateSchedule is not piecewise (write LearnRateSchedule: piecewise, or a "
      "piecewiseLearnRate object with DropFactor and Period)";
  CHECK(warnings_of(cfg("  LearnRateDropFactor: 0.5\n  LearnRateDropPeriod: 3\n")) ==
        Lines{"cfg.yaml:9: training.LearnRateDropFactor" + why, "cfg.yaml:10: training.LearnRateDropPeriod" + why});
  CHECK(warnings_of(cfg("  LearnRateSchedule: cosine\n  LearnRateDropFactor: 0.5\n")) ==
        Lines{"cfg.yaml:10: training.LearnRateDropFactor" + why});
  // An object reads its own DropFactor, not LearnRateDropFactor.
  CHECK(warnings_of(cfg("  LearnRateSchedule: {type: piecewiseLearnRate, DropFactor: 0.5}\n"
                        "  LearnRateDropFactor: 0.5\n")) == Lines{"cfg.yaml:10: training.LearnRateDropFactor" + why});
  CHECK(warnings_of(cfg("  LearnRateSchedule: piecewise\n  LearnRateDropFactor: 0.5\n")).empty());
  CHECK(warnings_of(cfg("  LearnRateSchedule: [warmup, piecewise]\n  LearnRateDropPeriod: 3\n")).empty());
  CHECK(warnings_of(cfg("  LearnRateDropFactor: 0.1\n  LearnRateDropPeriod: 10\n")).empty());  // the defaults
}

TEST_CASE("option use: a resolved config.yaml without validation data loads back without a word", "[config]") {
  test::TempDir dir;
  const Config a = load_config(dir.write("a.yaml", cfg("  Solver: rmsprop\n  MaxEpochs: 3\n")));
  CHECK(a.warnings.empty());
  const Config b = load_config(dir.write("config.yaml", dump_config(a)));
  CHECK(b.warnings.empty());
  test::require_same_config(a, b);
}

}  // namespace
}  // namespace dlt
