// Fully connected on cuBLAS: y (N, K) = x (N, in) W^T + b with W (K, in), all row-major;
// optional fused relu (forward only: the caller applies the relu backward to dy).
// FP32 compute (CUBLAS_COMPUTE_32F) unless DLT_ALLOW_TF32=1 allows TF32 tensor cores.
// bf16 (Precision: mixed): x, w and dy are rounded to bfloat16 copies the op owns and the
// three products take them as CUDA_R_16BF A and B with a CUDA_R_32F C and CUBLAS_COMPUTE_32F
// (float32 sums, y / dx / dw written in float32); the bias broadcast and db stay float32.
//
// Row-major to cuBLAS (column-major): a row-major (r, c) matrix with leading dimension c is
// the column-major (c, r) matrix, its transpose. So every product below is written for the
// transposes:
//   y = x W^T      ->  y^T (K, N)  = W (K, in) x^T (in, N):   gemm(T, N, K, N, in, W, in, x, in, y, K)
//   dx = dy W      ->  dx^T (in, N) = W^T (in, K) dy^T (K, N): gemm(N, N, in, N, K, W, in, dy, K, dx, in)
//   dW = dy^T x    ->  dW^T (in, K) = x^T (in, N) dy (N, K):   gemm(N, T, in, K, N, x, in, dy, K, dW, in)
//   db = dy^T 1    ->  db (K) = dy^T (K, N) ones (N):          gemv(N, K, N, dy, K, ones)
//   bias broadcast ->  y^T (K, N) = b (K, 1) ones^T (1, N):     gemm(N, N, K, N, 1, b, K, ones, 1, y, K)
#include <sstream>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_op_kernels.h"
#include "backend/cuda/cuda_op_util.h"

namespace dlt::cuda {
namespace {

class CudaFcOp final : public FcOp {
 public:
  CudaFcOp(const FcDesc& d, CudaContext& ctx, const BackendOptions& options)
      : FcOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {
    std::ostringstream os;
    os << "fully connected (" << d.n << " samples, " << d.in << " -> " << d.out << ")";
    name_ = os.str();
    if (d.n < 1 || d.in < 1 || d.out < 1) throw ShapeError(name_ + ": every size must be at least 1");
    n_ = to_int(d.n, name_, "N");
    in_ = to_int(d.in, name_, "input size");
    out_ = to_int(d.out, name_, "OutputSize");
    to_int(d.n * d.in, name_, "N x input size");
    to_int(d.n * d.out, name_, "N x OutputSize");
    to_int(d.out * d.in, name_, "weight count");
    compute_ = tf32_allowed(options) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    ones_ = device_floats(d.n, ctx);
    DLT_CUDA(fill(ones_.data(), d.n, 1.f, ctx.stream));
    DLT_CUDNN(cudnnSetTensor4dDescriptor(y_desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1,
                                         to_int(d.n * d.out, name_, "N x OutputSize")));
    DLT_CUDNN(cudnnSetActivationDescriptor(act_desc_, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
    if (d.bf16) {
      require_bf16(ctx, name_);
      x_bf_ = device_bf16(d.n * d.in, ctx);
      w_bf_ = device_bf16(d.out * d.in, ctx);
      dy_bf_ = device_bf16(d.n * d.out, ctx);
    }
  }

 protected:
  void do_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) override {
    const float one = 1.f, zero = 0.f;
    float beta = 0.f;
    if (b.defined()) {
      gemm(CUBLAS_OP_N, CUBLAS_OP_N, out_, n_, 1, b.data(), out_, ones_.data(), 1, zero, y.data(), out_);
      beta = 1.f;
    }
    if (d_.bf16)
      gemm_bf16(CUBLAS_OP_T, CUBLAS_OP_N, out_, n_, in_, to_bf16(w, w_bf_), in_, to_bf16(x, x_bf_), in_, beta, y.data(),
                out_);
    else
      gemm(CUBLAS_OP_T, CUBLAS_OP_N, out_, n_, in_, w.data(), in_, x.data(), in_, beta, y.data(), out_);
    if (d_.fuse_relu)
      DLT_CUDNN(cudnnActivationForward(ctx_.cudnn, act_desc_, &one, y_desc_, y.data(), &zero, y_desc_, y.data()));
  }

  void do_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override {
    if (d_.bf16)
      gemm_bf16(CUBLAS_OP_N, CUBLAS_OP_N, in_, n_, out_, to_bf16(w, w_bf_), in_, to_bf16(dy, dy_bf_), out_, 0.f,
                dx.data(), in_);
    else
      gemm(CUBLAS_OP_N, CUBLAS_OP_N, in_, n_, out_, w.data(), in_, dy.data(), out_, 0.f, dx.data(), in_);
  }

  void do_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) override {
    if (d_.bf16)
      gemm_bf16(CUBLAS_OP_N, CUBLAS_OP_T, in_, out_, n_, to_bf16(x, x_bf_), in_, to_bf16(dy, dy_bf_), out_, 0.f,
                dw.data(), in_);
    else
      gemm(CUBLAS_OP_N, CUBLAS_OP_T, in_, out_, n_, x.data(), in_, dy.data(), out_, 0.f, dw.data(), in_);
    if (db.defined()) {
      const float one = 1.f, zero = 0.f;
      DLT_CUBLAS(
          cublasSgemv(ctx_.cublas, CUBLAS_OP_N, out_, n_, &one, dy.data(), out_, ones_.data(), 1, &zero, db.data(), 1));
    }
  }

