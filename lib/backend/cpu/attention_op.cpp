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
// Talking heads (attention_op.h): each mix across the heads is one batched matmul over the
// pass's images, the head mix (heads, heads) broadcast over them and each image's (heads,
// seq_q * seq_kv) the other operand; the mix's bias (per head, or per head and pair) is added
// after it. The op keeps P and
// the mixed A; the backward computes the scores S again for the first mix's weight gradient:
//   forward:  S = scale Q K^T   L = Ws S + bs   P = softmax(L)   A = Wp P + bp   O = A V
//   backward: dV = A^T dO   dA = dO V^T   dWp = sum dA P^T   dP = Wp^T dA
//             dL = softmax_backward(P, dP)   dWs = sum dL S^T   dS = Ws^T dL   dQ, dK as above
#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

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

// Images per pass: the whole batch where its probabilities (with talking heads P and the mixed
// A) fit in kKeepProbsBytes, else one.
int64_t images_per_pass(const AttentionDesc& d) {
  const int64_t kept = d.talking_heads ? 2 : 1;
  return kept * d.probs_numel() * static_cast<int64_t>(sizeof(float)) <= kKeepProbsBytes ? d.n : 1;
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
    if (d.talking_heads) {
      // (images, heads, plane): the scores' or probabilities' planes, and the head mix (1, heads,
      // heads) broadcast over the images, plain or transposed; the weight gradient per image.
      const int64_t h = d.heads, plane = d.seq_q * d.seq_kv;
      const memory::desc planes(Dims{m_, h, plane}, kF32, memory::format_tag::abc);
      const memory::desc planes_t(Dims{m_, plane, h}, kF32, Dims{h * plane, 1, plane});
      const memory::desc mix(Dims{1, h, h}, kF32, memory::format_tag::abc);
      const memory::desc mix_t(Dims{1, h, h}, kF32, Dims{h * h, 1, h});
      head_mix_ = product(mix, planes, planes, 1.f);
      head_mix_t_ = product(mix_t, planes, planes, 1.f);
      head_mix_grad_ = product(planes, planes_t, memory::desc(Dims{m_, h, h}, kF32, memory::format_tag::abc), 1.f);
      for (const Product* p : {&*head_mix_, &*head_mix_t_, &*head_mix_grad_}) pad_.need(p->pd.scratchpad_desc());
      mixed_ = host_buffer(static_cast<size_t>(pass_probs()) * sizeof(float));
      temp_ = host_buffer(static_cast<size_t>(pass_probs()) * sizeof(float));
      mix_grad_buf_ = host_buffer(static_cast<size_t>(m_ * h * h) * sizeof(float));
      bias_sums_.resize(static_cast<size_t>(m_ * h));
    }
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
           " dq=" + impl_of(dq_->pd) + " softmax " + softmax_.impl_info() +
           (head_mix_ ? " head mix=" + impl_of(head_mix_->pd) + " mix grad=" + impl_of(head_mix_grad_->pd)
                      : std::string());
  }

 protected:
  void do_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& o) override {
    for (int64_t i = 0; i < d_.n; i += m_) {
      probabilities(q, k, i);
      out_->run(ctx_.strm, pad_, ctx_.eng, dropped(i), v.data() + i * kv_values(), o.data() + i * q_values(true));
    }
  }

  void do_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout, Tensor& dq, Tensor& dk,
                   Tensor& dv, Tensor* dbias, const HeadMixGrads& dmix) override {
    if (!dp_buf_.defined()) dp_buf_ = host_buffer(static_cast<size_t>(pass_probs()) * sizeof(float));
    if (dbias) std::fill(dbias->data(), dbias->data() + dbias->numel(), 0.f);
    for (Tensor* g : {dmix.weights[0], dmix.weights[1], dmix.bias[0], dmix.bias[1]})
      if (g) std::fill(g->data(), g->data() + g->numel(), 0.f);
    for (int64_t i = 0; i < d_.n; i += m_) {
      if (m_ < d_.n) probabilities(q, k, i);  // one image's P again; the whole batch's is kept
      const float* g = dout.data() + i * q_values(true);
      // dP before dV, and dQ before dK: dV and dK may be V's and K's storage (attention_op.h).
      dp_->run(ctx_.strm, pad_, ctx_.eng, g, v.data() + i * kv_values(), dp_buf_.data());
      dv_->run(ctx_.strm, pad_, ctx_.eng, dropped(i), g, dv.data() + i * kv_values());
      if (dropout_on()) apply_mask(dp_buf_.data(), dp_buf_.data(), i);  // dP = M (dO V^T)
      // dS into dp_buf_: through the softmax (and with talking heads through both mixes)
      if (d_.talking_heads) {
        mix_backward(1, probs_.data(), dp_buf_.data(), temp_.data(), dmix);   // dA -> dP
        softmax_grad(temp_);                                                  // dL over dP
        probabilities_scores(q, k, i, dp_buf_.data());                        // S again
        mix_backward(0, dp_buf_.data(), temp_.data(), dp_buf_.data(), dmix);  // dL -> dS over S
      } else {
        softmax_grad(dp_buf_);
      }
      if (dbias) add_bias_grad(dp_buf_.data(), dbias->data(), i);
      dq_->run(ctx_.strm, pad_, ctx_.eng, dp_buf_.data(), k.data() + i * kv_keys(), dq.data() + i * q_values(false));
      dk_->run(ctx_.strm, pad_, ctx_.eng, dp_buf_.data(), q.data() + i * q_values(false), dk.data() + i * kv_keys());
    }
  }

 private:
  // The probabilities of the pass of images from `first` into probs_ (with talking heads the
  // mixed ones into mixed_ too).
  void probabilities(const Tensor& q, const Tensor& k, int64_t first) {
    float* p = probs_.data();
    if (d_.talking_heads) {
      probabilities_scores(q, k, first, temp_.data());
      mix_forward(0, temp_.data(), p);
    } else {
      probabilities_scores(q, k, first, p);
    }
    if (d_.causal) mask(p);
    softmax_.forward(ctx_.strm, probs_, probs_);
    if (d_.talking_heads) mix_forward(1, p, mixed_.data());
  }
  // The scores (with the bias) of the pass from `first` into s.
  void probabilities_scores(const Tensor& q, const Tensor& k, int64_t first, float* s) {
    scores_->run(ctx_.strm, pad_, ctx_.eng, q.data() + first * q_values(false), k.data() + first * kv_keys(), s);
    if (bias()) add_bias(s, first);
  }
  // dS from dP, both in `grad` (the softmax's backward in place; its output P in probs_).
  void softmax_grad(Tensor& grad) {
    bind(softmax_.dst, probs_);
    bind(ddst_, grad);
    bind(softmax_.src, grad);
    softmax_.backward(ctx_.strm);
  }
  // Head mix m (0: the scores', 1: the probabilities') of the pass: y = W x + b per image (b one
  // value per head, or per head and pair of tokens).
  void mix_forward(int m, const float* x, float* y) {
    head_mix_->run(ctx_.strm, pad_, ctx_.eng, mix(2 * m).data(), x, y);
    const int64_t h = d_.heads, plane = d_.seq_q * d_.seq_kv;
    const float* b = mix(2 * m + 1).data();
    const bool pairs = m == 1 && d_.pair_probs_bias;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < m_ * h; ++r) {
      float* row = y + r * plane;
      if (pairs) {
        const float* from = b + (r % h) * plane;
#pragma omp simd
        for (int64_t e = 0; e < plane; ++e) row[e] += from[e];
        continue;
      }
      const float add = b[r % h];
#pragma omp simd
      for (int64_t e = 0; e < plane; ++e) row[e] += add;
    }
  }
  // Head mix m's backward: its gradients (added to dmix's, when asked) from its input x and its
  // output's gradient dy, and dx = W^T dy (dx may be x's storage, not dy's).
  void mix_backward(int m, const float* x, const float* dy, float* dx, const HeadMixGrads& dmix) {
    const int64_t h = d_.heads, plane = d_.seq_q * d_.seq_kv;
    if (Tensor* dw = dmix.weights[m]) {
      float* per_image = mix_grad_buf_.data();
      head_mix_grad_->run(ctx_.strm, pad_, ctx_.eng, dy, x, per_image);
      for (int64_t b = 0; b < m_; ++b)
        for (int64_t e = 0; e < h * h; ++e) dw->data()[e] += per_image[b * h * h + e];
    }
    if (Tensor* db = dmix.bias[m]; db && m == 1 && d_.pair_probs_bias) {  // per pair: the images summed
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < h; ++r) {
        float* to = db->data() + r * plane;
        for (int64_t b = 0; b < m_; ++b) {
          const float* from = dy + (b * h + r) * plane;
#pragma omp simd
          for (int64_t e = 0; e < plane; ++e) to[e] += from[e];
        }
      }
    } else if (db) {
      std::vector<double>& sums = bias_sums_;
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < m_ * h; ++r) {
        double sum = 0;
        const float* row = dy + r * plane;
        for (int64_t e = 0; e < plane; ++e) sum += row[e];
        sums[static_cast<size_t>(r)] = sum;
      }
      for (int64_t r = 0; r < m_ * h; ++r) db->data()[r % h] += static_cast<float>(sums[static_cast<size_t>(r)]);
    }
    head_mix_t_->run(ctx_.strm, pad_, ctx_.eng, mix(2 * m).data(), dy, dx);
  }
  // The weights the products with V use: P (with talking heads the mixed A), or that times M
  // into dropped_ with dropout.
  const float* dropped(int64_t first) {
    const float* w = d_.talking_heads ? mixed_.data() : probs_.data();
    if (!dropout_on()) return w;
    if (!dropped_.defined()) dropped_ = host_buffer(static_cast<size_t>(pass_probs()) * sizeof(float));
    apply_mask(w, dropped_.data(), first);
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
  std::unique_ptr<Product> head_mix_, head_mix_t_, head_mix_grad_;  // talking heads: W x, W^T dy, dy x^T
  PrimitivePair<softmax_forward, softmax_backward> softmax_;  // src S / dS, dst P
  memory ddst_;                                               // dP
  Scratchpad pad_;                                            // the products' (the softmax has its own)
  Tensor probs_, dp_buf_;                                     // a pass's P; dP, then dS
  Tensor dropped_;                                            // P * M (dropout only)
  Tensor mixed_, temp_, mix_grad_buf_;  // talking heads: A; S or dP, dL; a mix's gradient per image
  std::vector<double> bias_sums_;       // talking heads: a mix bias's gradient per image and head
};

std::unique_ptr<AttentionOp> make(Backend& b, const AttentionDesc& d) {
  return guarded("attention", [&]() -> std::unique_ptr<AttentionOp> {
    return std::make_unique<CpuAttentionOp>(d, dnnl_context(b));
  });
}

}  // namespace

DLT_REGISTER_OP(AttentionDesc, DeviceType::kCpu, "onednn", 0, make, nullptr);

}  // namespace dlt::cpu
