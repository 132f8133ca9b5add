// The CUDA attention (backend/attention_op.h): the heads moved to head-major (n, heads, seq,
// dim) copies (cuda_attention_kernels.cu), every product one cuBLAS strided-batched GEMM over
// n * heads, cuDNN's softmax (ACCURATE, MODE_INSTANCE) over the score rows, the additive bias
// and the causal mask kernels of their own between the scores' product and the softmax (the
// bias's gradient a kernel summing dS over the batch entries that share each entry).
//   forward:  P = softmax(scale Q K^T)          O = P V
//   backward: dV = P^T dO    dP = dO V^T    dS = softmax_backward(P, dP)
//             dQ = scale dS K    dK = scale dS^T Q
// With dropout (forward_dropout) P times the mask M (a kernel, drawn again in backward from its
// key) replaces P in both products with V, and dP is multiplied by M before the softmax's
// backward.
// The op keeps P (n * heads * seq_q * seq_kv floats) between forward and backward; the
// head-major copies, the scores and dP, dS live in the device's shared workspace for one call
// (the backward reads Q, K, V into them first, so dK and dV may be K's and V's storage).
// Talking heads (attention_op.h): each mix across the heads one strided-batched GEMM over the
// images (the mix's stride 0), its bias a kernel (a bias per head and pair: the additive bias's
// kernels, one entry for every image); the op keeps the mixed A beside P, and the
// backward computes the scores again for the first mix's weight gradient (a GEMM per image into
// the workspace, summed by a kernel):
//   forward:  S = scale Q K^T   L = Ws S + bs   P = softmax(L)   A = Wp P + bp   O = A V
//   backward: dV = A^T dO   dA = dO V^T   dWp = sum dA P^T   dP = Wp^T dA
//             dL = softmax_backward(P, dP)   dWs = sum dL S^T   dS = Ws^T dL   dQ, dK as above
// FP32 compute (CUBLAS_COMPUTE_32F) unless AllowTF32.
//
// Row-major products on cuBLAS (column-major): a row-major (r, c) matrix is the column-major
// (c, r) one, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T: the operands swap, the
// transpose flags stay (rm_gemm below).
#include <cuda_runtime.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "backend/attention_op.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_op_util.h"

namespace dlt::cuda {

// cuda_attention_kernels.cu
void attention_heads(const float* from, float* to, int64_t n, int64_t seq, int64_t heads, int64_t dim, bool split,
                     cudaStream_t stream);
void attention_causal_mask(float* scores, int64_t rows, int64_t seq_q, int64_t seq_kv, cudaStream_t stream);
void attention_add_bias(float* scores, const float* bias, int64_t n, int64_t plane, int64_t bias_n,
                        cudaStream_t stream);
void attention_bias_grad(const float* ds, float* dbias, int64_t n, int64_t plane, int64_t bias_n, cudaStream_t stream);
void attention_dropout(const float* from, float* to, int64_t total, float p, float scale, uint64_t key,
                       cudaStream_t stream);
void attention_head_bias(float* x, const float* bias, int64_t n, int64_t heads, int64_t plane, cudaStream_t stream);
void attention_head_sum(const float* x, float* out, int64_t n, int64_t heads, int64_t plane, cudaStream_t stream);

namespace {

class CudaAttentionOp final : public AttentionOp {
 public:
  CudaAttentionOp(const AttentionDesc& d, CudaContext& ctx, const BackendOptions& options)
      : AttentionOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx), scale_(d.scale_or_default()) {
    const std::string name = "attention (" + std::to_string(d.n) + " x " + std::to_string(d.heads) + " heads, " +
                             std::to_string(d.seq_q) + " x " + std::to_string(d.seq_kv) + " tokens)";
    batch_ = to_int(d.n * d.heads, name, "N x heads");
    sq_ = to_int(d.seq_q, name, "query tokens");
    skv_ = to_int(d.seq_kv, name, "key tokens");
    dk_ = to_int(d.key_dim, name, "key dimension");
    dv_ = to_int(d.value_dim, name, "value dimension");
    for (int64_t numel : {d.q_numel(), d.k_numel(), d.v_numel(), d.o_numel(), d.probs_numel()})
      to_int(numel, name, "tensor size");
    const int rows = to_int(d.n * d.heads * d.seq_q, name, "score rows");
    DLT_CUDNN(cudnnSetTensor4dDescriptor(rows_desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, rows, skv_, 1, 1));
    compute_ = tf32_allowed(options) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    probs_ = device_floats(d.probs_numel(), ctx);
    if (d.talking_heads) {
      images_ = to_int(d.n, name, "images");
      heads_ = to_int(d.heads, name, "heads");
      plane_ = to_int(d.seq_q * d.seq_kv, name, "scores per head");
      mixed_ = device_floats(d.probs_numel(), ctx);
    }
  }

