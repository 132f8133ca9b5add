// The CPU's token data movement (backend/token_ops.h): plain loops, parallel over rows or
// columns (no arithmetic beyond one addition per value).
#include <algorithm>
#include <cstring>
#include <memory>

#include "backend/backend.h"
#include "backend/token_ops.h"

namespace dlt::cpu {
namespace {

class CpuBatchBroadcastOp final : public BatchBroadcastOp {
 public:
  explicit CpuBatchBroadcastOp(const BatchBroadcastDesc& d) : BatchBroadcastOp(d, Device::cpu()), d_(d) {}

 private:
  void do_add(const Tensor* x, const Tensor& b, Tensor& y) override {
    const float* bp = b.data();
    const float* xp = x ? x->data() : nullptr;
    float* yp = y.data();
    const int64_t len = d_.length;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < d_.rows; ++r) {
      float* out = yp + r * len;
      if (xp) {
        const float* in = xp + r * len;
        for (int64_t i = 0; i < len; ++i) out[i] = in[i] + bp[i];
      } else {
        std::memcpy(out, bp, static_cast<size_t>(len) * sizeof(float));
      }
    }
  }
  // Each value of db sums its column in row order (the same order for every thread count).
  void do_sum(const Tensor& dy, Tensor& db) override {
    const float* g = dy.data();
    float* out = db.data();
    const int64_t len = d_.length, rows = d_.rows;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < len; ++i) {
      float s = 0.f;
      for (int64_t r = 0; r < rows; ++r) s += g[r * len + i];
      out[i] = s;
    }
  }

  BatchBroadcastDesc d_;
};

class CpuSpatialTransposeOp final : public SpatialTransposeOp {
 public:
  explicit CpuSpatialTransposeOp(const SpatialTransposeDesc& d) : SpatialTransposeOp(d, Device::cpu()), d_(d) {}

 private:
  // Forward reads (h, w) and writes (w, h); back reads (w, h) and writes (h, w): pixel (i, j)
  // of the (h, w) side is pixel (j, i) of the other.
  void do_run(const Tensor& from, Tensor& to, bool back) override {
    const float* src = from.data();
    float* dst = to.data();
    const int64_t h = d_.h, w = d_.w, c = d_.c;
    const size_t bytes = static_cast<size_t>(c) * sizeof(float);
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < d_.n; ++n)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j) {
          const int64_t hw = ((n * h + i) * w + j) * c, wh = ((n * w + j) * h + i) * c;
          if (back)
            std::memcpy(dst + hw, src + wh, bytes);
          else
            std::memcpy(dst + wh, src + hw, bytes);
        }
  }

  SpatialTransposeDesc d_;
};

class CpuRowGatherOp final : public RowGatherOp {
 public:
  explicit CpuRowGatherOp(const RowGatherDesc& d) : RowGatherOp(d, Device::cpu()), d_(d) { inverse(starts_, sources_); }

 private:
  void do_forward(const Tensor& x, Tensor& y) override {
    const float* src = x.data();
    float* dst = y.data();
    const int64_t c = d_.cols;
    const size_t bytes = static_cast<size_t>(c) * sizeof(float);
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < d_.n; ++b)
      for (int64_t r = 0; r < d_.rows_out; ++r) {
        const int64_t i = d_.index[static_cast<size_t>(r)];
        float* out = dst + (b * d_.rows_out + r) * c;
        if (i >= 0)
          std::memcpy(out, src + (b * d_.rows_in + i) * c, bytes);
        else
          std::memset(out, 0, bytes);
      }
  }
  void do_backward(const Tensor& dy, Tensor& dx) override {
    const float* g = dy.data();
    float* out = dx.data();
    const int64_t c = d_.cols;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < d_.n; ++b)
      for (int64_t s = 0; s < d_.rows_in; ++s) {
        float* o = out + (b * d_.rows_in + s) * c;
        std::fill(o, o + c, 0.f);
        for (int64_t k = starts_[static_cast<size_t>(s)]; k < starts_[static_cast<size_t>(s + 1)]; ++k) {
          const float* in = g + (b * d_.rows_out + sources_[static_cast<size_t>(k)]) * c;
          for (int64_t j = 0; j < c; ++j) o[j] += in[j];
        }
      }
  }

  RowGatherDesc d_;
  std::vector<int64_t> starts_, sources_;
};

std::unique_ptr<BatchBroadcastOp> make_broadcast(Backend&, const BatchBroadcastDesc& d) {
  return std::make_unique<CpuBatchBroadcastOp>(d);
}
std::unique_ptr<SpatialTransposeOp> make_transpose(Backend&, const SpatialTransposeDesc& d) {
  return std::make_unique<CpuSpatialTransposeOp>(d);
}
std::unique_ptr<RowGatherOp> make_gather(Backend&, const RowGatherDesc& d) {
  return std::make_unique<CpuRowGatherOp>(d);
}

}  // namespace

DLT_REGISTER_OP(BatchBroadcastDesc, DeviceType::kCpu, "own", 0, make_broadcast, nullptr);
DLT_REGISTER_OP(RowGatherDesc, DeviceType::kCpu, "own", 0, make_gather, nullptr);
DLT_REGISTER_OP(SpatialTransposeDesc, DeviceType::kCpu, "own", 0, make_transpose, nullptr);

}  // namespace dlt::cpu
