// load_config: layers, data and training sections, default names, source lines, defaults,
// dump -> load round trips, and --set overrides of every kind.
#include <catch2/catch.hpp>

#include "config/config.h"
#include "config_test_util.h"
#include "util/error.h"

namespace dlt {
namespace {

// Line numbers matter: tests below assert them.
const char* kResNetish = R"(layers:
  - {type: imageInput, Name: input, InputSize: [32, 32, 3], Normalization: zerocenter}
  - {type: convolution2d, Name: conv1, FilterSize: 5, NumFilters: 32, Padding: 2, WeightsInitializer: narrow-normal}
  - {type: ReLU}
  - {type: maxPooling2d, PoolSize: 3, Stride: 2}
  - type: convolution2d
    Name: skip_conv
    FilterSize: [1, 1]
    NumFilters: 32
    Padding:
      - 0
      - 0
      - 0
      - 0
  - {type: relu}
  - {type: addition, Name: add1, Inputs: [relu_1, skip_conv], NumInputs: 2}
  - {type: relu}
  - {type: fullyConnected, OutputSize: 10}
  - {type: softmax}
  - {type: classification}
data:
  train: data/cifar10/train
  validation: data/cifar10/test
training:
  Solver: adam
  MaxEpochs: 3
)";

TEST_CASE("config: layers get canonical types, default names and source lines", "[config]") {
  test::TempDir dir;
  std::string path = dir.write("net.yaml", kResNetish);
  Config c = load_config(path, {});
  CHECK(c.path == path);
  const auto& L = c.network.layers;
  REQUIRE(L.size() == 11);
  std::vector<std::string> names, types;
  for (const auto& l : L) {
    names.push_back(l.name);
    types.push_back(l.type);
  }
  CHECK(names == std::vector<std::string>{"input", "conv1", "relu_1", "maxPooling2d_1", "skip_conv", "relu_2", "add1",
                                          "relu_3", "fullyConnected_1", "softmax_1", "classification_1"});
  CHECK(types[2] == "relu");  // "ReLU" in the file
  CHECK(types[3] == "maxPooling2d");
  CHECK(L[6].inputs == std::vector<std::string>{"relu_1", "skip_conv"});
  CHECK(L[5].inputs.empty());

  const SpecValue& in_size = L[0].options.at("InputSize");
  CHECK(in_size.is_list);
  CHECK(in_size.items == std::vector<std::string>{"32", "32", "3"});
  CHECK(in_size.loc.file == path);
  CHECK(in_size.loc.line == 2);
  CHECK(L[1].options.at("WeightsInitializer").items == std::vector<std::string>{"narrow-normal"});
  CHECK_FALSE(L[1].options.at("NumFilters").is_list);
  const SpecValue& pad = L[4].options.at("Padding");  // block list
  CHECK(pad.is_list);
  CHECK(pad.items.size() == 4);
  CHECK(pad.loc.line == 10);  // the key's line
  CHECK(L[4].options.at("NumFilters").loc.line == 9);
  CHECK(L[4].loc.line == 7);  // the Name line
  CHECK(L[6].options.count("Inputs") == 0);
  CHECK(L[6].options.count("Name") == 0);
  CHECK(L[6].options.at("NumInputs").items[0] == "2");

  // LayerSpec getters report the YAML line of the option.
  try {
    (void)L[1].get_choice("Padding", "0", {"same"});
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).rfind(path + ":3: layer 'conv1' (convolution2d): option Padding", 0) == 0);
  }

  CHECK(c.data.train == "data/cifar10/train");
  CHECK(c.data.validation == "data/cifar10/test");
  CHECK(c.training.solver == Solver::kAdam);
  CHECK(c.training.max_epochs == 3);
  // resolve_defaults: adam's learn rate and squared decay factor.
  CHECK(c.training.initial_learn_rate == 0.001);
  CHECK(c.training.squared_gradient_decay_factor == 0.999);
  CHECK_FALSE(c.training.initial_learn_rate_set);
}

