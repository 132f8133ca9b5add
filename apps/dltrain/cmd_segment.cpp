// dltrain segment MODEL.bin IMAGES... [--labels DIR] [--output DIR] [--json] [--colour] [--batch N]
// MATLAB's semanticseg + labeloverlay + evaluateSemanticSegmentation: labels every pixel of
// each image with a per-pixel (pixelClassification) model, writes <stem>.png (class indices,
// or with --colour the class colours) and <stem>_overlay.png (the image blended with the class
// colours) at the image's own size, and with --labels scores the predictions against the
// ground-truth label images paired by file stem (train/seg_metrics.h), writing metrics.json.
// Everything is written under a temporary folder inside the output folder and moved into
// place only when every image succeeded: a failure leaves no outputs behind.
// stdout: the report for people, or with --json only the JSON.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "class_labels.h"
#include "commands.h"
#include "config/config.h"
#include "data/decode.h"
#include "data/encode.h"
#include "data/label_images.h"
#include "data/pixel_labels.h"
#include "data/transform.h"
#include "image_files.h"
#include "model_argument.h"
#include "net/model_file.h"
#include "net/network.h"
#include "train/device_batches.h"
#include "train/inference.h"
#include "train/seg_metrics.h"
#include "util/error.h"
#include "util/files.h"
#include "util/json.h"
#include "util/strings.h"

namespace dlt::app {

namespace fs = std::filesystem;

namespace {

struct Item {
  std::string image, label;  // label: empty without --labels
  std::string stem;
  int height = 0, width = 0;
};

// Pairs every image with DIR/<stem>.<image extension>; checks sizes. Throws before anything
// is written: a missing partner, two label files for one stem, a size mismatch.
void pair_labels(std::vector<Item>& items, const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw DataError("--labels " + dir + ": no such folder");
  std::map<std::string, std::string> by_stem;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_regular_file() || !is_image_file(it->path())) continue;
    const std::string stem = it->path().stem().string(), path = it->path().string();
    auto [slot, fresh] = by_stem.emplace(stem, path);
    if (!fresh)
      throw DataError("--labels " + dir + ": two label images for '" + stem + "': " + slot->second + " and " + path +
                      " (keep one per image)");
  }
  for (auto& item : items) {
    auto it = by_stem.find(item.stem);
    if (it == by_stem.end())
      throw DataError(item.image + ": no label image named " + item.stem + ".<ext> in " + dir +
                      " (label images pair with images by file name without extension)");
    item.label = it->second;
    int h = 0, w = 0;
    image_size(item.label, h, w);
    if (h != item.height || w != item.width)
      throw DataError(item.label + " is " + std::to_string(w) + "x" + std::to_string(h) +
                      " (width x height) but its image " + item.image + " is " + std::to_string(item.width) + "x" +
                      std::to_string(item.height) + " (a label image must have its image's size)");
  }
}

// The output folder's temporary sibling of final names: removed with its contents unless
// commit() moved them into place.
class Staging {
 public:
  explicit Staging(const std::string& out) : out_(out) {
    std::error_code ec;
    created_out_ = !fs::exists(out_, ec);
    make_dirs(out_);
    dir_ = (fs::path(out_) / (".segment-partial-" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_, ec);
    make_dirs(dir_);
  }
  ~Staging() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    if (!committed_ && created_out_) fs::remove(out_, ec);  // only if empty
  }
  std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  void add(const std::string& name) { names_.push_back(name); }
  void commit() {
    for (const auto& n : names_) {
      std::error_code ec;
      fs::rename(fs::path(dir_) / n, fs::path(out_) / n, ec);
      if (ec) throw DataError((fs::path(out_) / n).string() + ": cannot move the output into place: " + ec.message());
    }
    committed_ = true;
  }

 private:
  std::string out_, dir_;
  std::vector<std::string> names_;
  bool created_out_ = false, committed_ = false;
};

}  // namespace