 protected:
  void do_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o) override {
    const int64_t mixing = d_.talking_heads ? d_.probs_numel() : 0;
    WorkspaceCarve w(ctx_, {d_.q_numel(), d_.k_numel(), d_.v_numel(), d_.probs_numel(), d_.o_numel(), mixing});
    float *qh = w[0], *kh = w[1], *vh = w[2], *s = w[3], *oh = w[4];  // s: the scores, then P * M
    float* logits = d_.talking_heads ? w[5] : s;                      // the softmax's input
    split(q, qh, d_.seq_q, d_.key_dim);
    split(k, kh, d_.seq_kv, d_.key_dim);
    split(v, vh, d_.seq_kv, d_.value_dim);
    const int64_t plane = d_.seq_q * d_.seq_kv;
    // S (sq, skv) = scale Q (sq, dk) K^T
    rm_gemm(false, true, sq_, skv_, dk_, scale_, qh, dk_, d_.seq_q * d_.key_dim, kh, dk_, d_.seq_kv * d_.key_dim, s,
            skv_, plane);
    if (bias()) attention_add_bias(s, bias()->data(), d_.n, d_.heads * plane, d_.bias_n, ctx_.stream);
    if (d_.talking_heads) mix_forward(0, s, logits);
    if (d_.causal) attention_causal_mask(logits, d_.n * d_.heads * d_.seq_q, d_.seq_q, d_.seq_kv, ctx_.stream);
    const float one = 1.f, zero = 0.f;
    DLT_CUDNN(cudnnSoftmaxForward(ctx_.cudnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, rows_desc_,
                                  logits, &zero, rows_desc_, probs_.data()));
    if (d_.talking_heads) mix_forward(1, probs_.data(), mixed_.data());
    // O (sq, dv) = P (sq, skv) V (skv, dv), or (P * M) V
    rm_gemm(false, false, sq_, dv_, skv_, 1.f, dropped(s), skv_, plane, vh, dv_, d_.seq_kv * d_.value_dim, oh, dv_,
            d_.seq_q * d_.value_dim);
    merge(oh, o, d_.seq_q, d_.value_dim);
  }

