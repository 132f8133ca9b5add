// backend_for() and the Backend defaults: the loss read later (run at once here), Adam's
// bias correction, the batch-norm correction's shape checks.
#include "backend/backend.h"

#include <cmath>

#include "util/error.h"

namespace dlt {

Backend& cpu_backend();            // backend/cpu/cpu_backend.cpp
Backend& cuda_backend(int index);  // backend/cuda or cuda_stub.cpp

namespace {
// The layout of a totals tensor (the CUDA backend's kernel writes the same struct).
struct LossTotals {
  double loss_sum = 0;
  uint64_t correct = 0;
  uint64_t first_bad = UINT64_MAX;
};
static_assert(sizeof(LossTotals) <= Backend::kLossTotalsFloats * sizeof(float));

void check_totals(const Tensor& totals) {
  DLT_CHECK(totals.defined() && totals.numel() >= Backend::kLossTotalsFloats,
            "loss totals: need a tensor of " << Backend::kLossTotalsFloats << " floats");
}
}  // namespace

void Backend::cross_entropy_async(const Tensor& probs, const Tensor& labels, Tensor& dlogits,
                                  Tensor& totals) {
  check_totals(totals);
  int64_t correct = 0;
  LossTotals t;
  t.loss_sum = cross_entropy(probs, labels, dlogits, &correct) * static_cast<double>(labels.numel());
  t.correct = static_cast<uint64_t>(correct);
  copy_bytes(totals.data(), totals.device(), &t, Device::cpu(), sizeof(t));
}

double Backend::read_loss(const Tensor& totals, const Tensor& labels, int64_t* correct) {
  check_totals(totals);
  LossTotals t;
  copy_bytes(&t, Device::cpu(), totals.data(), totals.device(), sizeof(t));
  if (correct) *correct = static_cast<int64_t>(t.correct);
  return labels.numel() > 0 ? t.loss_sum / static_cast<double>(labels.numel()) : 0.0;
}

float Backend::adam_correction(float b, int64_t t) {
  return 1.f / (1.f - static_cast<float>(std::pow(double(b), double(t))));
}

int64_t Backend::dx_correction_positions(const Tensor& x, const Tensor& mean, const Tensor& var,
                                         const Tensor& scale, const Tensor& dshift,
                                         const Tensor& dscale, const Tensor& dx) {
  const int64_t c = mean.numel();
  DLT_CHECK(c > 0 && x.numel() % c == 0 && dx.numel() == x.numel() && var.numel() == c &&
                scale.numel() == c && dshift.numel() == c && dscale.numel() == c,
            "batch_norm_dx_correction: shapes do not agree (" << x.numel() << " elements, " << c
                                                              << " channels)");
  return x.numel() / c;
}

Backend& backend_for(Device device) {
  if (device.is_cpu()) return cpu_backend();
  return cuda_backend(device.index);
}

}  // namespace dlt
