// Choice options (config/choice.h, config/options.h): every word of every choice option reads
// (in any case) into its enum value and writes back in its spelling; a bad word is one line with
// file:line, the words and a did-you-mean; the environment variables that override choice
// options go through the same table and name the variable.
#include <catch2/catch.hpp>

#include <cctype>
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config_test_util.h"
#include "support/env_var.h"
#include "util/error.h"

namespace dlt {

namespace {

using test::EnvVar;
using test::kNet;

// A choice option: where it lives in the config and the enum value it was read into, as an index.
struct ChoiceOption {
  std::string key;  // "training.Shuffle"
  std::vector<std::string> words;
  std::function<size_t(const Config&)> index;
};

template <class E>
ChoiceOption choice(const std::string& key, std::function<E(const Config&)> get) {
  return {key, choice_names<E>(), [get](const Config& c) { return static_cast<size_t>(get(c)); }};
}

std::vector<ChoiceOption> choice_options() {
  return {
      choice<Solver>("training.Solver", [](const Config& c) { return c.training.solver; }),
      choice<GradientThresholdMethod>("training.GradientThresholdMethod",
                                      [](const Config& c) { return c.training.gradient_threshold_method; }),
      choice<Shuffle>("training.Shuffle", [](const Config& c) { return c.training.shuffle; }),
      choice<VerboseLayout>("training.VerboseLayout", [](const Config& c) { return c.training.verbose_layout; }),
      choice<Plots>("training.Plots", [](const Config& c) { return c.training.plots; }),
      choice<FrequencyUnit>("training.CheckpointFrequencyUnit",
                            [](const Config& c) { return c.training.checkpoint_frequency_unit; }),
      choice<ExecutionEnvironment>("training.ExecutionEnvironment",
                                   [](const Config& c) { return c.training.execution_environment; }),
      choice<Precision>("training.Precision", [](const Config& c) { return c.training.precision; }),
      choice<ConvolutionAlgorithm>("training.ConvolutionAlgorithm",
                                   [](const Config& c) { return c.training.convolution_algorithm; }),
      choice<CudnnEngines>("training.CudnnEngines", [](const Config& c) { return c.training.cudnn_engines; }),
      choice<BatchNormKernels>("training.BatchNormKernels",
                               [](const Config& c) { return c.training.batch_norm_kernels; }),
      choice<LabelSource>("data.LabelSource", [](const Config& c) { return c.data.label_source; }),
      choice<OutputSizeMode>("data.OutputSizeMode", [](const Config& c) { return c.data.output_size_mode; }),
      choice<OnBadImage>("data.OnBadImage", [](const Config& c) { return c.data.on_bad_image; }),
      choice<Cache>("data.Cache", [](const Config& c) { return c.data.cache; }),
  };
}

// Unsets the variables these tests set, so the host's environment cannot leak in.
struct CleanEnvironment {
  EnvVar a{"DLT_CONV_ALGO", nullptr}, b{"DLT_CUDNN_ENGINES", nullptr}, c{"DLT_BN_KERNELS", nullptr},
      d{"DLT_BUCKET_MB", nullptr}, e{"DLT_CUDNN_WORKSPACE_MB", nullptr}, f{"DLT_CUDA_GRAPH", nullptr};
};

std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    load_config_text(text, "cfg.yaml", sets);
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    CHECK(msg.find('\n') == std::string::npos);  // one line
    return msg;
  }
  return "no error";
}

std::string upper(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

}  // namespace

TEST_CASE("choices: each word has one enum value and prints as itself", "[config]") {
  CHECK(to_string(Shuffle::kEveryEpoch) == "every-epoch");
  CHECK(to_string(GradientThresholdMethod::kGlobalL2Norm) == "global-l2norm");
  CHECK(to_string(ExecutionEnvironment::kMultiGpu) == "multi-gpu");
  CHECK(to_string(CudnnEngines::kExhaustive) == "exhaustive");
  CHECK(choice_names<Cache>() == std::vector<std::string>{"auto", "memory", "file", "none"});
  Shuffle s = Shuffle::kOnce;
  CHECK(parse_choice("Every-Epoch", &s));
  CHECK(s == Shuffle::kEveryEpoch);
  CHECK_FALSE(parse_choice("every epoch", &s));
  CHECK(s == Shuffle::kEveryEpoch);  // untouched
  Precision p = Precision::kSingle;
  CHECK_FALSE(parse_choice("", &p));
  CHECK(p == Precision::kSingle);
}

