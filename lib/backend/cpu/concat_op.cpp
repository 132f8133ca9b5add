// Channel concatenation of NHWC tensors and its backward split: per-pixel contiguous copies
// of each input's channel run, parallel over pixels (memory-bound, no oneDNN needed).
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"

namespace dlt::cpu {
namespace {

class CpuConcatOp final : public ConcatOp {
 public:
  CpuConcatOp(int64_t n, int64_t h, int64_t w, const std::vector<int64_t>& channels)
      : ConcatOp(ConcatDesc{n, h, w, channels}, Device::cpu()), pixels_(n * h * w), channels_(channels) {
    for (int64_t c : channels) {
      offsets_.push_back(total_);
      total_ += c;
    }
  }

 protected:
  void do_forward(const std::vector<const Tensor*>& xs, Tensor& y) override {
    float* out = y.data();
    const int64_t inputs = static_cast<int64_t>(xs.size());
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < pixels_; ++p) {
      for (int64_t i = 0; i < inputs; ++i) {
        const int64_t c = channels_[i];
        std::memcpy(out + p * total_ + offsets_[i], xs[i]->data() + p * c, c * sizeof(float));
      }
    }
  }

  void do_backward(const Tensor& dy, const std::vector<Tensor*>& dxs) override {
    const float* in = dy.data();
    const int64_t inputs = static_cast<int64_t>(dxs.size());
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < pixels_; ++p) {
      for (int64_t i = 0; i < inputs; ++i) {
        if (!dxs[i]) continue;
        const int64_t c = channels_[i];
        std::memcpy(dxs[i]->data() + p * c, in + p * total_ + offsets_[i], c * sizeof(float));
      }
    }
  }

 private:
  int64_t pixels_;
  std::vector<int64_t> channels_;  // per input
  std::vector<int64_t> offsets_;   // first channel of each input in y
  int64_t total_ = 0;
};

}  // namespace

static std::unique_ptr<ConcatOp> make_concat_op(int64_t n, int64_t h, int64_t w, const std::vector<int64_t>& channels) {
  return std::make_unique<CpuConcatOp>(n, h, w, channels);
}

namespace {
std::unique_ptr<ConcatOp> make_registered(Backend&, const ConcatDesc& d) {
  return make_concat_op(d.n, d.h, d.w, d.channels);
}
}  // namespace

DLT_REGISTER_OP(ConcatDesc, DeviceType::kCpu, "own", 0, make_registered, nullptr);

}  // namespace dlt::cpu