  void do_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout, Tensor& dq, Tensor& dk,
                   Tensor& dv, Tensor* dbias, const HeadMixGrads& dmix) override {
    const int64_t per_image_mix = d_.talking_heads ? d_.n * d_.heads * d_.heads : 0;
    WorkspaceCarve w(ctx_, {d_.q_numel(), d_.k_numel(), d_.v_numel(), d_.o_numel(), d_.probs_numel(), d_.probs_numel(),
                            d_.q_numel(), d_.k_numel(), d_.v_numel(), per_image_mix});
    float *qh = w[0], *kh = w[1], *vh = w[2], *doh = w[3], *dp = w[4], *ds = w[5], *dqh = w[6], *dkh = w[7],
          *dvh = w[8];  // ds holds P * M until the softmax's backward writes dS
    split(q, qh, d_.seq_q, d_.key_dim);
    split(k, kh, d_.seq_kv, d_.key_dim);
    split(v, vh, d_.seq_kv, d_.value_dim);
    split(dout, doh, d_.seq_q, d_.value_dim);
    const int64_t plane = d_.seq_q * d_.seq_kv, qs = d_.seq_q * d_.key_dim, ks = d_.seq_kv * d_.key_dim;
    const int64_t vs = d_.seq_kv * d_.value_dim, os = d_.seq_q * d_.value_dim;
    const float* p = probs_.data();
    // dV (skv, dv) = P^T dO (sq, dv), or (P * M)^T dO (with talking heads A for P)
    rm_gemm(true, false, skv_, dv_, sq_, 1.f, dropped(ds), skv_, plane, doh, dv_, os, dvh, dv_, vs);
    // dP (sq, skv) = dO (sq, dv) V^T, times M with dropout (with talking heads dA)
    rm_gemm(false, true, sq_, skv_, dv_, 1.f, doh, dv_, os, vh, dv_, vs, dp, skv_, plane);
    if (dropout_on()) attention_dropout(dp, dp, d_.probs_numel(), d_.dropout, keep_scale(), dropout_key(), ctx_.stream);
    const float one = 1.f, zero = 0.f;
    if (d_.talking_heads) {
      mix_backward(1, p, dp, ds, dmix, w[9]);  // dA -> dP into ds
      DLT_CUDNN(cudnnSoftmaxBackward(ctx_.cudnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, rows_desc_,
                                     p, rows_desc_, ds, &zero, rows_desc_, dp));  // dL into dp
      // S again into ds, then dS over it
      rm_gemm(false, true, sq_, skv_, dk_, scale_, qh, dk_, qs, kh, dk_, ks, ds, skv_, plane);
      if (bias()) attention_add_bias(ds, bias()->data(), d_.n, d_.heads * plane, d_.bias_n, ctx_.stream);
      mix_backward(0, ds, dp, ds, dmix, w[9]);
    } else {
      DLT_CUDNN(cudnnSoftmaxBackward(ctx_.cudnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, rows_desc_,
                                     p, rows_desc_, dp, &zero, rows_desc_, ds));
    }
    if (dbias) attention_bias_grad(ds, dbias->data(), d_.n, d_.heads * plane, d_.bias_n, ctx_.stream);
    // dQ (sq, dk) = scale dS (sq, skv) K (skv, dk);  dK (skv, dk) = scale dS^T Q (sq, dk)
    rm_gemm(false, false, sq_, dk_, skv_, scale_, ds, skv_, plane, kh, dk_, ks, dqh, dk_, qs);
    rm_gemm(true, false, skv_, dk_, sq_, scale_, ds, skv_, plane, qh, dk_, qs, dkh, dk_, ks);
    merge(dqh, dq, d_.seq_q, d_.key_dim);
    merge(dkh, dk, d_.seq_kv, d_.key_dim);
    merge(dvh, dv, d_.seq_kv, d_.value_dim);
  }

 private:
  // The weights the products with V use: P (with talking heads the mixed A), or that times M
  // written into `into`.
  const float* dropped(float* into) {
    const float* w = d_.talking_heads ? mixed_.data() : probs_.data();
    if (!dropout_on()) return w;
    attention_dropout(w, into, d_.probs_numel(), d_.dropout, keep_scale(), dropout_key(), ctx_.stream);
    return into;
  }

  // Head mix m (0: the scores', 1: the probabilities') over the images: y = W x + b.
  void mix_forward(int m, const float* x, float* y) {
    rm_gemm(false, false, heads_, plane_, heads_, 1.f, mix(2 * m).data(), heads_, 0, x, plane_,
            int64_t{heads_} * plane_, y, plane_, int64_t{heads_} * plane_, images_);
    if (m == 1 && d_.pair_probs_bias)  // one value per head and pair, the same for every image
      attention_add_bias(y, mix(3).data(), d_.n, d_.heads * int64_t{plane_}, 1, ctx_.stream);
    else
      attention_head_bias(y, mix(2 * m + 1).data(), d_.n, d_.heads, int64_t{plane_}, ctx_.stream);
  }
  // Head mix m's backward: its gradients (where dmix asks) from its input x and its output's
  // gradient dy (per image into `per_image`, then summed), and dx = W^T dy (dx may be x's
  // storage, not dy's).
  void mix_backward(int m, const float* x, const float* dy, float* dx, const HeadMixGrads& dmix, float* per_image) {
    const int64_t block = int64_t{heads_} * plane_;
    if (Tensor* dw = dmix.weights[m]) {
      rm_gemm(false, true, heads_, heads_, plane_, 1.f, dy, plane_, block, x, plane_, block, per_image, heads_,
              int64_t{heads_} * heads_, images_);
      attention_head_sum(per_image, dw->data(), d_.n, d_.heads * d_.heads, 1, ctx_.stream);
    }
    if (Tensor* db = dmix.bias[m]; db && m == 1 && d_.pair_probs_bias)
      attention_bias_grad(dy, db->data(), d_.n, d_.heads * int64_t{plane_}, 1, ctx_.stream);
    else if (db)
      attention_head_sum(dy, db->data(), d_.n, d_.heads, plane_, ctx_.stream);
    rm_gemm(true, false, heads_, plane_, heads_, 1.f, mix(2 * m).data(), heads_, 0, dy, plane_, block, dx, plane_,
            block, images_);
  }

  void split(const Tensor& t, float* to, int64_t seq, int64_t dim) {
    attention_heads(t.data(), to, d_.n, seq, d_.heads, dim, true, ctx_.stream);
  }
  void merge(const float* from, Tensor& t, int64_t seq, int64_t dim) {
    attention_heads(from, t.data(), d_.n, seq, d_.heads, dim, false, ctx_.stream);
  }

  // Row-major, batched over n * heads (or `batch` entries): C (m, n) = alpha op(A) op(B), op(A)
  // (m, k), op(B) (k, n); lda, ldb, ldc the stored rows' lengths, sa, sb, sc the strides between
  // batch entries.
  void rm_gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, int64_t sa, const float* b,
               int ldb, int64_t sb, float* c, int ldc, int64_t sc, int batch = 0) {
    const float beta = 0.f;
    DLT_CUBLAS(cublasGemmStridedBatchedEx(ctx_.cublas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                          n, m, k, &alpha, b, CUDA_R_32F, ldb, sb, a, CUDA_R_32F, lda, sa, &beta, c,
                                          CUDA_R_32F, ldc, sc, batch ? batch : batch_, compute_, CUBLAS_GEMM_DEFAULT));
  }

  AttentionDesc d_;
  CudaContext& ctx_;
  float scale_;
  int batch_ = 0, sq_ = 0, skv_ = 0, dk_ = 0, dv_ = 0;
  int images_ = 0, heads_ = 0, plane_ = 0;  // talking heads: the mixes' GEMMs
  cublasComputeType_t compute_ = CUBLAS_COMPUTE_32F;
  TensorDesc rows_desc_;  // (n * heads * seq_q, seq_kv, 1, 1): the softmax rows
  Tensor probs_;          // P (n, heads, seq_q, seq_kv), kept for backward
  Tensor mixed_;          // talking heads: A = Wp P + bp, kept for backward
};

std::unique_ptr<AttentionOp> make(Backend& b, const AttentionDesc& d) {
  cuda_backend_of(b).enter();
  return std::make_unique<CudaAttentionOp>(d, cuda_context(b), b.options());
}

}  // namespace

DLT_REGISTER_OP(AttentionDesc, DeviceType::kCuda, "cublas", 0, make, nullptr);

}  // namespace dlt::cuda
