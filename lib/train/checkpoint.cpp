#include "train/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "dist/data_parallel.h"
#include "util/error.h"
#include "util/files.h"
#include "util/flat_json.h"

namespace dlt {

namespace {

const char* kSolver = "__solver__";
const char* kLog = "__log__";

std::string position_json(const TrainPosition& p) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"kind\":\"checkpoint\",\"epoch\":%lld,\"batch_in_epoch\":%lld,\"iteration\":%lld,\"elapsed\":%.17g,"
                "\"best_val_loss\":%.17g,\"patience_count\":%lld}",
                static_cast<long long>(p.epoch), static_cast<long long>(p.batch_in_epoch),
                static_cast<long long>(p.iteration), p.elapsed, p.best_val_loss,
                static_cast<long long>(p.patience_count));
  return buf;
}

TrainPosition position_of(const FlatJson& meta) {
  TrainPosition p;
  p.epoch = static_cast<int64_t>(json_number_or(meta, "epoch", 0));
  p.batch_in_epoch = static_cast<int64_t>(json_number_or(meta, "batch_in_epoch", 0));
  p.iteration = static_cast<int64_t>(json_number_or(meta, "iteration", 0));
  p.elapsed = json_number_or(meta, "elapsed", 0);
  p.best_val_loss = json_number_or(meta, "best_val_loss", 1e300);
  p.patience_count = static_cast<int64_t>(json_number_or(meta, "patience_count", 0));
  return p;
}

}  // namespace

void save_checkpoint(const std::string& path, Network& net, Optimizer& opt, const TrainPosition& pos,
                     const IterationLog& log, const std::string& training_yaml) {
  ModelData m = net.to_model_data();
  m.training_yaml = training_yaml;
  m.metadata_json = position_json(pos);
  for (const auto& slot : opt.state()) {
    Tensor host = slot.tensor->to(Device::cpu());
    NamedTensor nt{kSolver, slot.name, host.shape(), std::vector<float>(host.data(), host.data() + host.numel())};
    m.states.push_back(std::move(nt));
  }
  NamedTensor steps{kSolver, "steps", Shape{1}, {static_cast<float>(opt.steps())}};
  m.states.push_back(steps);
  const auto& recs = log.records();
  NamedTensor lt{kLog, "records", Shape{static_cast<int64_t>(recs.size()), 8}, {}};
  for (const auto& r : recs) {
    for (double v : {static_cast<double>(r.epoch), static_cast<double>(r.iteration), r.seconds, r.minibatch_accuracy,
                     r.minibatch_loss, r.validation_accuracy, r.validation_loss, r.learn_rate})
      lt.data.push_back(static_cast<float>(v));
  }
  m.states.push_back(std::move(lt));
  // Each validation metric as a column of its own, "metric:<name>" (NaN where it has no value).
  std::vector<std::string> names;
  for (const auto& r : recs)
    for (const auto& [name, v] : r.validation_metrics)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  for (const auto& name : names) {
    NamedTensor mt{kLog, "metric:" + name, Shape{static_cast<int64_t>(recs.size())}, {}};
    for (const auto& r : recs) mt.data.push_back(static_cast<float>(validation_metric(r, name)));
    m.states.push_back(std::move(mt));
  }
  save_model(path, m);
}

