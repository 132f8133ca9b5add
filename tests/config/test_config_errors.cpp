// Every class of config error: one ConfigError line "file:line: what (fix)", with the exact
// line and did-you-mean asserted. Configs are written to temp files; the temp path in the
// message is replaced by "cfg.yaml" before comparing.
#include <catch2/catch.hpp>

#include "config/config.h"
#include "config_test_util.h"
#include "util/error.h"

namespace dlt {
namespace {

using test::kNet;

using test::config_error_of;

TEST_CASE("config errors: training value types and ranges", "[config]") {
  std::string head = kNet + "training:\n  Solver: sgdm\n";  // training options start at line 10
  CHECK(config_error_of(head + "  MaxEpochs: abc\n") ==
        "cfg.yaml:10: training.MaxEpochs must be a positive integer, got 'abc'");
  CHECK(config_error_of(head + "  MaxEpochs: 2.5\n") ==
        "cfg.yaml:10: training.MaxEpochs must be a positive integer, got '2.5'");
  CHECK(config_error_of(head + "  MiniBatchSize: 0\n") ==
        "cfg.yaml:10: training.MiniBatchSize must be a positive integer, got '0'");
  CHECK(config_error_of(head + "  InitialLearnRate: -0.1\n") ==
        "cfg.yaml:10: training.InitialLearnRate must be a positive number, got '-0.1'");
  CHECK(config_error_of(head + "  InitialLearnRate: 0\n") ==
        "cfg.yaml:10: training.InitialLearnRate must be a positive number, got '0'");
  CHECK(config_error_of(head + "  Momentum: 1.5\n") ==
        "cfg.yaml:10: training.Momentum must be a number in [0, 1], got '1.5'");
  CHECK(config_error_of(head + "  GradientDecayFactor: 1\n") ==
        "cfg.yaml:10: training.GradientDecayFactor must be a number in [0, 1), got '1'");
  CHECK(config_error_of(head + "  Verbose: maybe\n") ==
        "cfg.yaml:10: training.Verbose must be true or false, got 'maybe'");
  CHECK(config_error_of(head + "  MaxEpochs: [1, 2]\n") ==
        "cfg.yaml:10: training.MaxEpochs must be a positive integer, got '[1, 2]'");
  CHECK(config_error_of(head + "  MaxEpochs:\n") ==
        "cfg.yaml:10: training.MaxEpochs must be a positive integer, got ''");
  CHECK(config_error_of(head + "  ValidationPatience: 0\n") ==
        "cfg.yaml:10: training.ValidationPatience must be a positive integer or Inf, got '0'");
  CHECK(config_error_of(head + "  GradientThreshold: -1\n") ==
        "cfg.yaml:10: training.GradientThreshold must be a positive number or Inf, got '-1'");
  CHECK(config_error_of(head + "  GPUDevice: 99999999999\n") ==
        "cfg.yaml:10: training.GPUDevice must be an integer >= 0, got '99999999999'");
  CHECK(config_error_of(head + "  Seed: -3\n") == "cfg.yaml:10: training.Seed must be an integer >= 0, got '-3'");
  CHECK(config_error_of(head + "  WorkerLoad: [1, -1]\n") ==
        "cfg.yaml:10: training.WorkerLoad must be a list of numbers >= 0, got '[1, -1]'");
}

TEST_CASE("config errors: enum values get did-you-mean", "[config]") {
  std::string head = kNet + "training:\n";  // line 9 onwards
  CHECK(config_error_of(head + "  Solver: sgd\n") ==
        "cfg.yaml:9: training.Solver must be one of sgdm, adam, rmsprop, adamw, got 'sgd' (did you mean 'sgdm'?)");
  CHECK(config_error_of(head + "  Shuffle: every_epoch\n") ==
        "cfg.yaml:9: training.Shuffle must be one of once, never, every-epoch, got 'every_epoch' "
        "(did you mean 'every-epoch'?)");
  CHECK(config_error_of(kNet + "data:\n  Cache: memroy\n") ==
        "cfg.yaml:9: data.Cache must be one of auto, memory, file, none, got 'memroy' (did you mean 'memory'?)");
  CHECK(config_error_of(head + "  Solver: ADAM\n") == "no error");  // values are case-insensitive
}

TEST_CASE("config errors: unknown keys and sections", "[config]") {
  CHECK(config_error_of(kNet + "training:\n  MaxEpoch: 3\n") ==
        "cfg.yaml:9: unknown training option 'MaxEpoch' (did you mean 'MaxEpochs'?)");
  // Option names are exact; a case-only mismatch is suggested.
  CHECK(config_error_of(kNet + "training:\n  maxepochs: 3\n") ==
        "cfg.yaml:9: unknown training option 'maxepochs' (did you mean 'MaxEpochs'?)");
  CHECK(config_error_of(kNet + "training:\n  SolverName: sgdm\n") ==
        "cfg.yaml:9: unknown training option 'SolverName' (write Solver: sgdm)");
  CHECK(config_error_of(kNet + "data:\n  Train: x\n") ==
        "cfg.yaml:9: unknown data key 'Train' (did you mean 'train'?)");
  CHECK(config_error_of(kNet + "data:\n  Augmentation:\n    RandXReflect: true\n") ==
        "cfg.yaml:10: unknown data.Augmentation option 'RandXReflect' (did you mean 'RandXReflection'?)");
  CHECK(config_error_of(kNet + "trainig:\n  MaxEpochs: 3\n") ==
        "cfg.yaml:8: unknown section 'trainig' (did you mean 'training'?)");
  CHECK(config_error_of(kNet + "zzz: 1\n") == "cfg.yaml:8: unknown section 'zzz' (sections: layers, data, training)");
  CHECK(config_error_of(kNet + "training:\n  MaxEpochs: 3\n  MaxEpochs: 4\n") ==
        "cfg.yaml:10: duplicate key 'MaxEpochs' in training (give each key once)");
  CHECK(config_error_of(kNet + "training: 5\n") == "cfg.yaml:8: training must be a map of key: value lines, got '5'");
}

TEST_CASE("config errors: data values", "[config]") {
  CHECK(config_error_of(kNet + "data:\n  ValidationSplit: 1\n") ==
        "cfg.yaml:9: data.ValidationSplit must be a number in [0, 1), got '1'");
  CHECK(config_error_of(kNet + "data:\n  FileExtensions: [png]\n") ==
        "cfg.yaml:9: data.FileExtensions must be a list of file extensions like [.png, .jpg], got '[png]' "
        "(write '.png')");
  CHECK(config_error_of(kNet + "data:\n  Augmentation: {RandRotation: [10, -10]}\n") ==
        "cfg.yaml:9: data.Augmentation.RandRotation must be a range [min, max] of numbers with min <= max, "
        "got '[10, -10]' (swap the two numbers)");
  CHECK(config_error_of(kNet + "data:\n  Augmentation: {RandScale: [0, 2]}\n") ==
        "cfg.yaml:9: data.Augmentation.RandScale must be a range [min, max] of numbers > 0 with min <= max, "
        "got '[0, 2]'");
  CHECK(config_error_of(kNet + "data:\n  Augmentation: {RandScale: [0.9, 1.1], RandXScale: [1, 2]}\n") ==
        "cfg.yaml:9: data.Augmentation has RandScale and RandXScale / RandYScale: MATLAB's imageDataAugmenter ignores "
        "the latter then; give one or the other");
  CHECK(config_error_of(kNet + "data:\n  Augmentation: {RandYShear: [-10, 90]}\n") ==
        "cfg.yaml:9: data.Augmentation.RandYShear must be a range of angles in (-90, 90) degrees, got [-10, 90]");
  CHECK(config_error_of(kNet + "data:\n  Augmentation: {FillValue: [0, 300]}\n") ==
        "cfg.yaml:9: data.Augmentation.FillValue must be pixel values in [0, 255] (one, or one per channel), got 300");
  CHECK(config_error_of(kNet + "data:\n  train: [a, b]\n") ==
        "cfg.yaml:9: data.train must be a folder, a .csv table, or {images: DIR, labels: DIR} for segmentation, got "
        "'[a, b]'");
}

TEST_CASE("config errors: layer structure", "[config]") {
  const std::string h = "layers:\n  - {type: imageInput, InputSize: [8, 8, 1]}\n";  // layer 1 on line 2
  CHECK(config_error_of(h + "  - {type: convolution, NumFilters: 3}\n") ==
        "cfg.yaml:3: layer 2: unknown layer type 'convolution' (did you mean 'convolution2d'?)");
  CHECK(config_error_of(h + "  - {type: convolution2dLayer}\n") ==
        "cfg.yaml:3: layer 2: unknown layer type 'convolution2dLayer' (the type is MATLAB's function name "
        "without 'Layer': write 'convolution2d')");
  CHECK(config_error_of(h + "  - {type: wibble}\n")
            .rfind("cfg.yaml:3: layer 2: unknown layer type 'wibble' (known types: imageInput, convolution2d,", 0) ==
        0);
  CHECK(config_error_of(h + "  - {Name: x}\n")
            .rfind("cfg.yaml:3: layer 2 has no type (add type: followed by one of", 0) == 0);
  CHECK(config_error_of(h + "  - {type: relu, name: r}\n") ==
        "cfg.yaml:3: unknown layer key 'name' (did you mean 'Name'?)");
  CHECK(config_error_of(h + "  - {type: relu, Name: \"\"}\n") ==
        "cfg.yaml:3: layer 2: Name must be a non-empty name, got ''");
  CHECK(config_error_of(h + "  - {type: relu, Name: a}\n  - {type: relu, Name: a}\n") ==
        "cfg.yaml:4: layer 3 (relu) is named 'a', which layer 2 (relu, line 3) already uses "
        "(give each layer a unique Name)");
  // A default name taken by an explicit one.
  CHECK(config_error_of(h + "  - {type: relu, Name: relu_1}\n  - {type: relu}\n") ==
        "cfg.yaml:4: layer 3 (relu) is named 'relu_1', which layer 2 (relu, line 3) already uses "
        "(give each layer a unique Name)");
  CHECK(config_error_of(h + "  - {type: relu, Inputs: relu_9}\n") ==
        "cfg.yaml:3: layer 'relu_1' (relu): Inputs names 'relu_9', which is not a layer (Inputs names layers "
        "above this one, by Name or default name like relu_1)");
  CHECK(config_error_of(
            h + "  - {type: relu, Name: r1}\n  - {type: addition, Inputs: [r1, r2]}\n  - {type: relu, Name: r2}\n") ==
        "cfg.yaml:4: layer 'addition_1' (addition): Inputs names 'r2', which comes later (layer 4) "
        "(a layer takes inputs only from layers above it; reorder the list)");
  CHECK(config_error_of(h + "  - {type: relu, Name: r1}\n  - {type: addition, Inputs: [r1, imageInpt_1]}\n") ==
        "cfg.yaml:4: layer 'addition_1' (addition): Inputs names 'imageInpt_1', which is not a layer "
        "(did you mean 'imageInput_1'?)");
  CHECK(config_error_of(h + "  - {type: relu, Name: r, Inputs: r}\n") ==
        "cfg.yaml:3: layer 'r' (relu): Inputs names 'r', which is this layer itself "
        "(a layer takes inputs only from layers above it; reorder the list)");
  CHECK(config_error_of(h + "  - {type: relu, Inputs: [[a]]}\n") ==
        "cfg.yaml:3: layer 'relu_1' (relu): Inputs must be a layer name or a list of layer names, got '[[a]]'");
  CHECK(config_error_of(h + "  - {type: convolution2d, FilterSize: {h: 3}}\n") ==
        "cfg.yaml:3: layer 'convolution2d_1' (convolution2d): option FilterSize must be a number, a word or a list "
        "of them (nested maps are not layer options), got '{h: 3}'");
  CHECK(config_error_of(h + "  - {type: convolution2d, FilterSize: [[3, 3]]}\n") ==
        "cfg.yaml:3: layer 'convolution2d_1' (convolution2d): option FilterSize must be a number, a word or a list "
        "of them (no nested lists or maps), got '[[3, 3]]'");
  CHECK(config_error_of(h + "  - type: convolution2d\n    NumFilters:\n") ==
        "cfg.yaml:4: layer 'convolution2d_1' (convolution2d): option NumFilters has no value (write a value after "
        "the colon or remove the line), got ''");
  CHECK(config_error_of(h + "  - relu\n") == "cfg.yaml:3: layer 2 must be a map of key: value lines, got 'relu'");
  CHECK(config_error_of("layers: []\n") ==
        "cfg.yaml:1: layers must be a non-empty list of entries like '- {type: relu}', got '[]'");
  CHECK(config_error_of("training: {MaxEpochs: 1}\n") ==
        "cfg.yaml: no layers (add a layers: section listing the network's layers)");
  CHECK(config_error_of("- a\n- b\n") ==
        "cfg.yaml:1: a config is a map with the sections layers, data and training, got '[a, b]'");
}

TEST_CASE("config errors: a YAML syntax error names the line of the problem", "[config]") {
  // yaml-cpp reads on past an unclosed bracket and stops lines later; the message names the
  // bracket's line (here 2), with where yaml-cpp stopped.
  CHECK(config_error_of("layers:\n  - {type: relu\n\n  # next\n  - {type: softmax}\ntraining: {MaxEpochs: 1}\n") ==
        "cfg.yaml:2: YAML syntax error: the '{' on this line is never closed (yaml-cpp gave up at line 5: illegal "
        "block entry; close it with '}')");
  CHECK(config_error_of(kNet + "training:\n  MaxEpochs: 1\n  Metrics: [accuracy, fscore\n  Verbose: false\n\n") ==
        "cfg.yaml:10: YAML syntax error: the '[' on this line is never closed (yaml-cpp gave up at line 11: end of "
        "sequence flow not found; close it with ']')");
  CHECK(config_error_of("layers:\n  - type: imageInput\n    InputSize: [28, 28, 1\n  - type: relu\n") ==
        "cfg.yaml:3: YAML syntax error: the '[' on this line is never closed (yaml-cpp gave up at line 4: end of "
        "sequence flow not found; close it with ']')");
  // Brackets inside quotes and comments are not counted; closed ones are not blamed.
  CHECK(config_error_of(kNet +
                        "training:\n  Plots: \"[x\"  # {\n  Metrics: [accuracy, {a: [1]}]\n  Verbose: true: 1\n") ==
        "cfg.yaml:11: YAML syntax error: illegal map value (check indentation, colons, quotes and brackets)");
  // Bad indentation: the line that is out of place.
  CHECK(config_error_of(kNet + "training:\n  MaxEpochs: 1\n    Verbose: false\n") ==
        "cfg.yaml:10: YAML syntax error: illegal map value (check indentation, colons, quotes and brackets)");
  CHECK(config_error_of(kNet + "training:\n  MaxEpochs: 1\n Verbose: false\n") ==
        "cfg.yaml:10: YAML syntax error: end of map not found (check indentation, colons, quotes and brackets)");
  // A tab, and a key given twice (yaml-cpp keeps both; the config reader names the second).
  CHECK(config_error_of(kNet + "training:\n  MaxEpochs: 1\n\tVerbose: false\n") ==
        "cfg.yaml:10: a tab in the indentation; YAML indents with spaces (replace the tab with spaces)");
  CHECK(config_error_of(kNet + "training:\n  MaxEpochs: 1\n  Verbose: false\n  MaxEpochs: 2\n") ==
        "cfg.yaml:11: duplicate key 'MaxEpochs' in training (give each key once)");
}

TEST_CASE("config errors: YAML syntax and files", "[config]") {
  CHECK(config_error_of("layers:\n  - {type: relu\n  - {type: softmax}\ntraining: {MaxEpochs: 1}\n")
            .rfind("cfg.yaml:2: YAML syntax error: the '{' on this line is never closed (yaml-cpp gave up at line 3: ",
                   0) == 0);
  CHECK(config_error_of("layers:\n  - {type: relu}\n training: x\n").rfind("cfg.yaml:3: YAML syntax error: ", 0) == 0);
  CHECK(config_error_of("layers:\n  - {type: relu}\ntraining: a: b\n") ==
        "cfg.yaml:3: YAML syntax error: illegal map value (check indentation, colons, quotes and brackets)");
  // A tab in the indentation: yaml-cpp says "illegal map value" or "illegal block entry".
  const std::string tab = ": a tab in the indentation; YAML indents with spaces (replace the tab with spaces)";
  CHECK(config_error_of(kNet + "training:\n\tMaxEpochs: 1\n") == "cfg.yaml:9" + tab);
  CHECK(config_error_of(kNet + "training:\n  MaxEpochs: 1\n  \tVerbose: false\n") == "cfg.yaml:10" + tab);
  CHECK(config_error_of("layers:\n  - {type: relu}\n\t- {type: softmax}\n") == "cfg.yaml:3" + tab);
  CHECK(config_error_of("# a comment\n\t# tab-indented comment\nlayers:\n  - {type: relu}\n  -\t{type: softmax\n")
            .rfind("cfg.yaml:5: YAML syntax error: the '{' on this line is never closed", 0) ==
        0);  // a tab after the indentation is not blamed
  CHECK(config_error_of(kNet + "training: {\n\tMaxEpochs: 2}\n") == "no error");  // a tab inside braces is valid YAML
  test::TempDir dir;
  try {
    load_config(dir.file(""), {});
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find(": is a directory, not a config file (give the .yaml file)") != std::string::npos);
  }
  try {
    load_config("/nonexistent/dir/cfg.yaml", {});
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "/nonexistent/dir/cfg.yaml: cannot read the config file (No such file or directory; check the path)");
  }
}

