// dltrain time CONFIG.yaml [--batch N] [--iterations N]: like `caffe time`. Times forward and
// backward per layer and whole training steps (forward, loss, backward, solver update) and
// inference passes on synthetic data, and reports images/s; per layer also its time in an
// inference pass, where a layer that another's fused step computes (a folded normalization, a
// residual addition) names that layer.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "config/config.h"
#include "net/network.h"
#include "onnx/transfer.h"
#include "optim/optimizer.h"
#include "train/inference.h"
#include "train/step_graph.h"
#include "util/json.h"
#include "util/timer.h"

namespace dlt::app {

namespace {

// Seconds per call of f over `iterations` calls after `warmup` untimed ones; the loop is
// timed as a whole and repeated `repeats` times; the median repeat is returned (as the
// PyTorch scripts of scripts/bench report theirs).
template <class F>
double seconds_per_call(Backend& be, int warmup, int iterations, int repeats, F f) {
  for (int i = 0; i < warmup; ++i) f(i);
  be.synchronize();
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    Timer t;
    for (int i = 0; i < iterations; ++i) f(warmup + r * iterations + i);
    be.synchronize();
    times.push_back(t.seconds() / iterations);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

Runner add_time(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "time",
      "Time a network on synthetic data: each layer's forward and backward time, and training and inference "
      "images/s");
  struct Args {
    std::string path;
    int64_t batch = 0;
    int iterations = 20, warmup = 5, repeats = 3, threads = 0, gpu = -1;
    bool json = false;
    std::vector<std::string> sets;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("config", a->path, "A config file (.yaml)")->required();
  cmd->add_option("--batch", a->batch, "Mini-batch size (default: training.MiniBatchSize)");
  cmd->add_option("--iterations", a->iterations, "Timed iterations per repeat (default 20)")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--warmup", a->warmup, "Untimed warm-up iterations (default 5)");
  cmd->add_option("--repeats", a->repeats, "Timed loops of --iterations; the median counts (default 3)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--threads", a->threads, "CPU threads (default: all cores)");
  cmd->add_option("--gpu", a->gpu, "Run on this GPU (same as training.ExecutionEnvironment=gpu, GPUDevice=N)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", a->json, "Print one JSON object");
  cmd->add_option("--set", a->sets, "Override a config option: section.path=value");
  return [a]() {
    Config c = load_config(a->path, a->sets);
    apply_transfer(c);  // base: loads the base model
    const InferenceRuntime rt = inference_runtime(c.training, a->gpu, a->threads);
    const Device dev = rt.device;
    int64_t n = a->batch > 0 ? a->batch : c.training.mini_batch_size;
    Network net(network_for_training(c), rt.backend);
    net.init_params(c.training.seed);
    net.set_mixed_precision(c.training.precision == Precision::kMixed);
    net.set_batch(n);
    Optimizer opt(c.training, net.params());
    const Shape& in = net.input_shape();
    // One label per image, or per output pixel for a segmentation network; regression and
    // multi-label networks: a row of float targets per image (responses, 0/1 per label).
    const Shape out = net.output_shape(net.size() - 1);
    const bool floats = net.float_targets();
    Tensor x_host(batch_shape(n, in)), y_host(floats            ? Shape{n, net.output_width()}
                                              : net.per_pixel() ? Shape{n, out[0], out[1]}
                                                                : Shape{n},
                                              Device::cpu(), floats ? DType::kF32 : DType::kI32);
    Rng rng(1);
    for (int64_t i = 0; i < x_host.numel(); ++i) x_host.data()[i] = static_cast<float>(rng.below(256));
    for (int64_t i = 0; i < y_host.numel(); ++i) {
      const auto v = rng.below(floats ? 2 : static_cast<uint64_t>(net.num_classes()));
      if (floats)
        y_host.data()[i] = static_cast<float>(v);
      else
        y_host.data_i32()[i] = static_cast<int32_t>(v);
    }
    Tensor x = x_host.to(dev), y = y_host.to(dev);
    Backend& be = rt.backend;

    std::vector<double> fwd(net.size(), 0.0), bwd(net.size(), 0.0);
    const int repeats = a->repeats;
    // CudaGraph: the steps are captured once (after StepGraph's warm-up, within
    // --warmup) and replayed, as `dltrain train` does (docs/gpu.md "CUDA Graphs").
    std::unique_ptr<StepGraph> graph;
    std::string graph_state = "off";
    if (c.training.cuda_graph) {
      const std::string why = step_graph_blocker(net, dev, 1);
      if (why.empty()) {
        graph = std::make_unique<StepGraph>(dev);
        opt.set_device_scalars(true);
      } else {
        graph_state = "off (" + why + ")";
      }
    }
    const double lr = c.training.initial_learn_rate * 1e-3;
    double step = seconds_per_call(be, a->warmup, a->iterations, repeats, [&](int it) {
      RunContext ctx{true, 0, static_cast<uint64_t>(it + 1)};
      if (!graph) {
        net.forward(x, ctx);
        net.loss_and_backward(y, ctx, true, nullptr);
        opt.step(lr);
        return;
      }
      opt.prepare(lr);  // outside the graph: the step's scalars, one upload
      graph->run(n, [&] {
        net.forward(x, ctx);
        net.loss_and_backward_async(y, ctx, true);
        opt.update();
      });
      net.set_loss_labels(y);
      net.read_loss(nullptr);  // waits for the loss, as the uncaptured loop does
    });
    if (graph) graph_state = graph->summary();
    RunContext eval{false, 0, 0};
    double infer = seconds_per_call(be, a->warmup, a->iterations, repeats, [&](int) { net.forward(x, eval); });
    net.set_profile(&fwd, &bwd);  // per-layer timing, in separate passes (it synchronizes)
    for (int it = 0; it < a->iterations; ++it) {
      RunContext ctx{true, 0, static_cast<uint64_t>(it + 1)};
      net.forward(x, ctx);
      net.loss_and_backward(y, ctx, true, nullptr);
    }
    std::vector<double> inf(net.size(), 0.0);
    net.set_profile(&inf, nullptr);  // the same for inference, with its fused steps
    for (int it = 0; it < a->iterations; ++it) net.forward(x, eval);
    net.set_profile(nullptr, nullptr);
    double train_ips = static_cast<double>(n) / step, infer_ips = static_cast<double>(n) / infer;
    if (a->json) {
      JsonWriter j;
      j.begin_object();
      j.field("config", a->path).field("batch", n).field("device", dev.str());
      j.field("precision", to_string(c.training.precision));
      // The switches a GPU benchmark must report beside its figures (after DLT_* overrides).
      j.field("cudnn_engines", to_string(c.training.cudnn_engines))
          .field("batch_norm_kernels", to_string(c.training.batch_norm_kernels));
      j.field("allow_reduced_precision_reduction", c.training.allow_reduced_precision_reduction);
      j.field("cudnn_runtime_compiled", c.training.cudnn_runtime_compiled);
      j.field("cuda_graph", graph_state).field("cuda_graph_replays", graph ? graph->replays() : int64_t(0));
      j.field("train_images_per_second", train_ips).field("inference_images_per_second", infer_ips);
      j.field("train_step_ms", step * 1e3).field("inference_ms", infer * 1e3);
      j.field("flops_per_image", net.flops_per_image());
      j.field("peak_device_memory_bytes", static_cast<int64_t>(be.peak_memory_bytes()));
      j.field("activation_bytes", net.activation_bytes()).field("inference_bytes", net.inference_bytes());
      j.key("layers").begin_array();
      for (size_t i = 0; i < net.size(); ++i) {
        j.begin_object().field("name", net.layer(i).name()).field("type", net.layer(i).type());
        j.field("fused", net.fused(i));
        j.field("forward_ms", fwd[i] / a->iterations * 1e3).field("backward_ms", bwd[i] / a->iterations * 1e3);
        j.field("inference_ms", inf[i] / a->iterations * 1e3);
        const size_t in = net.inference_step_of(i);
        if (in != i) j.field("inference_in", net.layer(in).name());
        j.end_object();
      }
      j.end_array().end_object();
      std::printf("%s\n", j.str().c_str());
      return 0;
    }
    std::printf("%-24s %-26s %12s %12s %13s\n", "Layer", "Type", "Forward ms", "Backward ms", "Inference ms");
    for (size_t i = 0; i < net.size(); ++i) {
      const size_t in = net.inference_step_of(i);
      const std::string where = in == i ? "" : "  (inference: in " + net.layer(in).name() + ")";
      std::printf("%-24s %-26s %12.3f %12.3f %13.3f%s%s\n", net.layer(i).name().c_str(), net.layer(i).type().c_str(),
                  fwd[i] / a->iterations * 1e3, bwd[i] / a->iterations * 1e3, inf[i] / a->iterations * 1e3,
                  net.fused(i) ? "  (fused)" : "", where.c_str());
    }
    std::printf(
        "\nBatch %lld on %s (Precision %s): training step %.2f ms (%.0f images/s), inference %.2f ms (%.0f images/s)\n",
        static_cast<long long>(n), dev.str().c_str(), to_string(c.training.precision).c_str(), step * 1e3, train_ips,
        infer * 1e3, infer_ips);
    std::printf("Layer outputs and gradients: %.1f MiB (an inference pass writes to %.1f MiB of them)\n",
                static_cast<double>(net.activation_bytes()) / (1 << 20),
                static_cast<double>(net.inference_bytes()) / (1 << 20));
    if (c.training.cuda_graph) std::printf("Training steps: %s\n", graph_state.c_str());
    if (!dev.is_cpu())
      std::printf(
          "cuDNN: CudnnEngines %s, BatchNormKernels %s, AllowReducedPrecisionReduction %s, CudnnRuntimeCompiled %s\n",
          to_string(c.training.cudnn_engines).c_str(), to_string(c.training.batch_norm_kernels).c_str(),
          c.training.allow_reduced_precision_reduction ? "true" : "false",
          c.training.cudnn_runtime_compiled ? "true" : "false");
    std::printf("Forward FLOPs per image: %lld (training about 3x: %.1f GFLOP/s)\n",
                static_cast<long long>(net.flops_per_image()),
                3.0 * static_cast<double>(net.flops_per_image()) * train_ips / 1e9);
    return 0;
  };
}

}  // namespace dlt::app