TEST_CASE("choices: every word of every choice option reads, in any case, and writes back", "[config]") {
  CleanEnvironment clean;
  for (const ChoiceOption& opt : choice_options()) {
    REQUIRE_FALSE(opt.words.empty());
    for (size_t i = 0; i < opt.words.size(); ++i) {
      INFO(opt.key << " = " << opt.words[i]);
      const Config c = load_config_text(kNet, "cfg.yaml", {opt.key + "=" + upper(opt.words[i])});
      CHECK(opt.index(c) == i);
      const std::string yaml = dump_config(c);
      const std::string key = opt.key.substr(opt.key.find('.') + 1);
      CHECK(yaml.find(key + ": " + opt.words[i] + "\n") != std::string::npos);
      CHECK(opt.index(load_config_text(yaml, "back.yaml")) == i);  // the resolved config loads back
    }
  }
}

TEST_CASE("choices: a bad word is one line naming the option, the words and the closest", "[config]") {
  CleanEnvironment clean;
  CHECK(error_of(kNet + "training:\n  Shuffle: every-epoc\n") ==
        "cfg.yaml:9: training.Shuffle must be one of once, never, every-epoch, got 'every-epoc' (did you mean "
        "'every-epoch'?)");
  CHECK(error_of(kNet + "training:\n  ExecutionEnvironment: multigpu\n") ==
        "cfg.yaml:9: training.ExecutionEnvironment must be one of auto, cpu, gpu, multi-gpu, parallel, got "
        "'multigpu' (did you mean 'multi-gpu'?)");
  CHECK(error_of(kNet + "data:\n  Cache: disk\n") ==
        "cfg.yaml:9: data.Cache must be one of auto, memory, file, none, got 'disk'");
  CHECK(error_of(kNet, {"data.OnBadImage=ignore"}) ==
        "--set data.OnBadImage=ignore: data.OnBadImage must be one of error, skip, got 'ignore'");
  CHECK(error_of(kNet + "training:\n  Solver: [sgdm]\n") ==
        "cfg.yaml:9: training.Solver must be one of sgdm, adam, rmsprop, adamw, got '[sgdm]'");
}

TEST_CASE("choices: environment variables go through the option table", "[config]") {
  CleanEnvironment clean;
  {  // the table's reading: any case, as in the YAML
    EnvVar algo("DLT_CONV_ALGO", "Direct"), engines("DLT_CUDNN_ENGINES", "GRAPH"), kernels("DLT_BN_KERNELS", "DLTrain");
    const Config c = load_config_text(kNet, "cfg.yaml");
    CHECK(c.training.convolution_algorithm == ConvolutionAlgorithm::kDirect);
    CHECK(c.training.cudnn_engines == CudnnEngines::kGraph);
    CHECK(c.training.batch_norm_kernels == BatchNormKernels::kDltrain);
    const std::string yaml = dump_config(c);  // written in the option's spelling
    CHECK(yaml.find("ConvolutionAlgorithm: direct\n") != std::string::npos);
    CHECK(yaml.find("CudnnEngines: graph\n") != std::string::npos);
    CHECK(yaml.find("BatchNormKernels: dltrain\n") != std::string::npos);
  }
  {  // GradientBucketSizeMB's auto, as the YAML takes it
    EnvVar bucket("DLT_BUCKET_MB", "auto");
    const Config c = load_config_text(kNet + "training:\n  GradientBucketSizeMB: 8\n", "cfg.yaml");
    CHECK(c.training.gradient_bucket_size_mb == 0);
    CHECK(dump_config(c).find("GradientBucketSizeMB: auto\n") != std::string::npos);
  }
  {  // a bad value names the variable and the option, never a file line
    EnvVar algo("DLT_CONV_ALGO", "direkt");
    CHECK(error_of(kNet) ==
          "DLT_CONV_ALGO is 'direkt' (it overrides training.ConvolutionAlgorithm); set it to auto or direct, or unset "
          "it");
  }
  {
    EnvVar ws("DLT_CUDNN_WORKSPACE_MB", "99999999999999999999");  // past int64
    CHECK(error_of(kNet) ==
          "DLT_CUDNN_WORKSPACE_MB is '99999999999999999999' (it overrides training.CudnnWorkspaceMB); set it to a "
          "number of MiB (e.g. 256), or unset it");
  }
  {  // the variable overrides the file's value and --set's
    EnvVar engines("DLT_CUDNN_ENGINES", "legacy");
    const Config c =
        load_config_text(kNet + "training:\n  CudnnEngines: graph\n", "cfg.yaml", {"training.CudnnEngines=exhaustive"});
    CHECK(c.training.cudnn_engines == CudnnEngines::kLegacy);
  }
}

}  // namespace dlt