TEST_CASE("config: solver-dependent defaults and *_set flags", "[config]") {
  test::TempDir dir;
  const std::string net = "layers:\n  - {type: imageInput, InputSize: [8, 8, 1]}\n";
  Config a = load_config(dir.write("a.yaml", net + "training: {Solver: rmsprop}\n"), {});
  CHECK(a.training.initial_learn_rate == 0.001);
  CHECK(a.training.squared_gradient_decay_factor == 0.9);
  Config b = load_config(dir.write("b.yaml", net), {});
  CHECK(b.training.solver == Solver::kSgdm);
  CHECK(b.training.initial_learn_rate == 0.01);
  CHECK(b.training.max_epochs == 30);
  CHECK(b.data.train.empty());
  Config c = load_config(dir.write("c.yaml", net + "training:\n  Solver: RMSProp\n  InitialLearnRate: 0.05\n"
                                                   "  SquaredGradientDecayFactor: 0.5\n  Seed: 18446744073709551615\n"),
                         {});
  CHECK(c.training.solver == Solver::kRmsprop);
  CHECK(c.training.initial_learn_rate == 0.05);
  CHECK(c.training.initial_learn_rate_set);
  CHECK(c.training.squared_gradient_decay_factor == 0.5);
  CHECK(c.training.squared_gradient_decay_factor_set);
  CHECK(c.training.seed == 18446744073709551615ull);
  CHECK(c.training.seed_set);
  CHECK_FALSE(b.training.seed_set);
}

// Every data and training field away from its default.
const char* kEverything = R"(layers:
  - {type: imageInput, Name: in, InputSize: [28, 28, 1], Normalization: zscore}
  - {type: convolution2d, Name: c, FilterSize: [3, 5], NumFilters: 4, Padding: same, BiasLearnRateFactor: 2.5}
  - {type: batchNormalization, Epsilon: 1e-5}
  - {type: leakyRelu, Scale: 0.2}
  - {type: dropout, Probability: 0.25}
  - {type: depthConcatenation, Name: cat, Inputs: [c, dropout_1], NumInputs: 2}
  - {type: globalAveragePooling2d}
  - {type: fullyConnected, Name: "fc 1", OutputSize: 3, WeightsInitializer: he}
  - {type: softmax}
  - {type: classification}
data:
  train: "/data/with space/train"
  validation: ./val
  ValidationSplit: 0.15
  IncludeSubfolders: false
  LabelSource: foldernames
  FileExtensions: [.png, .JPG]
  OutputSizeMode: randcrop
  Augmentation:
    RandXReflection: true
    RandYReflection: yes
    RandRotation: [-10.5, 10]
    RandScale: [0.9, 1.1]
    RandXTranslation: [-3, 3]
    RandYTranslation: [-2, 4]
    PadCrop: 4
  OnBadImage: skip
  Cache: file
  LoaderThreads: 3
training:
  Solver: adam
  InitialLearnRate: 0.0003
  LearnRateSchedule: piecewise
  LearnRateDropFactor: 0.5
  LearnRateDropPeriod: 7
  GradientDecayFactor: 0.8
  SquaredGradientDecayFactor: 0.99
  Epsilon: 1e-6
  L2Regularization: 0.004
  GradientThreshold: 5
  GradientThresholdMethod: global-l2norm
  MaxEpochs: 40
  MiniBatchSize: 100
  Shuffle: every-epoch
  ValidationFrequency: 30
  ValidationPatience: 5
  OutputNetwork: best-validation-loss
  Verbose: false
  VerboseFrequency: 10
  VerboseLayout: compact
  Plots: none
  PlotIntervalSeconds: 2.5
  CheckpointPath: "ckpt: dir #1"
  CheckpointFrequency: 2
  CheckpointFrequencyUnit: iteration
  ExecutionEnvironment: multi-gpu
  WorkerLoad: [1, 0.5, 2]
  NumWorkers: 3
  GPUDevice: 1
  Precision: mixed
  DispatchInBackground: false
  Seed: 1234
  Threads: 2
)";

