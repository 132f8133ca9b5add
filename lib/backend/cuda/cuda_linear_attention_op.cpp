// The CUDA ReLU linear attention (backend/linear_attention_op.h): relu(Q), relu(K) and [V 1]
// gathered into (images * heads, tokens, channels) planes in the device's shared workspace
// (cuda_linear_attention_kernels.cu), every product one cuBLAS strided-batched GEMM over the
// images' heads in FP32, the division and the gradients' element-wise steps kernels of their own.
// Row-major products as in cuda_attention_op.cpp: C = op(A) op(B) is computed as
// C^T = op(B)^T op(A)^T on cuBLAS's column-major matrices.
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_op_util.h"
#include "backend/linear_attention_op.h"

namespace dlt::cuda {

// cuda_linear_attention_kernels.cu.
void linear_attention_gather(const float* x, float* q, float* k, float* v, int64_t n, int64_t s, int64_t h, int64_t d,
                             cudaStream_t stream);
void linear_attention_divide(const float* num, float* y, float* den, float eps, int64_t n, int64_t s, int64_t h,
                             int64_t d, cudaStream_t stream);
void linear_attention_num_grad(const float* y, const float* dy, const float* den, float* g, int64_t n, int64_t s,
                               int64_t h, int64_t d, cudaStream_t stream);
void linear_attention_scatter(const float* x, const float* g, float* dx, int64_t offset, bool relu, int64_t n,
                              int64_t s, int64_t h, int64_t d, cudaStream_t stream);

namespace {

class CudaLinearAttentionOp final : public LinearAttentionOp {
 public:
  CudaLinearAttentionOp(const LinearAttentionDesc& d, CudaContext& ctx)
      : LinearAttentionOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {
    const std::string name = "linear attention";
    batch_ = to_int(d.n * d.heads, name, "images x heads");
    s_ = to_int(d.s, name, "tokens");
    c_ = to_int(d.d, name, "channels per head");
    to_int(d.x_numel(), name, "input values");
    to_int(int64_t{batch_} * d.s * (d.d + 1), name, "values of the products");
  }

 private:
  void do_forward(const Tensor& x, Tensor& y, Tensor& kv, Tensor& den) override {
    const int64_t sd = int64_t{batch_} * s_ * c_, sd1 = int64_t{batch_} * s_ * (c_ + 1);
    WorkspaceCarve w(ctx_, {sd, sd, sd1, sd1});
    float *q = w[0], *k = w[1], *v = w[2], *num = w[3];
    linear_attention_gather(x.data(), q, k, v, d_.n, d_.s, d_.heads, d_.d, ctx_.stream);
    const int d = c_, d1 = c_ + 1, s = s_;
    rm_gemm(true, false, d, d1, s, k, d, int64_t{s} * d, v, d1, int64_t{s} * d1, kv.data(), d1, int64_t{d} * d1);
    rm_gemm(false, false, s, d1, d, q, d, int64_t{s} * d, kv.data(), d1, int64_t{d} * d1, num, d1, int64_t{s} * d1);
    linear_attention_divide(num, y.data(), den.data(), d_.eps, d_.n, d_.s, d_.heads, d_.d, ctx_.stream);
  }

  void do_backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& kv, const Tensor& den,
                   Tensor& dx) override {
    const int d = c_, d1 = c_ + 1, s = s_;
    const int64_t sd = int64_t{batch_} * s * d, sd1 = int64_t{batch_} * s * d1;
    WorkspaceCarve w(ctx_, {sd, sd, sd1, sd1, sd, int64_t{batch_} * d * d1});
    float *q = w[0], *k = w[1], *v = w[2], *g = w[3], *grad = w[4], *dkv = w[5];
    linear_attention_gather(x.data(), q, k, v, d_.n, d_.s, d_.heads, d_.d, ctx_.stream);
    linear_attention_num_grad(y.data(), dy.data(), den.data(), g, d_.n, d_.s, d_.heads, d_.d, ctx_.stream);
    const int64_t ss = int64_t{s} * d, ss1 = int64_t{s} * d1, kk = int64_t{d} * d1;
    rm_gemm(false, true, s, d, d1, g, d1, ss1, kv.data(), d1, kk, grad, d, ss);  // dq = g kv^T
    linear_attention_scatter(x.data(), grad, dx.data(), 0, true, d_.n, d_.s, d_.heads, d_.d, ctx_.stream);
    rm_gemm(true, false, d, d1, s, q, d, ss, g, d1, ss1, dkv, d1, kk);     // dkv = q^T g
    rm_gemm(false, true, s, d, d1, v, d1, ss1, dkv, d1, kk, grad, d, ss);  // dk = v' dkv^T
    linear_attention_scatter(x.data(), grad, dx.data(), d, true, d_.n, d_.s, d_.heads, d_.d, ctx_.stream);
    rm_gemm(false, false, s, d, d, k, d, ss, dkv, d1, kk, grad, d, ss);  // dv = k dkv[:, :d]
    linear_attention_scatter(x.data(), grad, dx.data(), 2 * d, false, d_.n, d_.s, d_.heads, d_.d, ctx_.stream);
  }

  // Row-major, batched over the images' heads: C (m, n) = op(A) op(B), op(A) (m, k), op(B) (k,
  // n); lda, ldb, ldc the stored rows' lengths, sa, sb, sc the strides between batch entries.
  void rm_gemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, int64_t sa, const float* b, int ldb,
               int64_t sb, float* c, int ldc, int64_t sc) {
    const float alpha = 1.f, beta = 0.f;
    DLT_CUBLAS(cublasGemmStridedBatchedEx(ctx_.cublas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                          n, m, k, &alpha, b, CUDA_R_32F, ldb, sb, a, CUDA_R_32F, lda, sa, &beta, c,
                                          CUDA_R_32F, ldc, sc, batch_, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  LinearAttentionDesc d_;
  CudaContext& ctx_;
  int batch_ = 0, s_ = 0, c_ = 0;  // images * heads, tokens, channels per head
};

std::unique_ptr<LinearAttentionOp> make(Backend& b, const LinearAttentionDesc& d) {
  cuda_backend_of(b).enter();
  return std::make_unique<CudaLinearAttentionOp>(d, cuda_context(b));
}

}  // namespace

DLT_REGISTER_OP(LinearAttentionDesc, DeviceType::kCuda, "cublas", 0, make, nullptr);

}  // namespace dlt::cuda
