// dltrain info CONFIG.yaml|MODEL.bin|MODEL.onnx [--json]: the layer table (name, type,
// activations, learnables), total learnables, the memory footprint as seed 001's
// getMemoryFootprint computes it, forward FLOPs per image, and where the CUDA backend is. An
// ONNX file shows the network `dltrain import` makes of it (MATLAB's analyzeNetwork of an
// imported network), nothing written.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "backend/cuda_plugin.h"
#include "commands.h"
#include "config/config.h"
#include "model_argument.h"
#include "net/model_file.h"
#include "net/network.h"
#include "onnx/onnx.h"
#include "onnx/transfer.h"
#include "util/json.h"

namespace dlt::app {

namespace {

std::unique_ptr<Network> load_network(const std::string& path, const std::vector<std::string>& sets) {
  if (looks_like_model(path)) {
    ModelData m = load_model(path);
    return std::make_unique<Network>(m, Device::cpu(), path);
  }
  if (is_onnx_file(path)) {
    ModelData m = import_onnx(path, {});
    return std::make_unique<Network>(m, Device::cpu(), path);
  }
  Config c = load_config(path, sets);
  apply_transfer(c);  // base: loads the base model
  return std::make_unique<Network>(network_for_training(c), Device::cpu());
}

int64_t learnables(Layer& l) {
  int64_t n = 0;
  for (const Param& p : l.params()) n += p.shape.numel();
  return n;
}

}  // namespace

Runner add_info(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "info",
      "Show a network's layers, output sizes, learnables, memory footprint and FLOPs, from a config, a "
      "model file or an ONNX file (the network dltrain import makes of it)");
  struct Args {
    std::string path;
    bool json = false;
    std::vector<std::string> sets;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("file", args->path, "A config (.yaml), a model file (model.bin) or an ONNX file (.onnx)")->required();
  cmd->add_flag("--json", args->json, "Print JSON instead of a table");
  cmd->add_option("--set", args->sets, "Override a config option: section.path=value");
  return [args]() {
    auto net = load_network(args->path, args->sets);
    if (args->json) {
      JsonWriter j;
      j.begin_object().key("layers").begin_array();
      for (size_t i = 0; i < net->size(); ++i) {
        Layer& l = net->layer(i);
        j.begin_object();
        j.field("name", l.name()).field("type", l.type()).field("output_shape", net->output_shape(i).str());
        j.field("format", format_name(net->output_format(i)));
        j.field("learnables", learnables(l));
        j.end_object();
      }
      j.end_array();
      j.field("total_learnables", net->total_learnables());
      j.field("memory_bytes", net->memory_bytes());
      j.field("flops_per_image", net->flops_per_image());
      j.end_object();
      std::printf("%s\n", j.str().c_str());
      return 0;
    }
    int name_width = 24;  // wider for long generated names (unetLayers' Decoder-Stage-1-DepthConcatenation)
    for (size_t i = 0; i < net->size(); ++i)
      name_width = std::max(name_width, static_cast<int>(net->layer(i).name().size()));
    std::printf("%-4s %-*s %-26s %-16s %-6s %12s\n", "#", name_width, "Name", "Type", "Activations", "Format",
                "Learnables");
    for (size_t i = 0; i < net->size(); ++i) {
      Layer& l = net->layer(i);
      std::printf("%-4zu %-*s %-26s %-16s %-6s %12lld\n", i + 1, name_width, l.name().c_str(), l.type().c_str(),
                  format_dims(net->output_format(i), net->output_shape(i)).c_str(), format_name(net->output_format(i)),
                  static_cast<long long>(learnables(l)));
    }
    std::printf("\nTotal learnables:  %lld\n", static_cast<long long>(net->total_learnables()));
    std::printf("Memory footprint:  %lld bytes\n", static_cast<long long>(net->memory_bytes()));
    std::printf("Forward FLOPs:     %lld per image\n", static_cast<long long>(net->flops_per_image()));
    if (!net->classes().empty()) std::printf("Classes:           %zu\n", net->classes().size());
    std::printf("%s\n", cuda_plugin_summary().c_str());  // where the GPU backend is (not loaded)
    return 0;
  };
}

}  // namespace dlt::app
