// MATLAB trainingOptions names from the seed scripts (shared/seeds/000-004): each one is either
// read, from the YAML file and from --set alike, or refused with the same hint from both.
// Also Plots / PlotIntervalSeconds and training.ValidationData, which is data.validation.
#include <catch2/catch.hpp>

#include <utility>

#include "config/config.h"
#include "config_test_util.h"
#include "util/error.h"

namespace dlt {
namespace {

using test::kNet;

// The ConfigError message for loading `text` with `overrides`, the temp path shown as cfg.yaml.
std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  test::TempDir dir;
  const std::string path = dir.write("cfg.yaml", text);
  try {
    load_config(path, overrides);
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    for (size_t p; (p = msg.find(path)) != std::string::npos;) msg.replace(p, path.size(), "cfg.yaml");
    return msg;
  }
  return "no error";
}

Config load(const std::string& text, const std::vector<std::string>& overrides = {}) {
  test::TempDir dir;
  return load_config(dir.write("cfg.yaml", text), overrides);
}

// Every trainingOptions name-value pair in the seeds, with a value a seed gives it
// (DispatchInBackground is a datastore property there, a training option here), and whether
// that value is also dltrain's default.
struct SeedOption {
  std::string name, value;
  bool is_default;
};
const std::vector<SeedOption> kSeedOptions = {
    {"InitialLearnRate", "0.00125", false},
    {"LearnRateSchedule", "piecewise", false},
    {"LearnRateDropFactor", "0.1", true},
    {"LearnRateDropPeriod", "20", false},
    {"L2Regularization", "0.004", false},
    {"Momentum", "0.9", true},
    {"MaxEpochs", "40", false},
    {"MiniBatchSize", "250", false},
    {"Shuffle", "every-epoch", false},
    {"Verbose", "false", false},
    {"VerboseFrequency", "2", false},
    {"ExecutionEnvironment", "multi-gpu", false},
    {"WorkerLoad", "[2, 1]", false},
    {"Plots", "training-progress", true},
    {"DispatchInBackground", "true", true},
};

// MATLAB names dltrain does not read, each with the hint both sources must give.
const std::vector<std::pair<std::string, std::string>> kRefused = {
    {"SolverName", "(write Solver: sgdm)"},
    {"OutputFcn", "(dltrain runs no callbacks: read log.csv and progress.png in the output folder"},
    {"SequenceLength", "(a sequence option: dltrain trains image classifiers only, remove it)"},
};

TEST_CASE("matlab options: every seed trainingOptions name loads from YAML and from --set alike", "[config]") {
  const std::string plain = dump_config(load(kNet));
  for (const SeedOption& o : kSeedOptions) {
    INFO(o.name << ": " << o.value);
    Config from_file = load(kNet + "training:\n  " + o.name + ": " + o.value + "\n");
    Config from_set = load(kNet, {"training." + o.name + "=" + o.value});
    test::require_same_training(from_file.training, from_set.training);
    // The value took: the resolved config differs from the defaults unless it is the default.
    CHECK((dump_config(from_file) == plain) == o.is_default);
  }
}

TEST_CASE("matlab options: a refused name gets the same hint from YAML and --set", "[config]") {
  for (const auto& [name, hint] : kRefused) {
    INFO(name);
    const std::string file = error_of(kNet + "training:\n  " + name + ": x\n");
    const std::string set = error_of(kNet, {"training." + name + "=x"});
    const std::string what = "unknown training option '" + name + "' " + hint;
    CHECK(file.rfind("cfg.yaml:9: " + what, 0) == 0);
    CHECK(set.rfind("--set training." + name + "=x: " + what, 0) == 0);
    CHECK(file.substr(file.find("unknown")) == set.substr(set.find("unknown")));
  }
  // Unknown names without a hint: the same did-you-mean, or the same list of known keys.
  for (const std::string name : {"MaxEpoch", "Plot", "Zzzzzz"}) {
    INFO(name);
    const std::string file = error_of(kNet + "training:\n  " + name + ": 1\n");
    const std::string set = error_of(kNet, {"training." + name + "=1"});
    REQUIRE(file.find("unknown") != std::string::npos);
    REQUIRE(set.find("unknown") != std::string::npos);
    CHECK(file.substr(file.find("unknown")) == set.substr(set.find("unknown")));
  }
  // No close name: where the names are listed, not the whole list.
  CHECK(error_of(kNet + "training:\n  Zzzzzz: 1\n") ==
        "cfg.yaml:9: unknown training option 'Zzzzzz' (docs/config.md lists every training option)");
  // Close names: those the key begins, else the closest (ties together), up to three.
  CHECK(error_of(kNet + "training:\n  MaxEpoch: 1\n") ==
        "cfg.yaml:9: unknown training option 'MaxEpoch' (did you mean 'MaxEpochs'?)");
  CHECK(error_of(kNet, {"training.Verbos=1"}) ==
        "--set training.Verbos=1: unknown training option 'Verbos' (did you mean 'Verbose'?)");
  CHECK(error_of(kNet + "training:\n  CommunicationTim: 1\n") ==
        "cfg.yaml:9: unknown training option 'CommunicationTim' (did you mean 'CommunicationTiming' or "
        "'CommunicationTimeout'?)");
  CHECK(error_of(kNet + "training:\n  CheckpointFreq: 1\n") ==
        "cfg.yaml:9: unknown training option 'CheckpointFreq' (did you mean 'CheckpointFrequency' or "
        "'CheckpointFrequencyUnit'?)");
  CHECK(error_of(kNet + "training:\n  verb: 1\n") ==
        "cfg.yaml:9: unknown training option 'verb' (did you mean 'Verbose', 'VerboseLayout' or "
        "'VerboseFrequency'?)");
}

TEST_CASE("matlab options: MATLAB names dltrain does not have, one short line", "[config]") {
  for (const std::string name : {"Acceleration", "PreprocessingEnvironment", "InputDataFormats", "LineSearchMethod"}) {
    INFO(name);
    const std::string what =
        "training." + name + " is a MATLAB option dltrain does not have (remove it; docs/matlab.md lists them)";
    CHECK(error_of(kNet + "training:\n  MaxEpochs: 2\n  " + name + ": auto\n") == "cfg.yaml:10: " + what);
    CHECK(error_of(kNet, {"training." + name + "=auto"}) == "--set training." + name + "=auto: " + what);
  }
  CHECK(error_of(kNet + "data:\n  ReadFcn: myread\n") ==
        "cfg.yaml:9: data.ReadFcn is a MATLAB imageDatastore property dltrain does not have (remove it; "
        "docs/matlab.md lists them)");
  // MATLAB names dltrain has are read, not refused.
  for (const std::string kv : {"DispatchInBackground=false", "CheckpointFrequency=2"})
    CHECK(error_of(kNet, {"training." + kv}) == "no error");
}

TEST_CASE("matlab options: --set of a key without its section names the section", "[config]") {
  CHECK(error_of(kNet, {"MaxEpochs=1"}) ==
        "--set MaxEpochs=1: unknown section 'MaxEpochs' (did you mean training.MaxEpochs=1?)");
  CHECK(error_of(kNet, {"maxepochs=1"}) ==
        "--set maxepochs=1: unknown section 'maxepochs' (did you mean training.MaxEpochs=1?)");
  CHECK(error_of(kNet, {"MaxEpoch=1"}) ==
        "--set MaxEpoch=1: unknown section 'MaxEpoch' (did you mean training.MaxEpochs=1?)");
  CHECK(error_of(kNet, {"ValidationSplit=0.1"}) ==
        "--set ValidationSplit=0.1: unknown section 'ValidationSplit' (did you mean data.ValidationSplit=0.1?)");
  CHECK(error_of(kNet, {"RandXReflection=true"}) ==
        "--set RandXReflection=true: unknown section 'RandXReflection' (did you mean "
        "data.Augmentation.RandXReflection=true?)");
  // Nothing close: the sections.
  CHECK(error_of(kNet, {"Zzzzzz=1"}) == "--set Zzzzzz=1: unknown section 'Zzzzzz' (sections: layers, data, training)");
}

TEST_CASE("matlab options: the seeds' datastore names, from YAML and --set alike", "[config]") {
  // Read: imageDatastore's IncludeSubfolders and LabelSource.
  for (const std::string& kv : {std::string("IncludeSubfolders=false"), std::string("LabelSource=foldernames")}) {
    const std::string name = kv.substr(0, kv.find('=')), value = kv.substr(kv.find('=') + 1);
    INFO(name);
    Config from_file = load(kNet + "data:\n  " + name + ": " + value + "\n");
    Config from_set = load(kNet, {"data." + kv});
    test::require_same_data(from_file.data, from_set.data);
  }
  // Refused with one hint: seed 000's 'IncludeSubFolders' spelling, DataAugmentation, ValidationData.
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"IncludeSubFolders", "(did you mean 'IncludeSubfolders'?)"},
      {"DataAugmentation", "(write Augmentation: {RandXReflection: true, ...}, imageDataAugmenter's options)"},
      {"ValidationData", "(write validation: <folder>)"},
  };
  for (const auto& [name, hint] : refused) {
    INFO(name);
    CHECK(error_of(kNet + "data:\n  " + name + ": x\n") == "cfg.yaml:9: unknown data key '" + name + "' " + hint);
    CHECK(error_of(kNet, {"data." + name + "=x"}) ==
          "--set data." + name + "=x: unknown data key '" + name + "' " + hint);
  }
}