TrainPosition load_checkpoint(const std::string& path, Network& net, Optimizer& opt, IterationLog& log) {
  ModelData m = load_model(path);
  FlatJson meta = parse_flat_json(m.metadata_json.empty() ? "{}" : m.metadata_json, path + " metadata");
  if (json_string_or(meta, "kind", "") != "checkpoint")
    throw ModelError(
        path + ": not a training checkpoint (a final model.bin cannot be resumed; use a file from CheckpointPath)");
  if (m.classes != net.classes())
    throw ModelError(path + ": the checkpoint's classes differ from the training data's classes");
  net.load_weights(m);
  std::map<std::string, const NamedTensor*> solver;
  const NamedTensor* records = nullptr;
  std::vector<const NamedTensor*> metrics;  // "metric:<name>", one value per record
  for (const auto& nt : m.states) {
    if (nt.layer == kSolver) solver[nt.name] = &nt;
    if (nt.layer == kLog && nt.name == "records") records = &nt;
    if (nt.layer == kLog && nt.name.rfind("metric:", 0) == 0) metrics.push_back(&nt);
  }
  for (const auto& slot : opt.state()) {
    auto it = solver.find(slot.name);
    if (it == solver.end() || it->second->shape != slot.tensor->shape())
      throw ModelError(path + ": the solver state does not match this network and Solver (was the config changed?)");
    Tensor h(slot.tensor->shape());
    std::copy(it->second->data.begin(), it->second->data.end(), h.data());
    slot.tensor->copy_from(h);
  }
  if (solver.count("steps")) opt.set_steps(static_cast<int64_t>(solver["steps"]->data.at(0)));
  std::vector<IterationRecord> recs;
  if (records && records->shape.rank() == 2 && records->shape[1] == 8) {
    for (int64_t r = 0; r < records->shape[0]; ++r) {
      const float* v = records->data.data() + r * 8;
      IterationRecord rec;
      rec.epoch = static_cast<int64_t>(v[0]);
      rec.iteration = static_cast<int64_t>(v[1]);
      rec.seconds = v[2];
      rec.minibatch_accuracy = v[3];
      rec.minibatch_loss = v[4];
      rec.validation_accuracy = v[5];
      rec.validation_loss = v[6];
      rec.learn_rate = v[7];
      for (const NamedTensor* mt : metrics)
        if (static_cast<int64_t>(mt->data.size()) == records->shape[0] && !std::isnan(mt->data[size_t(r)]))
          rec.validation_metrics.emplace_back(mt->name.substr(7), mt->data[size_t(r)]);
      recs.push_back(rec);
    }
  }
  log.set(std::move(recs));
  return position_of(meta);
}

TrainPosition read_checkpoint_position(const std::string& path) {
  ModelData m = load_model(path);
  FlatJson meta = parse_flat_json(m.metadata_json.empty() ? "{}" : m.metadata_json, path + " metadata");
  if (json_string_or(meta, "kind", "") != "checkpoint")
    throw ModelError(
        path + ": not a training checkpoint (a final model.bin cannot be resumed; use a file from CheckpointPath)");
  return position_of(meta);
}

TrainPosition load_checkpoint_from_rank0(Communicator& comm, Device device, const std::string& path, Network& net,
                                         Optimizer& opt, IterationLog& log) {
  if (comm.size() <= 1) return load_checkpoint(path, net, opt, log);
  std::string bytes;
  bool failed = false;
  if (comm.rank() == 0) {
    try {
      bytes = read_file(path);
    } catch (const Error&) {
      failed = true;  // load_checkpoint below reports it; the others learn it from the broadcast
    }
  }
  bytes = broadcast_from_rank0(comm, bytes, failed, device, "read the checkpoint " + path);
  if (comm.rank() == 0) return load_checkpoint(path, net, opt, log);
  // The other ranks load a private copy, removed again.
  const char* tmp = std::getenv("TMPDIR");
  std::string copy = std::string(tmp && *tmp ? tmp : "/tmp") + "/dltrain-resume-XXXXXX";
  const int fd = mkstemp(copy.data());
  if (fd < 0)
    throw Error("rank " + std::to_string(comm.rank()) + ": cannot make a temporary copy of the checkpoint in " +
                (tmp && *tmp ? tmp : "/tmp") + " (set TMPDIR to a writable directory)");
  ::close(fd);
  struct Remove {
    std::string p;
    ~Remove() { std::remove(p.c_str()); }
  } remove_copy{copy};
  write_file_atomic(copy, bytes);
  try {
    return load_checkpoint(copy, net, opt, log);
  } catch (const ModelError& e) {  // name rank 0's file, not the copy
    std::string m = e.what();
    for (size_t at = m.find(copy); at != std::string::npos; at = m.find(copy, at)) m.replace(at, copy.size(), path);
    throw ModelError(m + " (rank 0's file, sent to rank " + std::to_string(comm.rank()) + ")");
  }
}

}  // namespace dlt