Runner add_segment(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("segment",
                         "Label every pixel of images with a segmentation model; score them against label images "
                         "(MATLAB's semanticseg, labeloverlay and evaluateSemanticSegmentation)");
  struct Args {
    std::string model;
    std::vector<std::string> paths;
    std::string labels, output = "segment-out", label_ids;
    bool json = false, colour = false;
    int threads = 0, gpu = -1;
    int64_t batch = 8;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "A model file whose network ends in pixelClassification")->required();
  cmd->add_option("images", a->paths, "Image files or folders")->required();
  cmd->add_option("--labels", a->labels,
                  "Folder of ground-truth label images, paired with the images by file name without extension");
  cmd->add_option("--output,-o", a->output,
                  "Folder for <stem>.png, <stem>_overlay.png and metrics.json (default segment-out)");
  cmd->add_option("--label-ids", a->label_ids,
                  "The label values of each class when the model stores none: [0, 1, 2] or [[128,0,0], [0,128,0]] "
                  "(default: the model's LabelIDs, else class c is value c)");
  cmd->add_flag("--json", a->json, "Print only the outputs and metrics as JSON");
  cmd->add_flag("--colour,--color", a->colour, "Write label images in the class colours instead of class indices");
  cmd->add_option("--batch", a->batch, "Images per forward pass (default 8)")->check(CLI::Range(1, 4096));
  cmd->add_option("--threads", a->threads, "CPU threads (default: all cores)");
  cmd->add_option("--gpu", a->gpu, "Run on this GPU (default: the CPU)")->check(CLI::NonNegativeNumber);
  return [a]() {
    check_model_argument(a->model, "segment");
    const ModelData m = load_model(a->model);
    const InferenceRuntime rt = inference_runtime(inference_options(), a->gpu, a->threads);
    const Device dev = rt.device;
    const std::unique_ptr<Network> network = inference_network(m, a->model, rt);
    Network& net = *network;
    if (!net.per_pixel())
      throw UsageError(a->model +
                       ": the network does not end in pixelClassification (use dltrain classify for image classes)");
    const std::vector<std::string> classes = net.classes();
    if (classes.empty()) throw ModelError(a->model + ": the model has no class names");
    const int k = static_cast<int>(classes.size());
    if (k != net.num_classes() || k > kMaxPixelClasses)
      throw ModelError(a->model + ": " + std::to_string(k) + " class names for " + std::to_string(net.num_classes()) +
                       " network outputs (at most " + std::to_string(kMaxPixelClasses) + ")");
    const ClassLabels labels = class_labels(m, a->model, a->label_ids, classes);

    // Everything that can be checked before writing: images, stems, label partners, sizes.
    std::vector<Item> items;
    std::set<std::string> names;
    for (const auto& f : list_images(a->paths)) {
      Item it;
      it.image = f;
      it.stem = fs::path(f).stem().string();
      for (const std::string& n : {it.stem + ".png", it.stem + "_overlay.png"})
        if (!names.insert(n).second)
          throw DataError(f + ": its output " + n +
                          " would overwrite another image's (give images distinct file names)");
      image_size(f, it.height, it.width);
      items.push_back(std::move(it));
    }
    const bool scored = !a->labels.empty();
    if (scored) pair_labels(items, a->labels);

    const Shape in = net.input_shape();  // (H, W, C)
    const int ih = static_cast<int>(in[0]), iw = static_cast<int>(in[1]), ic = static_cast<int>(in[2]);
    SegmentationMetrics metrics(classes);
    Staging staging(a->output);
    RunContext ctx;
    DeviceBatches on_device(dev);
    Batch b;
    Tensor host;  // probabilities copied from a GPU
    Image decoded, resized, pred_small, pred, truth, rgb;
    JsonWriter files;
    files.begin_array();
    const auto& palette = labels.colours;
    for (size_t start = 0; start < items.size(); start += size_t(a->batch)) {
      const int64_t n = std::min<int64_t>(a->batch, int64_t(items.size() - start));
      b.images = Tensor(Shape{n, in[0], in[1], in[2]});
      b.labels = Tensor(Shape{n}, Device::cpu(), DType::kI32);
      b.size = b.global_size = n;
      for (int64_t i = 0; i < n; ++i) {
        decode_image(items[start + size_t(i)].image, ic, decoded);
        const Image* src = &decoded;
        if (decoded.height != ih || decoded.width != iw) {
          resize_bilinear(decoded, ih, iw, resized);
          src = &resized;
        }
        float* dst = b.images.data() + i * ih * iw * ic;
        for (size_t p = 0; p < src->pixels.size(); ++p) dst[p] = src->pixels[p];
      }
      if (n != net.batch()) net.set_batch(n);
      const Tensor& out = net.forward(on_device.take(b).images, ctx);
      if (!dev.is_cpu()) {
        if (!host.defined()) host = Tensor(out.shape());
        host.resize(out.shape());
        host.copy_from(out);
      }
      const Tensor& probs = dev.is_cpu() ? out : host;
      for (int64_t i = 0; i < n; ++i) {
        const Item& item = items[start + size_t(i)];
        argmax_classes(probs.data() + i * ih * iw * k, ih, iw, k, pred_small);
        resize_nearest(pred_small, item.height, item.width, pred);
        const std::string label_name = item.stem + ".png", overlay_name = item.stem + "_overlay.png";
        write_image(staging.path(label_name), a->colour ? colourize(pred, palette) : pred);
        staging.add(label_name);
        decode_image(item.image, 3, rgb);
        write_image(staging.path(overlay_name), overlay(rgb, pred, palette));
        staging.add(overlay_name);
        files.begin_object().field("image", item.image).field("labels", label_name).field("overlay", overlay_name);
        if (scored) {
          try {
            labels.ids.decode(item.label, truth);
          } catch (const DataError& e) {
            if (labels.source != "index") throw;
            throw DataError(std::string(e.what()) + "; the model stores no LabelIDs: give them with --label-ids");
          }
          metrics.add(truth.pixels.data(), pred.pixels.data(), item.height, item.width);
          files.field("truth", item.label);
        }
        files.end_object();
      }
    }
    files.end_array();

    JsonWriter j;
    j.begin_object();
    j.field("model", a->model).field("output", a->output).field("images", int64_t(items.size()));
    j.key("classes").begin_array();
    for (const auto& c : classes) j.value(c);
    j.end_array();
    j.field("label_ids", labels.source);
    j.key("files");
    std::string text = j.str() + files.str();
    if (scored) {
      const std::string mj = metrics.json();  // {"DataSetMetrics":...}: its members join ours
      text += "," + mj.substr(1, mj.size() - 2);
      write_file_atomic(staging.path("metrics.json"), metrics.json() + "\n");
      staging.add("metrics.json");
    }
    text += "}";
    staging.commit();
    if (a->json) {
      std::printf("%s\n", text.c_str());
    } else {
      std::printf("Segmented %zu image%s into %s (%s label images, overlays)\n", items.size(),
                  items.size() == 1 ? "" : "s", a->output.c_str(), a->colour ? "colour" : "class-index");
      if (scored) std::fputs(metrics.report().c_str(), stdout);
    }
    return 0;
  };
}

}  // namespace dlt::app
