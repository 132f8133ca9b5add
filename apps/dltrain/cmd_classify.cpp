// dltrain classify MODEL.bin PATH... [--output preds.csv] [--json] [--top K] [--batch N]
//                  [--threshold T] [--table CSV]
// Labels images (files or folders) with the model's classes. When every image sits in a
// folder named after one of the classes, also reports accuracy, per-class precision and
// recall, and the confusion matrix (MATLAB's classify + confusionmat). A multi-label model
// (task "multilabel") gives each image the labels whose probability reaches --threshold
// (default 0.5), and with --table (File,Labels) the multi-label metrics (train/multilabel_metrics.h).
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
#include "image_files.h"
#include "image_outputs.h"
#include "model_argument.h"
#include "net/model_file.h"
#include "net/network.h"
#include "table_rows.h"
#include "train/inference.h"
#include "train/metrics.h"
#include "train/multilabel_metrics.h"
#include "util/error.h"
#include "util/files.h"
#include "util/strings.h"

namespace dlt::app {

namespace fs = std::filesystem;

namespace {

// Where the predictions and the report go (the header's rules), for both kinds of classifier.
void write_outputs(const std::string& output, bool json, const std::string& csv, const std::string& json_text,
                   const std::string& report) {
  if (!output.empty()) write_file_atomic(output, csv);
  if (json) {
    std::printf("%s\n", json_text.c_str());
  } else if (output.empty()) {
    std::fputs(csv.c_str(), stdout);
    std::fflush(stdout);
    std::fputs(report.c_str(), stderr);
  } else if (is_standard_output(output)) {  // --output /dev/stdout: the CSV is there already
    std::fputs(report.c_str(), stderr);
  } else {
    std::fputs(report.c_str(), stdout);
  }
}

// The images and their true label sets from a File,Labels table (labels ";"-separated).
void read_label_table(const std::string& csv, const std::string& folder, const std::vector<std::string>& classes,
                      std::vector<std::string>& files, std::vector<std::vector<uint8_t>>& truth) {
  const TableRows t = read_table_rows(csv);
  if (t.header.size() != 2 || !iequals(t.header[1], "Labels"))
    throw DataError(csv +
                    ":1: a multi-label table has two columns, the image file and Labels (labels separated by "
                    "';'), but the header is '" +
                    join(t.header, ",") + "'");
  for (const TableRow& row : t.rows) {
    files.push_back(table_image(t, row, folder));
    std::vector<uint8_t> set(classes.size(), 0);
    const std::string& cell = row.cells[1];
    for (size_t start = 0; start <= cell.size();) {
      const size_t end = std::min(cell.find(';', start), cell.size());
      const std::string label = trim_cell(cell.substr(start, end - start));
      start = end + 1;
      if (label.empty()) continue;
      auto it = std::find(classes.begin(), classes.end(), label);
      if (it == classes.end())
        throw DataError(table_where(t, row) + ": label '" + label + "' is not one of the model's classes (" +
                        join(classes, ", ") + ")" + did_you_mean(label, classes));
      set[static_cast<size_t>(it - classes.begin())] = 1;
    }
    truth.push_back(std::move(set));
  }
}

}  // namespace

Runner add_classify(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "classify",
      "Label images with a trained classifier, with accuracy and a confusion matrix when they sit in class "
      "folders (like MATLAB's classify); a multi-label model gives each image the labels over --threshold");
  struct Args {
    std::string model;
    std::vector<std::string> paths;
    std::string output, table;
    bool json = false;
    int top = 1, threads = 0, gpu = -1;
    int64_t batch = 128;
    double threshold = 0.5;
    std::string precision = "single";
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "A model file (model.bin)")->required();
  cmd->add_option("paths", a->paths,
                  "Image files or folders (class folders give accuracy); with --table, the folder its relative "
                  "paths start from (default: the table's folder)");
  cmd->add_option("--output,-o", a->output,
                  "Write the predictions as CSV to this file (default: stdout, the report then goes to stderr)");
  cmd->add_flag("--json", a->json, "Print only the predictions and metrics as JSON");
  CLI::Option* top =
      cmd->add_option("--top", a->top, "Also list the top K classes and scores")->check(CLI::Range(1, 1000));
  CLI::Option* threshold =
      cmd->add_option("--threshold", a->threshold,
                      "Multi-label models: give an image every label whose probability is >= T (default 0.5)")
          ->check(CLI::Range(0.0, 1.0));
  CLI::Option* table = cmd->add_option(
      "--table", a->table,
      "Multi-label models: a CSV of the images and their true labels (columns File,Labels; labels separated by "
      "';') for precision, recall, F1, average precision and the Jaccard index");
  cmd->add_option("--batch", a->batch, "Images per forward pass (default 128)")->check(CLI::Range(1, 65536));
  cmd->add_option("--threads", a->threads, "CPU threads (default: all cores)");
  cmd->add_option("--gpu", a->gpu, "Run on this GPU (default: the CPU)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--precision", a->precision,
                  "single (default) or mixed: bfloat16 multiplies in conv and fullyConnected")
      ->check(CLI::IsMember(choice_names<Precision>()));
  return [a, top, threshold, table]() {
    check_model_argument(a->model, "classify");
    const ModelData m = load_model(a->model);
    if (m.task == "regression")
      throw UsageError(a->model + ": a regression model (it predicts responses, not classes); use dltrain predict");
    const bool multi = m.task == "multilabel";
    if (!multi && threshold->count() > 0)
      throw UsageError("--threshold: " + a->model +
                       " is a single-label classifier (one class per image); --threshold is for multi-label models");
    if (!multi && table->count() > 0)
      throw UsageError("--table: " + a->model +
                       " is a single-label classifier; --table is for multi-label models (single-label classify "
                       "reads the true classes from class folder names)");
    if (multi && top->count() > 0)
      throw UsageError("--top: " + a->model +
                       " is a multi-label model: every label whose probability is >= --threshold is listed");
    if (a->paths.empty() && a->table.empty())
      throw UsageError("classify: give image files or folders" + std::string(multi ? " or --table CSV" : "") +
                       " (see dltrain classify --help)");
    if (!a->table.empty() && (a->paths.size() > 1 || (a->paths.size() == 1 && !fs::is_directory(a->paths[0]))))
      throw UsageError("--table " + a->table +
                       ": the images are the table's; give at most one folder, the one its "
                       "relative paths start from");
    const InferenceRuntime rt = inference_runtime(inference_options(), a->gpu, a->threads);
    Precision precision = Precision::kSingle;
    parse_choice(a->precision, &precision);  // checked by IsMember
    const std::unique_ptr<Network> network = inference_network(m, a->model, rt, precision);
    Network& net = *network;
    if (net.per_pixel())
      throw UsageError(a->model + ": the network classifies pixels (pixelClassification); use dltrain segment");
    const auto& classes = net.classes();
    if (classes.empty()) throw ModelError(a->model + ": the model has no class names");
    const int64_t k = static_cast<int64_t>(classes.size());
    auto check_width = [&](int64_t width) {
      if (width != k)
        throw ModelError(a->model + ": the network gives " + std::to_string(width) + " values per image for " +
                         std::to_string(k) + " class names");
    };

    if (multi) {
      std::vector<std::string> files;
      std::vector<std::vector<uint8_t>> truth;
      if (!a->table.empty())
        read_label_table(a->table, a->paths.empty() ? "" : a->paths[0], classes, files, truth);
      else
        files = list_images(a->paths);
      MultiLabelPredictions preds(classes, static_cast<float>(a->threshold));
      std::vector<std::vector<float>> probs(files.size());
      for_each_output(net, files, a->batch, [&](size_t i, const float* row, int64_t width) {
        check_width(width);
        probs[i].assign(row, row + width);
      });
      for (size_t i = 0; i < files.size(); ++i)
        preds.add(files[i], probs[i], truth.empty() ? std::vector<uint8_t>{} : truth[i]);
      write_outputs(a->output, a->json, preds.csv(), a->json ? preds.json() : "", preds.report());
      return 0;
    }

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
    Predictions preds;
    preds.classes = classes;
    preds.top = std::min<int>(a->top, static_cast<int>(classes.size()));
    for_each_output(net, files, a->batch, [&](size_t i, const float* row, int64_t width) {
      check_width(width);
      preds.add(files[i], truth[i], std::vector<float>(row, row + width));
    });
    preds.labelled = labelled;
    write_outputs(a->output, a->json, preds.csv(), a->json ? preds.json() : "", preds.report());
    return 0;
  };
}

}  // namespace dlt::app
