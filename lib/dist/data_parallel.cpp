// Data-parallel aggregation of gradients (whole or in buckets during backward), batch-norm
// statistics and states, and progress numbers.
#include "dist/data_parallel.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "net/network.h"
#include "util/check.h"
#include "util/error.h"
#include "util/log.h"

namespace dlt {

GlobalShare global_share(Communicator& comm, int64_t images, int64_t known_global) {
  GlobalShare s;
  s.images = images;
  if (comm.size() == 1) return s;
  if (known_global > 0) {
    s.images = known_global;
  } else {
    double n = static_cast<double>(images);
    comm.all_reduce_sum(&n, 1);
    s.images = static_cast<int64_t>(n + 0.5);
  }
  s.weight = s.images > 0 ? static_cast<double>(images) / static_cast<double>(s.images) : 0.0;
  return s;
}

int64_t gradient_bucket_elements(const std::string& comm_kind, double mb) {
  if (!(mb > 0)) mb = comm_kind == "nccl" ? kNcclBucketMB : kBucketMB;
  return std::max<int64_t>(1, static_cast<int64_t>(mb * 1024 * 1024 / 4));
}

GradientBuckets::GradientBuckets(Communicator& comm, Tensor& flat_grads, int64_t bucket_elements, bool timing)
    : comm_(comm), timing_(timing) {
  if (comm.size() == 1) return;
  const int64_t b = bucket_elements > 0 ? bucket_elements : gradient_bucket_elements(comm.kind());
  const int64_t total = flat_grads.numel();
  for (int64_t end = total; end > 0;) {
    // A remainder under half a bucket joins the bucket before it.
    int64_t start = end - b < b / 2 ? 0 : end - b;
    buckets_.push_back(flat_grads.view(Shape{end - start}, start));
    starts_.push_back(start);
    end = start;
  }
}

GradientBuckets::~GradientBuckets() {
  if (timing_ && iterations_ > 0)
    log::warn(
        "gradient buckets: {} of about {:.2f} MB; per iteration {:.2f} ms forward + backward, {:.2f} ms "
        "waiting for the all-reduce after backward ({} iterations)",
        buckets_.size(), static_cast<double>(buckets_.front().numel()) * 4 / (1024 * 1024),
        compute_ * 1e3 / static_cast<double>(iterations_), exposed_ * 1e3 / static_cast<double>(iterations_),
        iterations_);
}

void GradientBuckets::begin(double weight) {
  weight_ = weight;
  next_ = 0;
  if (timing_) began_ = std::chrono::steady_clock::now();
}

void GradientBuckets::ready_from(int64_t offset) {
  if (timing_ && offset == 0 && next_ < buckets_.size()) backward_done_ = std::chrono::steady_clock::now();
  for (; next_ < buckets_.size() && starts_[next_] >= offset; ++next_) {
    Tensor& t = buckets_[next_];
    backend_for(t.device()).scale(t, static_cast<float>(weight_));
    comm_.all_reduce_sum_async(t);
  }
}

void GradientBuckets::finish() {
  if (buckets_.empty()) return;
  ready_from(0);
  comm_.wait_all();
  if (!timing_) return;
  auto now = std::chrono::steady_clock::now();
  compute_ += std::chrono::duration<double>(backward_done_ - began_).count();
  exposed_ += std::chrono::duration<double>(now - backward_done_).count();
  ++iterations_;
}

GlobalTotals all_reduce_totals(Communicator& comm, int64_t images, double mean_loss, double correct, double counted) {
  double n = static_cast<double>(images);
  double v[4] = {n, images > 0 ? mean_loss * n : 0.0, correct, counted < 0 ? n : counted};
  comm.all_reduce_sum(v, 4);
  GlobalTotals t;
  if (comm.size() == 1) {  // exactly the single-process numbers
    t.images = n;
    t.loss = mean_loss;
    t.correct = v[2];
    t.counted = v[3];
    return t;
  }
  t.images = v[0];
  t.loss = v[0] > 0 ? v[1] / v[0] : 0.0;
  t.correct = v[2];
  t.counted = v[3];
  t.weight = v[0] > 0 ? n / v[0] : 0.0;
  return t;
}

std::string broadcast_from_rank0(Communicator& comm, const std::string& bytes, bool failed, Device device,
                                 const std::string& what) {
  const bool root = comm.rank() == 0;
  double head[2] = {root && !failed ? static_cast<double>(bytes.size()) : 0.0, root && failed ? 1.0 : 0.0};
  comm.all_reduce_sum(head, 2);
  if (head[1] != 0) {
    if (root) return {};
    throw CommError("rank " + std::to_string(comm.rank()) + " of " + std::to_string(comm.size()) +
                    ": rank 0 could not " + what + " (its own error says why)");
  }
  const auto size = static_cast<size_t>(head[0]);
  if (size == 0) return {};
  Tensor host(Shape{static_cast<int64_t>((size + sizeof(float) - 1) / sizeof(float))});
  if (root) {
    std::memset(host.data(), 0, static_cast<size_t>(host.numel()) * sizeof(float));
    std::memcpy(host.data(), bytes.data(), size);
  }
  // A broadcast copies bits (no arithmetic), so any byte pattern survives the float packing.
  if (device.is_cpu()) {
    comm.broadcast(host, 0);
  } else {
    Tensor on_device = host.to(device);
    comm.broadcast(on_device, 0);
    host = on_device.to(Device::cpu());
  }
  return std::string(reinterpret_cast<const char*>(host.data()), size);
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
    if (net.layer(i).joins_collectives() && st.size() == 2 && st[0].name == "TrainedMean" &&
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
