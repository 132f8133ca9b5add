// The CPU's attention (backend/attention_op.h) on oneDNN: every product is one batched matmul
// over (images, heads) whose memory descriptors read the head blocks of the token tensors in
// place (4-D views with strides: no reorders; oneDNN 2.6 runs them on its brgemm kernels), and
// the softmax is oneDNN's, in place on the scores. The additive bias (bias_n > 0) is added and
// the causal mask writes -inf above the diagonal between the scores' product and the softmax;
// the bias's gradient sums dS over the batch entries that share each bias entry.
//   forward:  P = softmax(scale Q K^T)          O = P V
//   backward: dV = P^T dO    dP = dO V^T    dS = softmax_backward(P, dP)
//             dQ = scale dS K    dK = scale dS^T Q
// With dropout (forward_dropout) P times the mask M replaces P in both products with V, and
// dP is multiplied by M before the softmax's backward; M is drawn again from its key (a loop
// over the probabilities, like the causal mask).
// Where the probabilities of the whole batch (n * heads * seq_q * seq_kv floats) fit in
// kKeepProbsBytes, the op runs the batch as one pass and keeps P between forward and backward
// (and as many floats for dP once a backward has run). Beyond that (long sequences: 12 heads
// of 1024 tokens are 48 MiB per image) it runs image by image and keeps nothing: the backward
// computes each image's P again (one more product and softmax), so its buffers hold one image.
#include <algorithm>
#include <limits>
#include <memory>
#include <string>

#include "backend/attention_op.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/primitive_sets.h"
#include "backend/dropout_hash.h"

namespace dlt::cpu {
namespace {

using dnnl::matmul;
using dnnl::prop_kind;
using dnnl::softmax_backward;
using dnnl::softmax_forward;
using Dims = memory::dims;

// The largest batch of probabilities kept from forward to backward (and the dP beside them).
constexpr int64_t kKeepProbsBytes = int64_t{64} << 20;

// Images per pass: the whole batch where its probabilities fit in kKeepProbsBytes, else one.
int64_t images_per_pass(const AttentionDesc& d) {
  return d.probs_numel() * static_cast<int64_t>(sizeof(float)) <= kKeepProbsBytes ? d.n : 1;
}

// One batched product dst = scale * src x weights, with unbound memories.
struct Product {
  Product(const memory::desc& src_md, const memory::desc& wei_md, const memory::desc& dst_md, float scale,
          const dnnl::engine& eng)
      : pd(matmul::desc(src_md, wei_md, dst_md), attr(scale), eng), prim(pd) {
    src = unbound(src_md, eng);
    wei = unbound(wei_md, eng);
    dst = unbound(dst_md, eng);
  }
  static dnnl::primitive_attr attr(float scale) {
    dnnl::primitive_attr a = user_scratchpad_attr();
    if (scale != 1.f) a.set_output_scales(0, {scale});
    return a;
  }
  void run(dnnl::stream& s, const Scratchpad& pad, const dnnl::engine& eng, const float* a, const float* b, float* c) {
    src.set_data_handle(const_cast<float*>(a));
    wei.set_data_handle(const_cast<float*>(b));
    dst.set_data_handle(c);
    cpu::run(prim, s,
             {{DNNL_ARG_SRC, src},
              {DNNL_ARG_WEIGHTS, wei},
              {DNNL_ARG_DST, dst},
              {DNNL_ARG_SCRATCHPAD, pad.memory_for(pd.scratchpad_desc(), eng)}});
  }
  matmul::primitive_desc pd;
  matmul prim;
  memory src, wei, dst;
};

class CpuAttentionOp final : public AttentionOp, public ImplInfo {
 public:
  CpuAttentionOp(const AttentionDesc& d, DnnlContext& ctx)
      : AttentionOp(d, Device::cpu()),
        d_(d),
        m_(images_per_pass(d)),
        ctx_(ctx),
        scale_(d.scale_or_default()),
        scores_(product(tokens(d.seq_q, d.key_dim), tokens_t(d.seq_kv, d.key_dim), probs(), scale_)),
        out_(product(probs(), tokens(d.seq_kv, d.value_dim), tokens(d.seq_q, d.value_dim), 1.f)),
        dv_(product(probs_t(), tokens(d.seq_q, d.value_dim), tokens(d.seq_kv, d.value_dim), 1.f)),
        dp_(product(tokens(d.seq_q, d.value_dim), tokens_t(d.seq_kv, d.value_dim), probs(), 1.f)),
        dq_(product(probs(), tokens(d.seq_kv, d.key_dim), tokens(d.seq_q, d.key_dim), scale_)),
        dk_(product(probs_t(), tokens(d.seq_q, d.key_dim), tokens(d.seq_kv, d.key_dim), scale_)),
        softmax_({prop_kind::forward_training, rows_md(), 1}, {rows_md(), rows_md(), 1}, rows_md(), ctx.eng) {
    for (const Product* p : {&*scores_, &*out_, &*dv_, &*dp_, &*dq_, &*dk_}) pad_.need(p->pd.scratchpad_desc());
    pad_.allocate();
    probs_ = host_buffer(static_cast<size_t>(pass_probs()) * sizeof(float));
    ddst_ = unbound(rows_md(), ctx.eng);
    softmax_.bwd_args = {{DNNL_ARG_DST, softmax_.dst},
                         {DNNL_ARG_DIFF_DST, ddst_},
                         {DNNL_ARG_DIFF_SRC, softmax_.src},
                         {DNNL_ARG_SCRATCHPAD, softmax_.bwd_pad(ctx.eng)}};
  }