TEST_CASE("config: every field is read", "[config]") {
  test::TempDir dir;
  Config c = load_config(dir.write("all.yaml", kEverything), {});
  const DataOptions& d = c.data;
  CHECK(d.train == "/data/with space/train");
  CHECK(d.validation_split == 0.15);
  CHECK_FALSE(d.include_subfolders);
  CHECK(d.file_extensions == std::vector<std::string>{".png", ".JPG"});
  CHECK(d.output_size_mode == OutputSizeMode::kRandCrop);
  CHECK(d.augment.rand_x_reflection);
  CHECK(d.augment.rand_y_reflection);
  CHECK(d.augment.rand_rotation[0] == -10.5);
  CHECK(d.augment.rand_y_translation[1] == 4);
  CHECK(d.augment.pad_crop == 4);
  CHECK(d.on_bad_image == OnBadImage::kSkip);
  CHECK(d.cache == Cache::kFile);
  CHECK(d.loader_threads == 3);
  const TrainingOptions& t = c.training;
  CHECK(t.solver == Solver::kAdam);
  CHECK(t.initial_learn_rate == 0.0003);
  CHECK(t.gradient_decay_factor == 0.8);
  CHECK(t.learn_rate_drop_period == 7);
  CHECK(t.epsilon == 1e-6);
  CHECK(t.gradient_threshold == 5);
  CHECK(t.validation_patience == 5);
  CHECK(t.checkpoint_path == "ckpt: dir #1");
  CHECK(t.worker_load == std::vector<double>{1, 0.5, 2});
  CHECK(t.gpu_device == 1);
  CHECK(t.seed == 1234);
  CHECK(t.threads == 2);
  CHECK_FALSE(t.verbose);
  CHECK(t.verbose_layout == VerboseLayout::kCompact);
  CHECK(t.plots == Plots::kNone);
  CHECK(t.plot_interval_seconds == 2.5);
  CHECK(c.network.find("fc 1") != nullptr);
  CHECK(c.network.find("cat")->inputs == std::vector<std::string>{"c", "dropout_1"});
}

TEST_CASE("config: load -> dump -> load gives an equal config", "[config]") {
  test::TempDir dir;
  for (const char* text : {kEverything, kResNetish}) {
    Config a = load_config(dir.write("a.yaml", text), {});
    std::string dumped = dump_config(a);
    Config b = load_config(dir.write("config.yaml", dumped), {});
    test::require_same_config(a, b);
    CHECK(dump_config(b) == dumped);
  }
  // Inf values and defaults survive too.
  Config inf = load_config(dir.write("inf.yaml",
                                     "layers: [{type: relu}]\ntraining:\n  GradientThreshold: Inf\n"
                                     "  ValidationPatience: .inf\n"),
                           {});
  CHECK(inf.training.gradient_threshold < 0);
  CHECK(inf.training.validation_patience < 0);
  Config back = load_config(dir.write("back.yaml", dump_config(inf)), {});
  test::require_same_config(inf, back);
}

TEST_CASE("config: network spec YAML round trip", "[config]") {
  test::TempDir dir;
  Config a = load_config(dir.write("a.yaml", kEverything), {});
  std::string text = network_spec_to_yaml(a.network);
  CHECK(text.rfind("layers:", 0) == 0);
  NetworkSpec n = network_spec_from_yaml(text, "model.bin");
  test::require_same_network(a.network, n);
  CHECK(n.layers[1].options.at("FilterSize").loc.file == "model.bin");
  CHECK(network_spec_to_yaml(n) == text);
}

TEST_CASE("config: --set overrides of each kind", "[config]") {
  test::TempDir dir;
  std::string path = dir.write("net.yaml", kResNetish);
  Config c = load_config(path, {"training.MaxEpochs=1", "data.train=/data/x", "data.Augmentation.RandXReflection=true",
                                "layers.conv1.NumFilters=20", "layers.relu_2.Foo=7", "layers.input.InputSize=[28,28,1]",
                                "training.Solver=sgdm", "data.FileExtensions=[.bmp]", "layers.skip_conv.Padding=same",
                                "layers.add1.Inputs=[relu_1, relu_2]", "data.validation="});
  CHECK(c.training.max_epochs == 1);
  CHECK(c.training.solver == Solver::kSgdm);
  CHECK(c.training.initial_learn_rate == 0.01);  // defaults follow the overridden solver
  CHECK(c.data.train == "/data/x");
  CHECK(c.data.validation.empty());
  CHECK(c.data.augment.rand_x_reflection);
  CHECK(c.data.file_extensions == std::vector<std::string>{".bmp"});
  const LayerSpec* conv1 = c.network.find("conv1");
  REQUIRE(conv1);
  CHECK(conv1->options.at("NumFilters").items == std::vector<std::string>{"20"});
  CHECK(conv1->options.at("NumFilters").loc.file == "--set layers.conv1.NumFilters=20");
  CHECK(conv1->options.at("NumFilters").loc.line == 0);
  CHECK(conv1->options.at("FilterSize").loc.line == 3);  // untouched options keep their line
  CHECK(c.network.find("relu_2")->options.at("Foo").items[0] == "7");
  const SpecValue& in = c.network.find("input")->options.at("InputSize");
  CHECK(in.is_list);
  CHECK(in.items == std::vector<std::string>{"28", "28", "1"});
  CHECK(c.network.find("skip_conv")->options.at("Padding").items == std::vector<std::string>{"same"});
  CHECK_FALSE(c.network.find("skip_conv")->options.at("Padding").is_list);
  CHECK(c.network.find("add1")->inputs == std::vector<std::string>{"relu_1", "relu_2"});

  // Sections missing from the file are created; later overrides win.
  Config d = load_config(dir.write("bare.yaml", "layers:\n  - {type: relu}\n"),
                         {"training.MiniBatchSize=64", "training.MiniBatchSize=32", "data.Augmentation.PadCrop=2",
                          "layers.relu_1.Name=act"});
  CHECK(d.training.mini_batch_size == 32);
  CHECK(d.data.augment.pad_crop == 2);
  CHECK(d.network.layers[0].name == "act");
}

