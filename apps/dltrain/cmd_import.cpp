// dltrain import MODEL.onnx --output model.bin [--classes FILE] [--input-size HxWxC]
// Converts an ONNX classifier (PyTorch's torch.onnx.export, MATLAB's exportONNXNetwork, the
// model zoo) into a dltrain model file; see docs/transfer.md for the supported operators.
#include <cstdio>
#include <fstream>
#include <memory>

#include "commands.h"
#include "net/network.h"
#include "onnx/onnx.h"
#include "util/error.h"
#include "util/numbers.h"

namespace dlt::app {

namespace {

std::vector<std::string> read_classes(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot read the class list (one class name per line)");
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

std::vector<int64_t> parse_size(const std::string& s) {
  std::vector<int64_t> v;
  if (!parse_dims(s, &v) || v.size() < 2 || v.size() > 3)
    throw UsageError("--input-size '" + s + "' is not HxWxC (e.g. --input-size 227x227x3)");
  if (v.size() == 2) v.push_back(1);
  return v;
}

}  // namespace

Runner add_import(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "import",
      "Convert an ONNX network (PyTorch's torch.onnx.export, MATLAB's exportONNXNetwork) into a dltrain model "
      "file, to classify (or segment) with or to fine-tune (base: in a config)");
  struct Args {
    std::string onnx, output, classes, input_size;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->onnx, "The ONNX file (.onnx)")->required();
  cmd->add_option("--output,-o", a->output, "The model file to write (model.bin)")->required();
  cmd->add_option("--classes", a->classes,
                  "Class names, one per line (default: the file's class_names metadata, which dltrain export writes, "
                  "else class_1 .. class_K)");
  cmd->add_option("--input-size", a->input_size, "HxWxC when the ONNX input has symbolic sizes");
  return [a]() {
    OnnxImportOptions opt;
    if (!a->classes.empty()) opt.classes = read_classes(a->classes);
    if (!a->input_size.empty()) opt.input_size = parse_size(a->input_size);
    ModelData m = import_onnx(a->onnx, opt);
    Network net(m, Device::cpu(), a->onnx);  // validates shapes and weights before writing
    save_model(a->output, m);
    const Shape& in = net.input_shape();
    std::printf(
        "imported %s: %zu layers, %lld learnables, input %lldx%lldx%lld, %lld classes%s -> %s\n", a->onnx.c_str(),
        net.size(), static_cast<long long>(net.total_learnables()), static_cast<long long>(in[0]),
        static_cast<long long>(in[1]), static_cast<long long>(in[2]), static_cast<long long>(net.num_classes()),
        net.task() == "segmentation" ? " per pixel (a segmentation network: dltrain segment)" : "", a->output.c_str());
    return 0;
  };
}

}  // namespace dlt::app
