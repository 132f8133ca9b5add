// dltrain report DIR... [--output pareto.png] [--csv FILE] [--json] [--metric M]: reads the
// summary.json of training runs (a run folder, or a sweep folder holding one run per subfolder)
// and prints accuracy against memory footprint with the Pareto front marked, as the CIFAR-10 sweep's
// Figure 4 (docs/sweeps.md); draws the scatter with write_pareto_png. It reads results; it never trains.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "train/draw/pareto.h"
#include "train/run_state.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/files.h"
#include "util/flat_json.h"
#include "util/json.h"

namespace dlt::app {

namespace {

namespace fs = std::filesystem;

struct RunRow {
  std::string name, dir, status;
  double validation_accuracy = NAN, minibatch_accuracy = NAN;
  double memory_bytes = NAN, total_learnables = NAN, wall_seconds = NAN, images_per_second = NAN;
  double accuracy = NAN;  // the metric the report uses (regression: the RMSE)
  bool on_front = false;
  bool regression = false;  // summary.json's task: the *_accuracy fields hold the RMSE
};

// A run that ended with a model by itself (summary.json's status words: train/run_state.h); an
// interrupted one is listed but not ranked: its numbers are those of a run cut short.
bool finished(const RunRow& r) {
  const auto status = parse_run_status(r.status);
  return status && ended_with_model(*status) && *status != RunStatus::kInterrupted;
}

// A run folder: its summary.json, or the failure files scripts/sweep.sh leaves (exit_code,
// error.txt). Returns false when the folder holds neither.
bool read_run(const fs::path& dir, const std::string& name, RunRow& row) {
  row.name = name;
  row.dir = dir.string();
  fs::path summary = dir / "summary.json";
  if (fs::exists(summary)) {
    try {
      FlatJson j = read_flat_json(summary.string());
      row.status = json_string_or(j, "status", "unknown");
      // Regression runs write validation_rmse (the headline: train/progress.h), the others accuracy.
      row.regression = json_string_or(j, "task", "") == "regression";
      const std::string h = row.regression ? "rmse" : "accuracy";
      row.validation_accuracy = json_number_or(j, "validation_" + h, NAN);
      row.minibatch_accuracy = json_number_or(j, "minibatch_" + h, NAN);
      row.memory_bytes = json_number_or(j, "memory_bytes", NAN);
      row.total_learnables = json_number_or(j, "total_learnables", NAN);
      row.wall_seconds = json_number_or(j, "wall_seconds", NAN);
      row.images_per_second = json_number_or(j, "train_images_per_second", NAN);
    } catch (const DataError& e) {
      std::fprintf(stderr, "dltrain report: warning: %s\n", e.what());
      row.status = "unreadable";
    }
    return true;
  }
  if (fs::exists(dir / "exit_code")) {
    std::string code = read_file((dir / "exit_code").string());
    while (!code.empty() && (code.back() == '\n' || code.back() == ' ')) code.pop_back();
    row.status = "failed (exit " + code + ")";
    return true;
  }
  return false;
}

std::vector<RunRow> collect_runs(const std::vector<std::string>& dirs) {
  std::vector<RunRow> rows;
  for (std::string d : dirs) {
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    fs::path p(d);
    if (!fs::is_directory(p))
      throw UsageError("report: '" + d + "' is not a folder (give run folders or a sweep folder)");
    RunRow row;
    if (read_run(p, d, row)) {
      rows.push_back(row);
      continue;
    }
    std::vector<fs::path> subs;
    for (const auto& e : fs::directory_iterator(p))
      if (e.is_directory()) subs.push_back(e.path());
    std::sort(subs.begin(), subs.end());
    size_t before = rows.size();
    for (const auto& s : subs) {
      RunRow r;
      if (read_run(s, s.filename().string(), r)) rows.push_back(r);
    }
    if (rows.size() == before)
      throw UsageError("report: '" + d + "' holds no summary.json, nor do its subfolders (train into it with " +
                       "dltrain train --output-dir, or run scripts/sweep.sh --out " + d + ")");
  }
  return rows;
}

std::string num(double v, const char* fmt) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

void write_csv(const std::string& path, const std::vector<RunRow>& rows, bool rmse) {
  const std::string h = rmse ? "rmse" : "accuracy";
  std::string out = "run,dir,status,validation_" + h + ",minibatch_" + h +
                    ",memory_bytes,total_learnables,wall_seconds,train_images_per_second,pareto\n";
  for (const auto& r : rows) {
    out += csv_field(r.name) + "," + csv_field(r.dir) + "," + csv_field(r.status) + ",";
    out += num(r.validation_accuracy, "%.4f") + "," + num(r.minibatch_accuracy, "%.4f") + ",";
    out += num(r.memory_bytes, "%.0f") + "," + num(r.total_learnables, "%.0f") + ",";
    out += num(r.wall_seconds, "%.3f") + "," + num(r.images_per_second, "%.2f") + ",";
    out += r.on_front ? "1\n" : "0\n";
  }
  write_file_atomic(path, out);
}

void json_number(JsonWriter& j, const std::string& key, double v) {
  j.key(key);
  if (std::isfinite(v))
    j.value(v);
  else
    j.null();
}

void print_json(const std::vector<RunRow>& rows, const std::vector<size_t>& front_rows, const std::string& metric,
                const std::string& plot, bool rmse) {
  const std::string h = rmse ? "rmse" : "accuracy";
  JsonWriter j;
  j.begin_object().field("metric", metric).key("runs").begin_array();
  for (const auto& r : rows) {
    j.begin_object().field("run", r.name).field("dir", r.dir).field("status", r.status);
    json_number(j, h, r.accuracy);
    json_number(j, "validation_" + h, r.validation_accuracy);
    json_number(j, "minibatch_" + h, r.minibatch_accuracy);
    json_number(j, "memory_bytes", r.memory_bytes);
    json_number(j, "total_learnables", r.total_learnables);
    json_number(j, "wall_seconds", r.wall_seconds);
    json_number(j, "train_images_per_second", r.images_per_second);
    j.field("pareto", r.on_front).end_object();
  }
  j.end_array().key("front").begin_array();
  for (size_t i : front_rows) j.value(rows[i].name);
  j.end_array().field("plot", plot).end_object();
  std::printf("%s\n", j.str().c_str());
}

void print_table(const std::vector<RunRow>& rows, const std::vector<size_t>& front_rows, const std::string& metric,
                 bool rmse) {
  size_t w = 3;
  for (const auto& r : rows) w = std::max(w, r.name.size());
  if (rmse)
    std::printf(
        "%zu runs; rmse = %s (lower is better); * = on the Pareto front (no other run is both smaller "
        "and at least as accurate)\n\n",
        rows.size(), metric.c_str());
  else
    std::printf(
        "%zu runs; accuracy = %s (%%); * = on the Pareto front (no other run is both smaller "
        "and at least as accurate)\n\n",
        rows.size(), metric.c_str());
  std::printf("  %-*s %10s %14s %12s  %s\n", static_cast<int>(w), "run", rmse ? "rmse" : "accuracy", "memory bytes",
              "learnables", "status");
  for (const auto& r : rows)
    std::printf("%c %-*s %10s %14s %12s  %s\n", r.on_front ? '*' : ' ', static_cast<int>(w), r.name.c_str(),
                num(r.accuracy, "%.2f").c_str(), num(r.memory_bytes, "%.0f").c_str(),
                num(r.total_learnables, "%.0f").c_str(), r.status.c_str());
  std::printf("\nPareto front, smallest first:\n");
  for (size_t i : front_rows)
    std::printf("  %-*s %10s %14s\n", static_cast<int>(w), rows[i].name.c_str(), num(rows[i].accuracy, "%.2f").c_str(),
                num(rows[i].memory_bytes, "%.0f").c_str());
}

}  // namespace

Runner add_report(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "report",
      "Draw accuracy against memory footprint for trained runs or a sweep's folder, the Pareto front marked (a "
      "PNG plot and a table)");
  struct Args {
    std::vector<std::string> dirs;
    std::string output, csv, metric = "auto";
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("dirs", a->dirs, "Run folders (with summary.json) or sweep folders (one run per subfolder)")
      ->required();
  cmd->add_option("--output,-o", a->output,
                  "The plot (PNG); default DIR/pareto.png for one folder, ./pareto.png for several");
  cmd->add_option("--csv", a->csv, "Also write the table as CSV to this file");
  cmd->add_flag("--json", a->json, "Print JSON instead of a table");
  cmd->add_option("--metric", a->metric,
                  "Accuracy to compare: validation, minibatch, or auto (validation when any run has it)")
      ->check(CLI::IsMember({"auto", "validation", "minibatch"}))
      ->capture_default_str();
  return [a]() {
    std::vector<RunRow> rows = collect_runs(a->dirs);
    // Regression runs are ranked by RMSE (lower is better); a mix with classification runs has
    // no common axis.
    size_t regression = 0;
    for (const auto& r : rows) regression += r.regression ? 1 : 0;
    if (regression > 0 && regression < rows.size())
      throw UsageError("report: " + std::to_string(regression) + " of the " + std::to_string(rows.size()) +
                       " runs are regression runs (ranked by RMSE) and the others classify (ranked by accuracy); "
                       "report them apart");
    const bool rmse = regression > 0;
    std::string metric = a->metric;
    if (metric == "auto") {
      metric = "minibatch";
      for (const auto& r : rows)
        if (finished(r) && std::isfinite(r.validation_accuracy)) metric = "validation";
    }
    std::vector<ParetoPoint> pts;
    std::vector<size_t> pt_rows;  // pts[k] is rows[pt_rows[k]]
    for (size_t i = 0; i < rows.size(); ++i) {
      RunRow& r = rows[i];
      r.accuracy = metric == "validation" ? r.validation_accuracy : r.minibatch_accuracy;
      if (!finished(r) || !std::isfinite(r.accuracy) || !std::isfinite(r.memory_bytes)) continue;
      pts.push_back({r.name, r.memory_bytes, r.accuracy});
      pt_rows.push_back(i);
    }
    std::vector<size_t> front_rows;
    for (size_t k : pareto_front(pts, rmse)) {
      rows[pt_rows[k]].on_front = true;
      front_rows.push_back(pt_rows[k]);
    }
    std::string plot = a->output;
    if (plot.empty()) plot = a->dirs.size() == 1 ? (fs::path(a->dirs[0]) / "pareto.png").string() : "pareto.png";
    if (pts.empty()) {
      std::fprintf(stderr, "dltrain report: no finished run with a %s accuracy: no plot written\n", metric.c_str());
      plot.clear();
    } else {
      if (rmse)
        write_pareto_png(plot, pts, "RMSE against memory footprint", "RMSE (lower is better)", true);
      else
        write_pareto_png(plot, pts, "Accuracy against memory footprint");
    }
    if (!a->csv.empty()) write_csv(a->csv, rows, rmse);
    metric += rmse ? "_rmse" : "_accuracy";
    if (a->json) {
      print_json(rows, front_rows, metric, plot, rmse);
    } else {
      print_table(rows, front_rows, metric, rmse);
      if (!plot.empty()) std::printf("\nwrote %s\n", plot.c_str());
      if (!a->csv.empty()) std::printf("wrote %s\n", a->csv.c_str());
    }
    return 0;
  };
}

}  // namespace dlt::app
