// Data-parallel aggregation of gradients, batch-norm states and progress numbers.
#include "dist/data_parallel.h"

#include <vector>

#include "backend/backend.h"
#include "net/network.h"

namespace dlt {

GlobalTotals all_reduce_totals(Communicator& comm, int64_t images, double mean_loss, int64_t correct) {
  double n = static_cast<double>(images);
  double v[3] = {n, images > 0 ? mean_loss * n : 0.0, static_cast<double>(correct)};
  comm.all_reduce_sum(v, 3);
  GlobalTotals t;
  if (comm.size() == 1) {  // exactly the single-process numbers
    t.images = n;
    t.loss = mean_loss;
    t.correct = v[2];
    return t;
  }
  t.images = v[0];
  t.loss = v[0] > 0 ? v[1] / v[0] : 0.0;
  t.correct = v[2];
  t.weight = v[0] > 0 ? n / v[0] : 0.0;
  return t;
}

void all_reduce_gradients(Communicator& comm, Tensor& flat_grads, double weight) {
  if (comm.size() == 1) return;
  backend_for(flat_grads.device()).scale(flat_grads, static_cast<float>(weight));
  comm.all_reduce_sum(flat_grads);
}

namespace {

// The (TrainedMean, TrainedVariance) state pairs of every batch-norm layer.
std::vector<std::pair<Tensor*, Tensor*>> batch_norm_states(Network& net) {
  std::vector<std::pair<Tensor*, Tensor*>> out;
  for (size_t i = 0; i < net.size(); ++i) {
    auto& st = net.layer(i).states();
    if (net.layer(i).type() == "batchNormalization" && st.size() == 2 && st[0].name == "TrainedMean" &&
        st[1].name == "TrainedVariance")
      out.emplace_back(&st[0].value, &st[1].value);
  }
  return out;
}

}  // namespace

void aggregate_batch_norm_states(Communicator& comm, Network& net, double weight) {
  if (comm.size() == 1) return;
  auto states = batch_norm_states(net);
  if (states.empty()) return;
  std::vector<Tensor> means, vars;  // host copies
  size_t total = 0;
  for (auto& [m, v] : states) {
    means.push_back(m->to(Device::cpu()));
    vars.push_back(v->to(Device::cpu()));
    total += static_cast<size_t>(m->numel());
  }
  std::vector<double> buf(total);
  size_t k = 0;
  for (auto& m : means)
    for (int64_t j = 0; j < m.numel(); ++j) buf[k++] = weight * m.data()[j];
  comm.all_reduce_sum(buf.data(), static_cast<int64_t>(total));
  std::vector<double> mean = buf;
  k = 0;
  for (size_t s = 0; s < vars.size(); ++s)
    for (int64_t j = 0; j < vars[s].numel(); ++j, ++k) {
      double d = means[s].data()[j] - mean[k];
      buf[k] = weight * (vars[s].data()[j] + d * d);
    }
  comm.all_reduce_sum(buf.data(), static_cast<int64_t>(total));
  k = 0;
  for (size_t s = 0; s < states.size(); ++s) {
    for (int64_t j = 0; j < means[s].numel(); ++j, ++k) {
      means[s].data()[j] = static_cast<float>(mean[k]);
      vars[s].data()[j] = static_cast<float>(buf[k]);
    }
    states[s].first->copy_from(means[s]);
    states[s].second->copy_from(vars[s]);
  }
}

void broadcast_model(Communicator& comm, Network& net) {
  if (comm.size() == 1) return;
  const Device host = Device::cpu();
  auto bcast = [&](Tensor& t) {
    if (!t.defined() || t.numel() == 0) return;
    if (t.device().is_cpu() || comm.kind() == "nccl") {
      comm.broadcast(t, 0);
    } else {
      Tensor h = t.to(host);
      comm.broadcast(h, 0);
      t.copy_from(h);
    }
  };
  bcast(net.flat_values());
  for (size_t i = 0; i < net.size(); ++i)
    for (auto& s : net.layer(i).states()) bcast(s.value);
}

}  // namespace dlt