TEST_CASE("matlab options: Plots and PlotIntervalSeconds", "[config]") {
  Config def = load(kNet);
  CHECK(def.training.plots == Plots::kTrainingProgress);
  CHECK(def.training.plot_interval_seconds == 10);
  CHECK(load(kNet + "training:\n  Plots: none\n").training.plots == Plots::kNone);
  CHECK(load(kNet, {"training.Plots=none"}).training.plots == Plots::kNone);
  CHECK(load(kNet, {"training.PlotIntervalSeconds=0.5"}).training.plot_interval_seconds == 0.5);
  CHECK(error_of(kNet + "training:\n  Plots: training_progress\n") ==
        "cfg.yaml:9: training.Plots must be one of training-progress, none, got 'training_progress' "
        "(did you mean 'training-progress'?)");
  CHECK(error_of(kNet, {"training.PlotIntervalSeconds=0"}) ==
        "--set training.PlotIntervalSeconds=0: training.PlotIntervalSeconds must be a positive number of "
        "seconds, got '0'");
}

TEST_CASE("matlab options: training.ValidationData is data.validation", "[config]") {
  CHECK(load(kNet + "training:\n  ValidationData: data/val\n").data.validation == "data/val");
  CHECK(load(kNet + "data:\n  train: t\ntraining:\n  MaxEpochs: 2\n  ValidationData: data/val\n").data.validation ==
        "data/val");
  CHECK(load(kNet, {"training.ValidationData=data/val"}).data.validation == "data/val");
  // --set wins over the file, whichever name either uses.
  CHECK(load(kNet + "data:\n  validation: a\n", {"training.ValidationData=b"}).data.validation == "b");
  CHECK(load(kNet + "training:\n  ValidationData: a\n", {"data.validation=b"}).data.validation == "b");
  // The resolved config names it data.validation.
  const std::string dumped = dump_config(load(kNet + "training:\n  ValidationData: data/val\n"));
  CHECK(dumped.find("ValidationData") == std::string::npos);
  CHECK(dumped.find("validation: \"data/val\"") != std::string::npos);
  // Given twice in the file, or not a folder name.
  CHECK(error_of(kNet + "data:\n  validation: a\ntraining:\n  ValidationData: b\n") ==
        "cfg.yaml:11: training.ValidationData and data.validation (line 9) both give the validation folder "
        "(keep data.validation)");
  CHECK(error_of(kNet + "training:\n  ValidationData: [a, b]\n") ==
        "cfg.yaml:9: training.ValidationData must be a folder of class folders (dltrain reads it as "
        "data.validation), got '[a, b]'");
}

}  // namespace
}  // namespace dlt