  std::string impl_info() const override {
    return "images per pass=" + std::to_string(m_) + " scores=" + impl_of(scores_->pd) + " out=" + impl_of(out_->pd) +
           " dq=" + impl_of(dq_->pd) + " softmax " + softmax_.impl_info();
  }

 protected:
  void do_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o) override {
    for (int64_t i = 0; i < d_.n; i += m_) {
      probabilities(q, k, i);
      out_->run(ctx_.strm, pad_, ctx_.eng, dropped(i), v.data() + i * kv_values(), o.data() + i * q_values(true));
    }
  }

  void do_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout, Tensor& dq, Tensor& dk,
                   Tensor& dv, Tensor* dbias) override {
    if (!dp_buf_.defined()) dp_buf_ = host_buffer(static_cast<size_t>(pass_probs()) * sizeof(float));
    if (dbias) std::fill(dbias->data(), dbias->data() + dbias->numel(), 0.f);
    for (int64_t i = 0; i < d_.n; i += m_) {
      if (m_ < d_.n) probabilities(q, k, i);  // one image's P again; the whole batch's is kept
      const float* g = dout.data() + i * q_values(true);
      // dP before dV, and dQ before dK: dV and dK may be V's and K's storage (attention_op.h).
      dp_->run(ctx_.strm, pad_, ctx_.eng, g, v.data() + i * kv_values(), dp_buf_.data());
      dv_->run(ctx_.strm, pad_, ctx_.eng, dropped(i), g, dv.data() + i * kv_values());
      if (dropout_on()) apply_mask(dp_buf_.data(), dp_buf_.data(), i);  // dP = M (dO V^T)
      bind(softmax_.dst, probs_);
      bind(ddst_, dp_buf_);
      bind(softmax_.src, dp_buf_);  // dS over dP
      softmax_.backward(ctx_.strm);
      if (dbias) add_bias_grad(dp_buf_.data(), dbias->data(), i);
      dq_->run(ctx_.strm, pad_, ctx_.eng, dp_buf_.data(), k.data() + i * kv_keys(), dq.data() + i * q_values(false));
      dk_->run(ctx_.strm, pad_, ctx_.eng, dp_buf_.data(), q.data() + i * q_values(false), dk.data() + i * kv_keys());
    }
  }

