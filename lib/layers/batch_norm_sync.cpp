#include "layers/batch_norm_sync.h"

#include <vector>

#include "backend/backend.h"
#include "util/check.h"

namespace dlt {

void sync_batch_norm_moments_float(Communicator& comm, double weight, Tensor& mean, Tensor& var, Tensor& scratch) {
  DLT_CHECK(var.numel() == mean.numel(),
            "sync_batch_norm_moments: mean has " << mean.numel() << " channels, var " << var.numel());
  Backend& be = backend_for(mean.device());
  const float w = static_cast<float>(weight);
  DLT_CHECK(scratch.numel() == mean.numel(), "sync_batch_norm_moments: scratch of " << scratch.numel() << " floats");
  Tensor& d = scratch;
  be.copy(mean, d);  // this rank's mean
  be.scale(mean, w);
  comm.all_reduce_sum(mean);     // the global mean
  be.axpby(-1.f, mean, 1.f, d);  // d = mean_i - mean
  be.multiply(d, d, d);
  be.axpby(w, d, w, var);  // w (var_i + d^2)
  comm.all_reduce_sum(var);
}

void sync_batch_norm_sums_float(Communicator& comm, double weight, Tensor& a, Tensor& b) {
  DLT_CHECK(b.numel() == a.numel(), "sync_batch_norm_sums: " << a.numel() << " and " << b.numel() << " channels");
  Backend& be = backend_for(a.device());
  be.scale(a, static_cast<float>(weight));
  be.scale(b, static_cast<float>(weight));
  comm.all_reduce_sum(a);
  comm.all_reduce_sum(b);
}

void sync_batch_norm_moments(Communicator& comm, double weight, Tensor& mean, Tensor& var, Tensor& scratch) {
  if (!mean.device().is_cpu()) return sync_batch_norm_moments_float(comm, weight, mean, var, scratch);
  const int64_t c = mean.numel();
  DLT_CHECK(var.numel() == c, "sync_batch_norm_moments: mean has " << c << " channels, var " << var.numel());
  float* m = mean.data();
  float* v = var.data();
  std::vector<double> buf(static_cast<size_t>(2 * c));
  for (int64_t j = 0; j < c; ++j) {
    const double mj = m[j];
    buf[static_cast<size_t>(j)] = weight * mj;
    buf[static_cast<size_t>(c + j)] = weight * (static_cast<double>(v[j]) + mj * mj);
  }
  comm.all_reduce_sum(buf.data(), 2 * c);
  for (int64_t j = 0; j < c; ++j) {
    const double mj = buf[static_cast<size_t>(j)];
    m[j] = static_cast<float>(mj);
    v[j] = static_cast<float>(std::max(0.0, buf[static_cast<size_t>(c + j)] - mj * mj));
  }
}

void sync_batch_norm_sums(Communicator& comm, double weight, Tensor& a, Tensor& b) {
  if (!a.device().is_cpu()) return sync_batch_norm_sums_float(comm, weight, a, b);
  const int64_t c = a.numel();
  DLT_CHECK(b.numel() == c, "sync_batch_norm_sums: " << c << " and " << b.numel() << " channels");
  float* pa = a.data();
  float* pb = b.data();
  std::vector<double> buf(static_cast<size_t>(2 * c));
  for (int64_t j = 0; j < c; ++j) {
    buf[static_cast<size_t>(j)] = weight * pa[j];
    buf[static_cast<size_t>(c + j)] = weight * pb[j];
  }
  comm.all_reduce_sum(buf.data(), 2 * c);
  for (int64_t j = 0; j < c; ++j) {
    pa[j] = static_cast<float>(buf[static_cast<size_t>(j)]);
    pb[j] = static_cast<float>(buf[static_cast<size_t>(c + j)]);
  }
}

}  // namespace dlt
