// dltrain predict MODEL.bin [IMAGES...] [--table CSV] [--output FILE] [--format csv|json]
// MATLAB's predict for a regression network: the responses each image's network output gives
// (un-normalised with the training responses' mean and standard deviation when the model
// stores them), and with --table (the image file, then one column per response, as training
// reads it) the RMSE, MAE and MAPE per response and over all (train/regression_metrics.h).
// stdout carries data only: the predictions (CSV, or with --format json the JSON) when there is
// no --output; the report for people then goes to stderr, else to stdout. --output is replaced
// atomically, or written through when it is a device or FIFO (util/files.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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
#include "train/regression_metrics.h"
#include "util/error.h"
#include "util/files.h"
#include "util/strings.h"

namespace dlt::app {

namespace fs = std::filesystem;

namespace {

// What to say to a model that is not a regression model.
std::string not_regression(const ModelData& m, const std::string& path) {
  bool seg = m.task == "segmentation";
  for (const LayerSpec& l : m.network.layers)
    seg = seg || (m.task.empty() && to_lower(l.type).find("pixelclassification") != std::string::npos);
  if (seg) return path + ": a segmentation model, not a regression model; use dltrain segment";
  const std::string kind = m.task == "multilabel" ? "multi-label classification" : "classification";
  return path + ": a " + kind +
         " model, not a regression model (dltrain predict gives a regression model's "
         "responses); use dltrain classify";
}

// The images and their true responses (in the order of `names`) from a table: the image file,
// then one column per response, named as the model's.
void read_response_table(const std::string& csv, const std::string& folder, const std::vector<std::string>& names,
                         bool named, std::vector<std::string>& files, std::vector<std::vector<float>>& truth) {
  const TableRows t = read_table_rows(csv);
  const std::vector<std::string> columns(t.header.begin() + 1, t.header.end());
  std::vector<size_t> column_of(names.size());  // names[r] is cell column_of[r]
  if (named) {
    for (size_t c = 0; c < columns.size(); ++c)
      if (std::find(names.begin(), names.end(), columns[c]) == names.end())
        throw DataError(csv + ":1: column '" + columns[c] + "' is not one of the model's responses (" +
                        join(names, ", ") + ")" + did_you_mean(columns[c], names));
    for (size_t r = 0; r < names.size(); ++r) {
      auto it = std::find(columns.begin(), columns.end(), names[r]);
      if (it == columns.end())
        throw DataError(csv + ":1: no column '" + names[r] + "' (the model predicts " + join(names, ", ") +
                        "; the header is '" + join(t.header, ",") + "')");
      column_of[r] = static_cast<size_t>(it - columns.begin()) + 1;
    }
  } else {
    if (columns.size() != names.size())
      throw DataError(csv + ":1: " + std::to_string(columns.size()) + " response columns but the model predicts " +
                      std::to_string(names.size()) + " responses (the image file first, then one column each)");
    for (size_t r = 0; r < names.size(); ++r) column_of[r] = r + 1;
  }
  for (const TableRow& row : t.rows) {
    files.push_back(table_image(t, row, folder));
    std::vector<float> values(names.size());
    for (size_t r = 0; r < names.size(); ++r) {
      const std::string cell = trim_cell(row.cells[column_of[r]]);
      char* end = nullptr;
      const double v = std::strtod(cell.c_str(), &end);
      if (cell.empty() || *end != '\0' || !std::isfinite(v) || std::fabs(v) > 3.4e38)
        throw DataError(table_where(t, row) + ": " + t.header[column_of[r]] + " '" + cell + "' is not a finite number");
      values[r] = static_cast<float>(v);
    }
    truth.push_back(std::move(values));
  }
}

}  // namespace

Runner add_predict(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "predict",
      "Predict the responses of images with a trained regression network, with RMSE, MAE and MAPE when a table "
      "gives the true responses (like MATLAB's predict)");
  struct Args {
    std::string model;
    std::vector<std::string> paths;
    std::string table, output, format = "csv";
    int threads = 0, gpu = -1;
    int64_t batch = 128;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "A regression model file (model.bin)")->required();
  cmd->add_option("images", a->paths,
                  "Image files or folders; with --table, the folder its relative paths start from (default: the "
                  "table's folder)");
  cmd->add_option("--table", a->table,
                  "A CSV of images and their true responses (the image file, then one column per response, headed "
                  "by its name) for RMSE, MAE and MAPE");
  cmd->add_option("--output,-o", a->output,
                  "Write the predictions to this file (default: stdout, the report then goes to stderr)");
  cmd->add_option("--format", a->format, "csv (default: path and one column per response) or json (with the errors)")
      ->check(CLI::IsMember({"csv", "json"}));
  cmd->add_option("--batch", a->batch, "Images per forward pass (default 128)")->check(CLI::Range(1, 65536));
  cmd->add_option("--threads", a->threads, "CPU threads (default: all cores)");
  cmd->add_option("--gpu", a->gpu, "Run on this GPU (default: the CPU)")->check(CLI::NonNegativeNumber);
  return [a]() {
    check_model_argument(a->model, "predict");
    const ModelData m = load_model(a->model);
    if (m.task != "regression") throw UsageError(not_regression(m, a->model));
    if (a->paths.empty() && a->table.empty())
      throw UsageError("predict: give image files or folders, or --table CSV (see dltrain predict --help)");
    if (!a->table.empty() && (a->paths.size() > 1 || (a->paths.size() == 1 && !fs::is_directory(a->paths[0]))))
      throw UsageError("--table " + a->table +
                       ": the images are the table's; give at most one folder, the one its relative paths start from");
    const InferenceRuntime rt = inference_runtime(inference_options(), a->gpu, a->threads);
    const std::unique_ptr<Network> network = inference_network(m, a->model, rt);
    Network& net = *network;

    // The responses: the model's names, else Response1..R for the network's R outputs.
    const bool named = !m.responses.names.empty();
    std::vector<std::string> names = m.responses.names;
    if (!named) {
      const int64_t r = net.output_shape(net.size() - 1).numel();
      for (int64_t i = 1; i <= r; ++i) names.push_back("Response" + std::to_string(i));
    }
    const auto& mean = m.responses.mean;
    const auto& sd = m.responses.std;
    if (!mean.empty() && (mean.size() != names.size() || sd.size() != names.size()))
      throw ModelError(a->model + ": " + std::to_string(mean.size()) + " response means for " +
                       std::to_string(names.size()) + " responses");

    std::vector<std::string> files;
    std::vector<std::vector<float>> truth;
    if (!a->table.empty())
      read_response_table(a->table, a->paths.empty() ? "" : a->paths[0], names, named, files, truth);
    else
      files = list_images(a->paths);

    std::vector<std::vector<float>> predicted(files.size());
    for_each_output(net, files, a->batch, [&](size_t i, const float* row, int64_t width) {
      if (width != static_cast<int64_t>(names.size()))
        throw ModelError(a->model + ": the network gives " + std::to_string(width) + " values per image for " +
                         std::to_string(names.size()) + " responses (" + join(names, ", ") + ")");
      predicted[i].assign(row, row + width);
      if (!mean.empty())
        for (size_t r = 0; r < names.size(); ++r) predicted[i][r] = predicted[i][r] * sd[r] + mean[r];
    });
    RegressionPredictions preds(names);
    for (size_t i = 0; i < files.size(); ++i)
      preds.add(files[i], predicted[i], truth.empty() ? std::vector<float>{} : truth[i]);

    const std::string data = a->format == "json" ? preds.json() + "\n" : preds.csv();
    if (!a->output.empty()) write_file_atomic(a->output, data);
    if (a->output.empty()) {
      std::fputs(data.c_str(), stdout);
      std::fflush(stdout);
      std::fputs(preds.report().c_str(), stderr);
    } else if (is_standard_output(a->output)) {
      std::fputs(preds.report().c_str(), stderr);
    } else {
      std::fputs(preds.report().c_str(), stdout);
    }
    return 0;
  };
}

}  // namespace dlt::app
