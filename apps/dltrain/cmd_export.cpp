// dltrain export model.bin --output model.onnx [--external-data]
// Writes a trained model as ONNX (NCHW input "input", output "prob"), for ONNX runtimes;
// --output may be a device or FIFO (written through) or /dev/stdout (the note goes to stderr).
// Hidden test aids: --debug-forward IN.f32 writes the class probabilities of the raw NHWC
// float32 images in IN.f32 to --output (raw float32, N x K); --debug-params prints one line
// "layer/name count crc32" per learnable, to check frozen weights stay bit-identical.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "commands.h"
#include "net/network.h"
#include "onnx/onnx.h"
#include "util/error.h"
#include "util/files.h"

namespace dlt::app {

namespace {

void debug_forward(const ModelData& m, const std::string& in_path, const std::string& out_path) {
  Network net(m, Device::cpu());
  std::string raw = read_file(in_path);
  const int64_t per = net.input_shape().numel();
  const int64_t bytes = per * static_cast<int64_t>(sizeof(float));
  if (raw.empty() || static_cast<int64_t>(raw.size()) % bytes != 0)
    throw UsageError(in_path + ": " + std::to_string(raw.size()) + " bytes is not a whole number of " +
                     net.input_shape().str() + " float32 images");
  const int64_t n = static_cast<int64_t>(raw.size()) / bytes;
  net.set_batch(n);
  const Shape& s = net.input_shape();
  Tensor x(Shape{n, s[0], s[1], s[2]});
  std::memcpy(x.data(), raw.data(), raw.size());
  RunContext ctx;
  const Tensor& probs = net.forward(x, ctx);
  Tensor host = probs.to(Device::cpu());
  write_file_atomic(out_path, std::string(reinterpret_cast<const char*>(host.data()), host.numel() * sizeof(float)));
}

}  // namespace

Runner add_export(CLI::App& app) {
  auto* cmd = app.add_subcommand("export",
                                 "Write a dltrain model as ONNX, for onnxruntime, OpenCV's dnn and other ONNX readers");
  struct Args {
    std::string model, output, forward;
    bool params = false;
    OnnxExportOptions onnx;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "A model file (model.bin)")->required();
  cmd->add_option("--output,-o", a->output, "The ONNX file to write (model.onnx)");
  cmd->add_flag("--external-data", a->onnx.external_data,
                "Write the weights to OUTPUT.data beside the model (ONNX's external data); "
                "done without the flag only for models over protobuf's 2 GB limit");
  cmd->add_option("--debug-forward", a->forward, "")->group("");
  cmd->add_flag("--debug-params", a->params, "")->group("");
  return [a]() {
    ModelData m = load_model(a->model);
    if (a->params) {
      for (const NamedTensor& t : m.params)
        std::printf("%s/%s %zu %08x\n", t.layer.c_str(), t.name.c_str(), t.data.size(),
                    crc32(t.data.data(), t.data.size() * sizeof(float)));
      return 0;
    }
    if (a->output.empty()) throw UsageError("export needs --output FILE (e.g. --output model.onnx)");
    if (!a->forward.empty()) {
      debug_forward(m, a->forward, a->output);
      return 0;
    }
    export_onnx(m, a->output, a->onnx);
    // With --output /dev/stdout the ONNX bytes own stdout: the note goes to stderr.
    std::fprintf(is_standard_output(a->output) ? stderr : stdout,
                 "exported %s -> %s (ONNX opset 13, input (N, C, H, W) 'input', output '%s')\n", a->model.c_str(),
                 a->output.c_str(), m.task == "regression" ? "responses" : "prob");
    return 0;
  };
}

}  // namespace dlt::app
