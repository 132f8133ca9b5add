// Test helpers for tests/config and tests/model: temp files with given contents, and
// field-by-field comparison of specs and options (the structs have no operator==).
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "config/config.h"
#include "util/error.h"

namespace dlt::test {

// A small classification network as a config's layers: section: 7 lines, so "training:"
// appended after it is line 8 and its first option line 9.
inline const std::string kNet = R"(layers:
  - {type: imageInput, Name: input, InputSize: [32, 32, 3]}
  - {type: convolution2d, Name: conv1, FilterSize: 5, NumFilters: 8}
  - {type: relu}
  - {type: fullyConnected, Name: fc, OutputSize: 10}
  - {type: softmax}
  - {type: classification}
)";

// A directory under the system temp dir, removed at destruction.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("dltrain-cfgtest-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = file(name);
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::string write_bytes(const std::string& name, const std::vector<uint8_t>& bytes) const {
    std::string p = file(name);
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return p;
  }

 private:
  std::filesystem::path path_;
};

// The ConfigError message for loading `text` (with overrides) from a file, the file's path
// shown as cfg.yaml; checks that it is one line. "no error" when it loads.
inline std::string config_error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  TempDir dir;
  std::string path = dir.write("cfg.yaml", text);
  try {
    load_config(path, overrides);
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    for (size_t p; (p = msg.find(path)) != std::string::npos;) msg.replace(p, path.size(), "cfg.yaml");
    CHECK(msg.find('\n') == std::string::npos);  // one line
    return msg;
  }
  return "no error";
}

inline void require_same_network(const NetworkSpec& a, const NetworkSpec& b) {
  REQUIRE(a.layers.size() == b.layers.size());
  for (size_t i = 0; i < a.layers.size(); ++i) {
    const LayerSpec& x = a.layers[i];
    const LayerSpec& y = b.layers[i];
    INFO("layer " << i << " " << x.name);
    CHECK(x.name == y.name);
    CHECK(x.type == y.type);
    CHECK(x.inputs == y.inputs);
    REQUIRE(x.options.size() == y.options.size());
    for (const auto& [key, v] : x.options) {
      INFO("option " << key);
      REQUIRE(y.options.count(key) == 1);
      CHECK(v.items == y.options.at(key).items);
      CHECK(v.is_list == y.options.at(key).is_list);
    }
  }
}

