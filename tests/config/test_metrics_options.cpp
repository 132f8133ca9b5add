// Metrics, ObjectiveMetricName, OutputNetwork and TensorBoard: read into their types, written
// back by dump_config, and each bad value one line naming the file, line and fix.
#include <catch2/catch.hpp>

#include "config/config.h"
#include "config_test_util.h"
#include "util/error.h"

namespace dlt {
namespace {

using test::kNet;

// With validation data (after the training: lines, which start at line 9), which these options need.
const std::string kValidation = "data: {validation: val}\n";

Config load(test::TempDir& dir, const std::string& training, const std::vector<std::string>& overrides = {}) {
  return load_config(dir.write("cfg.yaml", kNet + "training:\n" + training + kValidation), overrides);
}

std::string error_of(const std::string& training, const std::vector<std::string>& overrides = {}) {
  test::TempDir dir;
  const std::string path = dir.write("cfg.yaml", kNet + "training:\n" + training + kValidation);
  try {
    load_config(path, overrides);
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    for (size_t p; (p = msg.find(path)) != std::string::npos;) msg.replace(p, path.size(), "cfg.yaml");
    return msg;
  }
  return "no error";
}

TEST_CASE("metrics options: defaults and typed values", "[config]") {
  test::TempDir dir;
  const TrainingOptions d = load(dir, "  MaxEpochs: 1\n").training;
  CHECK(d.metrics.empty());
  CHECK(d.objective_metric == Metric::kLoss);
  CHECK(d.output_network == OutputNetwork::kLastIteration);
  CHECK_FALSE(d.tensorboard);
  const TrainingOptions t = load(dir,
                                 "  Metrics: [FScore, auc, accuracy]\n  ObjectiveMetricName: fscore\n"
                                 "  OutputNetwork: best-validation\n  TensorBoard: true\n")
                                .training;
  CHECK(t.metrics == std::vector<Metric>{Metric::kFScore, Metric::kAuc, Metric::kAccuracy});
  CHECK(t.objective_metric == Metric::kFScore);
  CHECK(t.output_network == OutputNetwork::kBestValidation);
  CHECK(t.tensorboard);
  CHECK(t.tensorboard_dir.empty());
  // MATLAB's space-separated list, a single name, the older OutputNetwork spelling, a folder.
  const TrainingOptions u = load(dir,
                                 "  Metrics: [precision recall]\n  OutputNetwork: best-validation-loss\n"
                                 "  TensorBoard: /tmp/tb runs\n")
                                .training;
  CHECK(u.metrics == std::vector<Metric>{Metric::kPrecision, Metric::kRecall});
  CHECK(u.output_network == OutputNetwork::kBestValidation);
  CHECK(u.tensorboard);
  CHECK(u.tensorboard_dir == "/tmp/tb runs");
  CHECK(load(dir, "  Metrics: iou\n").training.metrics == std::vector<Metric>{Metric::kIoU});
  CHECK(load(dir, "  TensorBoard: false\n").training.tensorboard == false);
  // --set reaches them too.
  const TrainingOptions s =
      load(dir, "  MaxEpochs: 1\n", {"training.Metrics=[recall]", "training.ObjectiveMetricName=recall"}).training;
  CHECK(s.objective_metric == Metric::kRecall);
}

TEST_CASE("metrics options: dump writes them back and loads equal", "[config]") {
  test::TempDir dir;
  for (const std::string text : {"  Metrics: [fscore, auc]\n  ObjectiveMetricName: auc\n  TensorBoard: \"a b/tb\"\n"
                                 "  OutputNetwork: best-validation-loss\n",
                                 "  TensorBoard: true\n", "  MaxEpochs: 2\n"}) {
    const Config a = load(dir, text);
    const std::string dumped = dump_config(a);
    const Config b = load_config(dir.write("config.yaml", dumped), {});
    test::require_same_config(a, b);
    CHECK(dump_config(b) == dumped);
  }
  const std::string dumped =
      dump_config(load(dir, "  Metrics: [fscore, auc]\n  OutputNetwork: best-validation-loss\n"));
  CHECK(dumped.find("Metrics: [fscore, auc]") != std::string::npos);
  CHECK(dumped.find("OutputNetwork: best-validation\n") != std::string::npos);
  CHECK(dumped.find("ObjectiveMetricName: loss") != std::string::npos);
  CHECK(dumped.find("TensorBoard: false") != std::string::npos);
}

TEST_CASE("metrics options: bad values are one line with file:line and the fix", "[config]") {
  // training: is line 8; its first option line 9.
  CHECK(error_of("  Metrics: [fscore, fscor]\n") ==
        "cfg.yaml:9: training.Metrics must be a list of accuracy, fscore, precision, recall, auc, iou, rmse, mae, mape, got "
        "'[fscore, fscor]' (did you mean 'fscore'?)");
  CHECK(error_of("  Metrics: [loss]\n") ==
        "cfg.yaml:9: training.Metrics must be a list of accuracy, fscore, precision, recall, auc, iou, rmse, mae, mape, got "
        "'[loss]' (the loss is always computed; list the other metrics)");
  CHECK(error_of("  Metrics: [auc, auc]\n") ==
        "cfg.yaml:9: training.Metrics must be a list of distinct metrics, got '[auc, auc]' (auc twice)");
  CHECK(error_of("  Metrics: [fscore]\n  ObjectiveMetricName: recall\n") ==
        "cfg.yaml:10: training.ObjectiveMetricName is recall but training.Metrics does not list it "
        "(add recall to Metrics, or watch loss)");
  CHECK(error_of("  ObjectiveMetricName: los\n") ==
        "cfg.yaml:9: training.ObjectiveMetricName must be loss or a name in Metrics (loss, accuracy, fscore, "
        "precision, recall, auc, iou, rmse, mae, mape), got 'los' (did you mean 'loss'?)");
  CHECK(error_of("  OutputNetwork: best\n")
            .rfind("cfg.yaml:9: training.OutputNetwork must be one of last-iteration, best-validation, "
                   "best-validation-loss, got 'best'",
                   0) == 0);
  CHECK(error_of("  TensorBoard: [a]\n") ==
        "cfg.yaml:9: training.TensorBoard must be true, false or a folder, got '[a]'");
  CHECK(error_of("  Metrics: [accuracy]\n  ObjectiveMetricName: Accuracy\n") == "no error");
}

}  // namespace
}  // namespace dlt
