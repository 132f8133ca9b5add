#include "train/checkpoint.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "util/error.h"
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
                static_cast<long long>(p.iteration), p.elapsed, p.best_val_loss, static_cast<long long>(p.patience_count));
  return buf;
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
  save_model(path, m);
}

TrainPosition load_checkpoint(const std::string& path, Network& net, Optimizer& opt, IterationLog& log) {
  ModelData m = load_model(path);
  FlatJson meta = parse_flat_json(m.metadata_json.empty() ? "{}" : m.metadata_json, path + " metadata");
  if (json_string_or(meta, "kind", "") != "checkpoint")
    throw ModelError(path + ": not a training checkpoint (a final model.bin cannot be resumed; use a file from CheckpointPath)");
  if (m.classes != net.classes())
    throw ModelError(path + ": the checkpoint's classes differ from the training data's classes");
  net.load_weights(m);
  std::map<std::string, const NamedTensor*> solver;
  const NamedTensor* records = nullptr;
  for (const auto& nt : m.states) {
    if (nt.layer == kSolver) solver[nt.name] = &nt;
    if (nt.layer == kLog && nt.name == "records") records = &nt;
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
      recs.push_back(rec);
    }
  }
  log.set(std::move(recs));
  TrainPosition p;
  p.epoch = static_cast<int64_t>(json_number_or(meta, "epoch", 0));
  p.batch_in_epoch = static_cast<int64_t>(json_number_or(meta, "batch_in_epoch", 0));
  p.iteration = static_cast<int64_t>(json_number_or(meta, "iteration", 0));
  p.elapsed = json_number_or(meta, "elapsed", 0);
  p.best_val_loss = json_number_or(meta, "best_val_loss", 1e300);
  p.patience_count = static_cast<int64_t>(json_number_or(meta, "patience_count", 0));
  return p;
}

}  // namespace dlt