TEST_CASE("config: layer names may contain dots in overrides", "[config]") {
  test::TempDir dir;
  Config c = load_config(dir.write("n.yaml", "layers:\n  - {type: relu, Name: block1.relu}\n"),
                         {"layers.block1.relu.Extra=1"});
  CHECK(c.network.layers[0].options.at("Extra").items[0] == "1");
}

TEST_CASE("config: MATLAB's space-separated lists ([32 32 3]) read as comma-separated ones", "[config]") {
  test::TempDir dir;
  Config c = load_config(dir.write("m.yaml", R"(layers:
  - {type: imageInput, Name: in, InputSize: [32 32 3]}
  - {type: convolution2d, Name: c, FilterSize: [5 3], NumFilters: 4, Stride: [2  1], Padding: [1 1 2 2]}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
data:
  Augmentation: {RandXTranslation: [-10 10], RandScale: [0.9 1.1], RandXShear: [-15 15], RandYShear: [0 5]}
training:
  WorkerLoad: [2 1]
)"),
                         {});
  const LayerSpec* in = c.network.find("in");
  REQUIRE(in);
  CHECK(in->options.at("InputSize").items == std::vector<std::string>{"32", "32", "3"});
  CHECK(in->get_ints("InputSize", {}, 3, 1) == std::vector<int64_t>{32, 32, 3});
  const LayerSpec* conv = c.network.find("c");
  CHECK(conv->get_ints("FilterSize", {}, 2, 1) == std::vector<int64_t>{5, 3});
  CHECK(conv->get_ints("Stride", {}, 2, 1) == std::vector<int64_t>{2, 1});
  CHECK(conv->options.at("Padding").items == std::vector<std::string>{"1", "1", "2", "2"});
  CHECK(c.data.augment.rand_x_translation[0] == -10);
  CHECK(c.data.augment.rand_x_translation[1] == 10);
  CHECK(c.data.augment.rand_scale[1] == 1.1);
  CHECK(c.data.augment.rand_x_shear[0] == -15);
  CHECK(c.data.augment.rand_y_shear[1] == 5);
  CHECK(c.training.worker_load == std::vector<double>{2, 1});
  // Written back with commas; the same from --set.
  CHECK(dump_config(c).find("InputSize: [32, 32, 3]") != std::string::npos);
  Config o = load_config(dir.write("o.yaml", "layers: [{type: imageInput, Name: in, InputSize: [8, 8, 1]}]\n"),
                         {"layers.in.InputSize=[28 28 1]"});
  CHECK(o.network.find("in")->options.at("InputSize").items == std::vector<std::string>{"28", "28", "1"});
  // Only numbers split; a quoted item or words stay one item.
  Config q = load_config(dir.write("q.yaml",
                                   "layers: [{type: imageInput, Name: in, InputSize: [\"32 32 3\"]}]\n"
                                   "data: {FileExtensions: [.png .jpg]}\n"),
                         {});
  CHECK(q.network.find("in")->options.at("InputSize").items == std::vector<std::string>{"32 32 3"});
}

}  // namespace
}  // namespace dlt