 private:
  // C (m, n) = op(A) op(B) + beta C, column-major, alpha = 1, host scalars.
  void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* a, int lda, const float* b,
            int ldb, float beta, float* c, int ldc) {
    const float alpha = 1.f;
    DLT_CUBLAS(cublasGemmEx(ctx_.cublas, ta, tb, m, n, k, &alpha, a, CUDA_R_32F, lda, b, CUDA_R_32F, ldb, &beta, c,
                            CUDA_R_32F, ldc, compute_, CUBLAS_GEMM_DEFAULT));
  }

  // As gemm with bfloat16 A and B: C (float32) = op(A) op(B) + beta C, float32 sums.
  void gemm_bf16(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const __nv_bfloat16* a, int lda,
                 const __nv_bfloat16* b, int ldb, float beta, float* c, int ldc) {
    const float alpha = 1.f;
    DLT_CUBLAS(cublasGemmEx(ctx_.cublas, ta, tb, m, n, k, &alpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &beta, c,
                            CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  // src rounded into the scratch dst (sized for it in the constructor); returns dst.
  const __nv_bfloat16* to_bf16(const Tensor& src, Tensor& dst) {
    DLT_CUDA(float_to_bf16(src.data(), as_bf16(dst), src.numel(), ctx_.stream));
    return as_bf16(dst);
  }

  FcDesc d_;
  CudaContext& ctx_;
  std::string name_;
  int n_ = 0, in_ = 0, out_ = 0;
  cublasComputeType_t compute_ = CUBLAS_COMPUTE_32F;
  Tensor ones_;                 // (N) ones: bias broadcast and bias gradient
  Tensor x_bf_, w_bf_, dy_bf_;  // bf16 only: (N, in), (K, in), (N, K) bfloat16 copies
  TensorDesc y_desc_;           // (N * K) flat, for the fused relu
  ActivationDesc act_desc_;
};

}  // namespace

static std::unique_ptr<FcOp> make_fc_op(const FcDesc& d, CudaContext& ctx, const BackendOptions& options) {
  return std::make_unique<CudaFcOp>(d, ctx, options);
}

namespace {
std::unique_ptr<FcOp> make_registered(Backend& b, const FcDesc& d) {
  cuda_backend_of(b).enter();
  return make_fc_op(d, cuda_context(b), b.options());
}
}  // namespace

DLT_REGISTER_OP(FcDesc, DeviceType::kCuda, "cublas", 0, make_registered, nullptr);

}  // namespace dlt::cuda