// Values only: the *_set flags record where a value came from, not the value.
inline void require_same_training(const TrainingOptions& a, const TrainingOptions& b) {
  CHECK(a.solver == b.solver);
  CHECK(a.initial_learn_rate == b.initial_learn_rate);
  CHECK(a.learn_rate_schedule == b.learn_rate_schedule);
  CHECK(a.learn_rate_drop_factor == b.learn_rate_drop_factor);
  CHECK(a.learn_rate_drop_period == b.learn_rate_drop_period);
  CHECK(a.momentum == b.momentum);
  CHECK(a.gradient_decay_factor == b.gradient_decay_factor);
  CHECK(a.squared_gradient_decay_factor == b.squared_gradient_decay_factor);
  CHECK(a.epsilon == b.epsilon);
  CHECK(a.l2_regularization == b.l2_regularization);
  CHECK(a.weight_decay == b.weight_decay);
  CHECK(a.gradient_threshold == b.gradient_threshold);
  CHECK(a.gradient_threshold_method == b.gradient_threshold_method);
  CHECK(a.max_epochs == b.max_epochs);
  CHECK(a.mini_batch_size == b.mini_batch_size);
  CHECK(a.shuffle == b.shuffle);
  CHECK(a.validation_frequency == b.validation_frequency);
  CHECK(a.validation_patience == b.validation_patience);
  CHECK(a.output_network == b.output_network);
  CHECK(a.metrics == b.metrics);
  CHECK(a.objective_metric == b.objective_metric);
  CHECK(a.tensorboard == b.tensorboard);
  CHECK(a.tensorboard_dir == b.tensorboard_dir);
  CHECK(a.verbose == b.verbose);
  CHECK(a.verbose_frequency == b.verbose_frequency);
  CHECK(a.verbose_layout == b.verbose_layout);
  CHECK(a.plots == b.plots);
  CHECK(a.plot_interval_seconds == b.plot_interval_seconds);
  CHECK(a.checkpoint_path == b.checkpoint_path);
  CHECK(a.checkpoint_frequency == b.checkpoint_frequency);
  CHECK(a.checkpoint_frequency_unit == b.checkpoint_frequency_unit);
  CHECK(a.execution_environment == b.execution_environment);
  CHECK(a.worker_load == b.worker_load);
  CHECK(a.num_workers == b.num_workers);
  CHECK(a.gpu_device == b.gpu_device);
  CHECK(a.precision == b.precision);
  CHECK(a.dispatch_in_background == b.dispatch_in_background);
  CHECK(a.seed == b.seed);
  CHECK(a.threads == b.threads);
  CHECK(a.cuda_graph == b.cuda_graph);
  CHECK(a.allow_tf32 == b.allow_tf32);
  CHECK(a.convolution_algorithm == b.convolution_algorithm);
  CHECK(a.cudnn_workspace_mb == b.cudnn_workspace_mb);
  CHECK(a.deterministic == b.deterministic);
  CHECK(a.fused_convolution == b.fused_convolution);
  CHECK(a.cudnn_engines == b.cudnn_engines);
  CHECK(a.batch_norm_ex == b.batch_norm_ex);
  CHECK(a.batch_norm_kernels == b.batch_norm_kernels);
  CHECK(a.allow_reduced_precision_reduction == b.allow_reduced_precision_reduction);
  CHECK(a.cudnn_runtime_compiled == b.cudnn_runtime_compiled);
  CHECK(a.cuda_fused_clipped_relu == b.cuda_fused_clipped_relu);
  CHECK(a.gradient_bucket_size_mb == b.gradient_bucket_size_mb);
  CHECK(a.communication_timeout == b.communication_timeout);
  CHECK(a.communication_timing == b.communication_timing);
}

inline void require_same_data(const DataOptions& a, const DataOptions& b) {
  CHECK(a.train == b.train);
  CHECK(a.validation == b.validation);
  CHECK(a.validation_split == b.validation_split);
  CHECK(a.include_subfolders == b.include_subfolders);
  CHECK(a.label_source == b.label_source);
  CHECK(a.file_extensions == b.file_extensions);
  CHECK(a.output_size_mode == b.output_size_mode);
  const AugmentOptions &x = a.augment, &y = b.augment;
  CHECK(x.rand_x_reflection == y.rand_x_reflection);
  CHECK(x.rand_y_reflection == y.rand_y_reflection);
  for (int i = 0; i < 2; ++i) {
    CHECK(x.rand_rotation[i] == y.rand_rotation[i]);
    CHECK(x.rand_scale[i] == y.rand_scale[i]);
    CHECK(x.rand_x_scale[i] == y.rand_x_scale[i]);
    CHECK(x.rand_y_scale[i] == y.rand_y_scale[i]);
    CHECK(x.rand_x_shear[i] == y.rand_x_shear[i]);
    CHECK(x.rand_y_shear[i] == y.rand_y_shear[i]);
    CHECK(x.rand_x_translation[i] == y.rand_x_translation[i]);
    CHECK(x.rand_y_translation[i] == y.rand_y_translation[i]);
  }
  CHECK(x.pad_crop == y.pad_crop);
  CHECK(x.fill_value == y.fill_value);
  CHECK(a.on_bad_image == b.on_bad_image);
  CHECK(a.cache == b.cache);
  CHECK(a.loader_threads == b.loader_threads);
}

inline void require_same_config(const Config& a, const Config& b) {
  require_same_network(a.network, b.network);
  require_same_data(a.data, b.data);
  require_same_training(a.training, b.training);
}

}  // namespace dlt::test
