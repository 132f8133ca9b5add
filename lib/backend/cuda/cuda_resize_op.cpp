// The CUDA resize (backend/resize_op.h): its kernels in cuda_resize_kernels.cu, on the compute
// stream, reading the descriptor's taps from a table uploaded when the op is made.
#include <cuda_runtime.h>

#include <memory>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/resize_op.h"

namespace dlt::cuda {

// cuda_resize_kernels.cu: table holds (i0, i1, w1) per output row, then per output column; with
// cubic (i0..i3, w0..w3).
void resize_forward(const float* x, float* y, const float* table, int64_t n, int64_t h, int64_t w, int64_t c,
                    int64_t oh, int64_t ow, bool cubic, cudaStream_t stream);
void resize_backward(const float* dy, float* dx, const float* table, int64_t n, int64_t h, int64_t w, int64_t c,
                     int64_t oh, int64_t ow, bool cubic, cudaStream_t stream);

namespace {

class CudaResizeOp final : public ResizeOp {
 public:
  CudaResizeOp(const ResizeDesc& d, CudaContext& ctx) : ResizeOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {
    if (d.bicubic) {
      Tensor host(Shape{8 * (d.oh + d.ow)});
      float* t = host.data();
      for (const auto& taps : {d.row_cubic_taps(), d.col_cubic_taps()})
        for (const ResizeDesc::CubicTap& p : taps) {
          for (int k = 0; k < 4; ++k) *t++ = static_cast<float>(p.i[k]);
          for (int k = 0; k < 4; ++k) *t++ = p.w[k];
        }
      table_ = host.to(Device::cuda(ctx.device));
      return;
    }
    Tensor host(Shape{3 * (d.oh + d.ow)});
    float* t = host.data();
    for (const auto& taps : {d.row_taps(), d.col_taps()})
      for (const ResizeDesc::Tap& p : taps) {
        *t++ = static_cast<float>(p.i0);
        *t++ = static_cast<float>(p.i1);
        *t++ = p.w1;  // 0 for nearest
      }
    table_ = host.to(Device::cuda(ctx.device));
  }

 private:
  void do_forward(const Tensor& x, Tensor& y) override {
    resize_forward(x.data(), y.data(), table_.data(), d_.n, d_.h, d_.w, d_.c, d_.oh, d_.ow, d_.bicubic, ctx_.stream);
  }
  void do_backward(const Tensor& dy, Tensor& dx) override {
    resize_backward(dy.data(), dx.data(), table_.data(), d_.n, d_.h, d_.w, d_.c, d_.oh, d_.ow, d_.bicubic, ctx_.stream);
  }

  ResizeDesc d_;
  CudaContext& ctx_;
  Tensor table_;
};

std::unique_ptr<ResizeOp> make(Backend& b, const ResizeDesc& d) {
  cuda_backend_of(b).enter();
  return std::make_unique<CudaResizeOp>(d, cuda_context(b));
}

}  // namespace

DLT_REGISTER_OP(ResizeDesc, DeviceType::kCuda, "own", 0, make, nullptr);

}  // namespace dlt::cuda