 private:
  // The probabilities of the pass of images from `first` into probs_.
  void probabilities(const Tensor& q, const Tensor& k, int64_t first) {
    float* p = probs_.data();
    scores_->run(ctx_.strm, pad_, ctx_.eng, q.data() + first * q_values(false), k.data() + first * kv_keys(), p);
    if (bias()) add_bias(p, first);
    if (d_.causal) mask(p);
    softmax_.forward(ctx_.strm, probs_, probs_);
  }
  // The probabilities the products with V use: P, or P * M into dropped_ with dropout.
  const float* dropped(int64_t first) {
    if (!dropout_on()) return probs_.data();
    if (!dropped_.defined()) dropped_ = host_buffer(static_cast<size_t>(pass_probs()) * sizeof(float));
    apply_mask(probs_.data(), dropped_.data(), first);
    return dropped_.data();
  }
  // to = from * M for the pass of images from `first` (from and to may be the same).
  void apply_mask(const float* from, float* to, int64_t first) const {
    const int64_t count = pass_probs(), base = first * d_.heads * d_.seq_q * d_.seq_kv;
    const float p = d_.dropout, scale = keep_scale();
    const uint64_t key = dropout_key();
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < count; ++e)
      to[e] = dropout_uniform(key, static_cast<uint64_t>(base + e)) >= p ? from[e] * scale : 0.f;
  }
  // Floats per image: queries (keys' width) or outputs (values' width), keys, values.
  int64_t q_values(bool value_width) const { return d_.seq_q * d_.heads * (value_width ? d_.value_dim : d_.key_dim); }
  int64_t kv_keys() const { return d_.seq_kv * d_.heads * d_.key_dim; }
  int64_t kv_values() const { return d_.seq_kv * d_.heads * d_.value_dim; }
  int64_t pass_probs() const { return m_ * d_.heads * d_.seq_q * d_.seq_kv; }

  // (images, heads, seq, dim) read in place from a token tensor (n, seq, heads * dim), and its
  // transpose (n, heads, dim, seq).
  memory::desc tokens(int64_t seq, int64_t dim) const {
    const int64_t c = d_.heads * dim;
    return memory::desc(Dims{m_, d_.heads, seq, dim}, kF32, Dims{seq * c, dim, c, 1});
  }
  memory::desc tokens_t(int64_t seq, int64_t dim) const {
    const int64_t c = d_.heads * dim;
    return memory::desc(Dims{m_, d_.heads, dim, seq}, kF32, Dims{seq * c, dim, 1, c});
  }
  // The probabilities (images, heads, seq_q, seq_kv), dense, and their transpose.
  memory::desc probs() const {
    return memory::desc(Dims{m_, d_.heads, d_.seq_q, d_.seq_kv}, kF32, memory::format_tag::abcd);
  }
  memory::desc probs_t() const {
    const int64_t plane = d_.seq_q * d_.seq_kv;
    return memory::desc(Dims{m_, d_.heads, d_.seq_kv, d_.seq_q}, kF32, Dims{d_.heads * plane, plane, 1, d_.seq_kv});
  }
  // The probabilities as softmax rows (images * heads * seq_q, seq_kv).
  memory::desc rows_md() const { return nc_md(m_ * d_.heads * d_.seq_q, d_.seq_kv); }
  std::unique_ptr<Product> product(const memory::desc& a, const memory::desc& b, const memory::desc& c,
                                   float scale) const {
    return std::make_unique<Product>(a, b, c, scale, ctx_.eng);
  }

  // s += B[b % bias_n] for each image b of the pass from `first`: row by row (a row of seq_kv
  // scores and its bias row contiguous, the inner loop vectorized).
  void add_bias(float* s, int64_t first) const {
    const int64_t kv = d_.seq_kv, plane_rows = d_.heads * d_.seq_q, rows = m_ * plane_rows;
    const float* b = bias()->data();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t image = r / plane_rows, row = r % plane_rows;
      const float* from = b + (((first + image) % d_.bias_n) * plane_rows + row) * kv;
      float* to = s + r * kv;
#pragma omp simd
      for (int64_t j = 0; j < kv; ++j) to[j] += from[j];
    }
  }
  // dB[f] += dS of every image b of the pass from `first` with b % bias_n the entry of f: bias
  // row by bias row, the images in order (the inner loop over a row vectorized).
  void add_bias_grad(const float* ds, float* db, int64_t first) const {
    const int64_t kv = d_.seq_kv, plane_rows = d_.heads * d_.seq_q, plane = plane_rows * kv;
    const int64_t rows = d_.bias_n * plane_rows;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t entry = r / plane_rows, row = r % plane_rows;
      float* to = db + r * kv;
      for (int64_t b = first + (entry - first % d_.bias_n + d_.bias_n) % d_.bias_n; b < first + m_; b += d_.bias_n) {
        const float* from = ds + (b - first) * plane + row * kv;
#pragma omp simd
        for (int64_t j = 0; j < kv; ++j) to[j] += from[j];
      }
    }
  }
  // -inf at key j > query i in every row block.
  void mask(float* s) const {
    const int64_t rows = m_ * d_.heads * d_.seq_q, kv = d_.seq_kv;
    const float inf = std::numeric_limits<float>::infinity();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = r % d_.seq_q;
      for (int64_t j = i + 1; j < kv; ++j) s[r * kv + j] = -inf;
    }
  }

  AttentionDesc d_;
  int64_t m_;  // images per pass: n (P kept for the backward) or 1 (P computed again there)
  DnnlContext& ctx_;
  float scale_;
  std::unique_ptr<Product> scores_, out_, dv_, dp_, dq_, dk_;
  PrimitivePair<softmax_forward, softmax_backward> softmax_;  // src S / dS, dst P
  memory ddst_;                                               // dP
  Scratchpad pad_;                                            // the products' (the softmax has its own)
  Tensor probs_, dp_buf_;                                     // a pass's P; dP, then dS
  Tensor dropped_;                                            // P * M (dropout only)
};

std::unique_ptr<AttentionOp> make(Backend& b, const AttentionDesc& d) {
  return guarded("attention", [&]() -> std::unique_ptr<AttentionOp> {
    return std::make_unique<CpuAttentionOp>(d, dnnl_context(b));
  });
}

}  // namespace

DLT_REGISTER_OP(AttentionDesc, DeviceType::kCpu, "onednn", 0, make, nullptr);

}  // namespace dlt::cpu
