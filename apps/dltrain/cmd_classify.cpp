// dltrain classify MODEL.bin PATH... [--output preds.csv] [--json] [--top K] [--batch N]
// Labels images (files or folders) with the model's classes. When every image sits in a
// folder named after one of the classes, also reports accuracy, per-class precision and
// recall, and the confusion matrix (MATLAB's classify + confusionmat).
// stdout carries data only: the predictions as CSV (no --output, or --output /dev/stdout) or
// the JSON (--json); the report for people goes to stderr, or to stdout when --output took the
// CSV elsewhere. --output may be a device or FIFO: it is written through (util/files.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "config/config.h"
#include "data/batch_loader.h"
#include "data/datastore.h"
#include "data/decode.h"
#include "image_files.h"
#include "model_argument.h"
#include "net/model_file.h"
#include "net/network.h"
#include "train/device_batches.h"
#include "train/inference.h"
#include "train/metrics.h"
#include "util/error.h"
#include "util/files.h"
#include "util/strings.h"

namespace dlt::app {

namespace fs = std::filesystem;

Runner add_classify(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "classify",
      "Label images with a trained classifier, with accuracy and a confusion matrix when they sit in class "
      "folders (like MATLAB's classify)");
  struct Args {
    std::string model;
    std::vector<std::string> paths;
    std::string output;
    bool json = false;
    int top = 1, threads = 0, gpu = -1;
    int64_t batch = 128;
    std::string precision = "single";
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "A model file (model.bin)")->required();
  cmd->add_option("paths", a->paths, "Image files or folders (class folders give accuracy)")->required();
  cmd->add_option("--output,-o", a->output,
                  "Write the predictions as CSV to this file (default: stdout, the report then goes to stderr)");
  cmd->add_flag("--json", a->json, "Print only the predictions and metrics as JSON");
  cmd->add_option("--top", a->top, "Also list the top K classes and scores")->check(CLI::Range(1, 1000));
  cmd->add_option("--batch", a->batch, "Images per forward pass (default 128)")->check(CLI::Range(1, 65536));
  cmd->add_option("--threads", a->threads, "CPU threads (default: all cores)");
  cmd->add_option("--gpu", a->gpu, "Run on this GPU (default: the CPU)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--precision", a->precision,
                  "single (default) or mixed: bfloat16 multiplies in conv and fullyConnected")
      ->check(CLI::IsMember(choice_names<Precision>()));
  return [a]() {
    check_model_argument(a->model, "classify");
    const ModelData m = load_model(a->model);
    const InferenceRuntime rt = inference_runtime(inference_options(), a->gpu, a->threads);
    const Device dev = rt.device;
    Precision precision = Precision::kSingle;
    parse_choice(a->precision, &precision);  // checked by IsMember
    const std::unique_ptr<Network> network = inference_network(m, a->model, rt, precision);
    Network& net = *network;
    if (net.per_pixel())
      throw UsageError(a->model + ": the network classifies pixels (pixelClassification); use dltrain segment");
    const auto& classes = net.classes();
    if (classes.empty()) throw ModelError(a->model + ": the model has no class names");

    std::vector<std::string> files = list_images(a->paths);
    std::vector<int32_t> truth(files.size(), -1);
    bool labelled = true;
    for (size_t i = 0; i < files.size(); ++i) {
      std::string parent = fs::path(files[i]).parent_path().filename().string();
      auto it = std::find(classes.begin(), classes.end(), parent);
      if (it == classes.end())
        labelled = false;
      else
        truth[i] = static_cast<int32_t>(it - classes.begin());
    }
    std::vector<int32_t> loader_labels(files.size());
    for (size_t i = 0; i < files.size(); ++i) loader_labels[i] = std::max(truth[i], 0);
    ImageDatastore ds = ImageDatastore::from_lists(files, loader_labels, classes);

    DataOptions data;
    TrainingOptions training;
    training.mini_batch_size = a->batch;
    training.shuffle = Shuffle::kNever;
    LoaderOptions lo = loader_options(data, training, net.input_shape(), false);
    lo.cache = Cache::kNone;
    BatchLoader loader(ds, lo);
    loader.start_epoch(0);

    Predictions preds;
    preds.classes = classes;
    preds.top = std::min<int>(a->top, static_cast<int>(classes.size()));
    RunContext ctx;
    Batch b;
    const int64_t k = net.num_classes();
    DeviceBatches on_device(dev);
    Tensor host;  // the probabilities on the host (reused)
    while (loader.next(b)) {
      if (b.size == 0) continue;
      if (b.size != net.batch()) net.set_batch(b.size);
      const Tensor& out = net.forward(on_device.take(b).images, ctx);
      if (!dev.is_cpu()) {
        if (!host.defined()) host = Tensor(out.shape());
        host.resize(out.shape());
        host.copy_from(out);
      }
      const Tensor& probs = dev.is_cpu() ? out : host;
      for (int64_t i = 0; i < b.size; ++i) {
        int64_t item = b.items[i];
        const float* p = probs.data() + i * k;
        preds.add(files[item], truth[item], std::vector<float>(p, p + k));
      }
    }
    preds.labelled = labelled;
    if (!a->output.empty()) write_file_atomic(a->output, preds.csv());
    if (a->json) {
      std::printf("%s\n", preds.json().c_str());
    } else if (a->output.empty()) {
      std::fputs(preds.csv().c_str(), stdout);
      std::fflush(stdout);
      std::fputs(preds.report().c_str(), stderr);
    } else if (is_standard_output(a->output)) {  // --output /dev/stdout: the CSV is there already
      std::fputs(preds.report().c_str(), stderr);
    } else {
      std::fputs(preds.report().c_str(), stdout);
    }
    return 0;
  };
}

}  // namespace dlt::app