TEST_CASE("config errors: --set overrides name the override", "[config]") {
  CHECK(config_error_of(kNet, {"layers.conv9.NumFilters=3"}) ==
        "--set layers.conv9.NumFilters=3: no layer named 'conv9' (did you mean 'conv1'?)");
  CHECK(config_error_of(kNet, {"layers.zzzzzz.NumFilters=3"}) ==
        "--set layers.zzzzzz.NumFilters=3: no layer named 'zzzzzz' (layers: input, conv1, relu_1, fc, softmax_1, "
        "classification_1)");
  CHECK(config_error_of(kNet, {"training.MaxEpoch=1"}) ==
        "--set training.MaxEpoch=1: unknown training option 'MaxEpoch' (did you mean 'MaxEpochs'?)");
  CHECK(config_error_of(kNet, {"trainng.MaxEpochs=1"}) ==
        "--set trainng.MaxEpochs=1: unknown section 'trainng' (did you mean 'training'?)");
  CHECK(config_error_of(kNet, {"data.trian=/x"}) ==
        "--set data.trian=/x: unknown data key 'trian' (did you mean 'train'?)");
  CHECK(config_error_of(kNet, {"data.Augmentation.RandXReflect=1"}) ==
        "--set data.Augmentation.RandXReflect=1: unknown data.Augmentation option 'RandXReflect' (did you mean "
        "'RandXReflection'?)");
  CHECK(config_error_of(kNet, {"data.train.x=1"}) ==
        "--set data.train.x=1: data.train has no sub-key 'x' (images or labels)");
  CHECK(config_error_of(kNet, {"training.MaxEpochs"}) ==
        "--set training.MaxEpochs: expected section.key=value (e.g. training.MaxEpochs=1 or "
        "layers.conv1.NumFilters=20)");
  CHECK(config_error_of(kNet, {"training=3"}).rfind("--set training=3: name a key inside training", 0) == 0);
  CHECK(config_error_of(kNet, {"layers.conv1=3"}) ==
        "--set layers.conv1=3: expected layers.<layer name>.<option>=value (e.g. layers.conv1.NumFilters=20)");
  CHECK(config_error_of(kNet, {"layers.conv1.name=c"}) ==
        "--set layers.conv1.name=c: unknown layer key 'name' (did you mean 'Name'?)");
  CHECK(config_error_of(kNet, {"layers.input.InputSize=[28,28"})
            .rfind("--set layers.input.InputSize=[28,28: value '[28,28' is not valid YAML: ", 0) == 0);
  // Type checks are shared with the file: the error names the override instead of a line.
  CHECK(config_error_of(kNet, {"training.MaxEpochs=abc"}) ==
        "--set training.MaxEpochs=abc: training.MaxEpochs must be a positive integer, got 'abc'");
  CHECK(config_error_of(kNet, {"training.Solver=sgd"}) ==
        "--set training.Solver=sgd: training.Solver must be one of sgdm, adam, rmsprop, adamw, got 'sgd' "
        "(did you mean 'sgdm'?)");
  CHECK(config_error_of(kNet, {"layers.conv1.type=conv"})
            .rfind("--set layers.conv1.type=conv: layer 2: unknown layer type 'conv'", 0) == 0);
  CHECK(config_error_of(kNet, {"layers.relu_1.Inputs=nothere"})
            .rfind("--set layers.relu_1.Inputs=nothere: layer 'relu_1' (relu): Inputs names 'nothere'", 0) == 0);
}

}  // namespace
}  // namespace dlt
