// The CPU's ReLU linear attention (backend/linear_attention_op.h), a pass of a few images at a
// time (as many as keep a pass's values within kPassBytes, the size of a core's L2 cache, so
// that the gathered planes are read back from it, not from memory): the queries and keys through
// the ReLU and the values with their column of ones are gathered into (images * heads, tokens,
// channels) planes, and every product is one batched oneDNN matmul over the pass's heads, the
// transposes read through strides; the division, the gradient of the products and the scatter
// back into the joint tensor are loops over the pass's tokens, parallel over them.
#include <algorithm>
#include <memory>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/primitive_sets.h"
#include "backend/linear_attention_op.h"

namespace dlt::cpu {
namespace {

using dnnl::matmul;
using Dims = memory::dims;

constexpr int64_t kPassBytes = int64_t{1} << 20;

// Images per pass: the largest divisor of n whose pass (its input, the gathered planes, the
// product and the output: about 9 h d + 2 h floats per token) fits in kPassBytes; at least 1.
int64_t images_per_pass(const LinearAttentionDesc& d) {
  const int64_t per_image = d.s * (9 * d.heads * d.d + 2 * d.heads) * static_cast<int64_t>(sizeof(float));
  int64_t m = 1;
  for (int64_t k = 1; k <= d.n; ++k)
    if (d.n % k == 0 && k * per_image <= kPassBytes) m = k;
  return m;
}

class CpuLinearAttentionOp final : public LinearAttentionOp, public ImplInfo {
 public:
  CpuLinearAttentionOp(const LinearAttentionDesc& d, DnnlContext& ctx)
      : LinearAttentionOp(d, Device::cpu()),
        d_(d),
        ctx_(ctx),
        m_(images_per_pass(d)),
        b_(m_ * d.heads),
        kv_(transposed(d.s, d.d), plain(d.s, d.d + 1), plain(d.d, d.d + 1), ctx.eng),
        num_(plain(d.s, d.d), plain(d.d, d.d + 1), plain(d.s, d.d + 1), ctx.eng),
        dq_(plain(d.s, d.d + 1), transposed(d.d, d.d + 1), plain(d.s, d.d), ctx.eng),
        dkv_(transposed(d.s, d.d), plain(d.s, d.d + 1), plain(d.d, d.d + 1), ctx.eng),
        dk_(plain(d.s, d.d + 1), transposed(d.d, d.d + 1), plain(d.s, d.d), ctx.eng),
        dv_(plain(d.s, d.d), columns(d.d, d.d, d.d + 1), plain(d.s, d.d), ctx.eng) {
    for (const Product* p : {&kv_, &num_, &dq_, &dkv_, &dk_, &dv_}) pad_.need(p->pd.scratchpad_desc());
    pad_.allocate();
    const int64_t sd = b_ * d.s * d.d, sd1 = b_ * d.s * (d.d + 1);  // the gathered planes
    q_ = host_buffer(static_cast<size_t>(sd) * sizeof(float));
    k_ = host_buffer(static_cast<size_t>(sd) * sizeof(float));
    v_ = host_buffer(static_cast<size_t>(sd1) * sizeof(float));
    num_buf_ = host_buffer(static_cast<size_t>(sd1) * sizeof(float));
  }

  std::string impl_info() const override {
    return "images per pass=" + std::to_string(m_) + " kv=" + impl_of(kv_.pd) + " num=" + impl_of(num_.pd);
  }

 private:
  // One batched product over the images' heads, dst = src x weights.
  struct Product {
    Product(const memory::desc& src_md, const memory::desc& wei_md, const memory::desc& dst_md, const dnnl::engine& eng)
        : pd(matmul::desc(src_md, wei_md, dst_md), user_scratchpad_attr(), eng),
          prim(pd),
          src(unbound(src_md, eng)),
          wei(unbound(wei_md, eng)),
          dst(unbound(dst_md, eng)) {}
    void run(DnnlContext& ctx, const Scratchpad& pad, const float* a, const float* b, float* c) {
      src.set_data_handle(const_cast<float*>(a));
      wei.set_data_handle(const_cast<float*>(b));
      dst.set_data_handle(c);
      cpu::run(prim, ctx.strm,
               {{DNNL_ARG_SRC, src},
                {DNNL_ARG_WEIGHTS, wei},
                {DNNL_ARG_DST, dst},
                {DNNL_ARG_SCRATCHPAD, pad.memory_for(pd.scratchpad_desc(), ctx.eng)}});
    }
    matmul::primitive_desc pd;
    matmul prim;
    memory src, wei, dst;
  };

  // (images * heads, rows, cols) dense; a dense (rows, cols) read transposed as (cols, rows);
  // the first cols of rows of `stride` values.
  memory::desc plain(int64_t rows, int64_t cols) const {
    return memory::desc(Dims{b_, rows, cols}, kF32, Dims{rows * cols, cols, 1});
  }
  memory::desc transposed(int64_t rows, int64_t cols) const {
    return memory::desc(Dims{b_, cols, rows}, kF32, Dims{rows * cols, 1, cols});
  }
  memory::desc columns(int64_t rows, int64_t cols, int64_t stride) const {
    return memory::desc(Dims{b_, rows, cols}, kF32, Dims{rows * stride, stride, 1});
  }

  // The pass's q = relu(queries), k = relu(keys), v' = [values 1], each (images * heads, tokens,
  // channels), from x (the pass's first image).
  void gather(const float* x) {
    const int64_t s = d_.s, h = d_.heads, d = d_.d, c = h * 3 * d;
    float *q = q_.data(), *k = k_.data(), *v = v_.data();
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < m_ * s; ++t) {
      const int64_t img = t / s, p = t % s;
      for (int64_t j = 0; j < h; ++j) {
        const float* in = x + t * c + j * 3 * d;
        const int64_t row = (img * h + j) * s + p;
        float *qo = q + row * d, *ko = k + row * d, *vo = v + row * (d + 1);
#pragma omp simd
        for (int64_t i = 0; i < d; ++i) {
          qo[i] = std::max(in[i], 0.f);
          ko[i] = std::max(in[d + i], 0.f);
          vo[i] = in[2 * d + i];
        }
        vo[d] = 1.f;
      }
    }
  }

  void do_forward(const Tensor& x, Tensor& y, Tensor& kv, Tensor& den) override {
    const int64_t s = d_.s, h = d_.heads, d = d_.d;
    const float* num = num_buf_.data();
    const float eps = d_.eps;
    for (int64_t i0 = 0; i0 < d_.n; i0 += m_) {
      gather(x.data() + i0 * s * h * 3 * d);
      float* kvp = kv.data() + i0 * h * d * (d + 1);
      kv_.run(ctx_, pad_, k_.data(), v_.data(), kvp);
      num_.run(ctx_, pad_, q_.data(), kvp, num_buf_.data());
      float *yp = y.data() + i0 * s * h * d, *dp = den.data() + i0 * h * s;
#pragma omp parallel for schedule(static)
      for (int64_t t = 0; t < m_ * s; ++t) {
        const int64_t img = t / s, p = t % s;
        for (int64_t j = 0; j < h; ++j) {
          const int64_t row = (img * h + j) * s + p;
          const float* in = num + row * (d + 1);
          const float dn = in[d] + eps, inv = 1.f / dn;
          dp[row] = dn;
          float* out = yp + t * h * d + j * d;
#pragma omp simd
          for (int64_t i = 0; i < d; ++i) out[i] = in[i] * inv;
        }
      }
    }
  }

  // The pass's dx channels [offset, offset + d) of every head from grad_ (images * heads,
  // tokens, d), where x's channels there are positive when relu (x, dx: the pass's first image).
  void scatter(const float* x, float* dx, int64_t offset, bool relu) {
    const int64_t s = d_.s, h = d_.heads, d = d_.d, c = h * 3 * d;
    const float* g = grad_.data();
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < m_ * s; ++t) {
      const int64_t img = t / s, p = t % s;
      for (int64_t j = 0; j < h; ++j) {
        const int64_t at = t * c + j * 3 * d + offset;
        const float* in = g + ((img * h + j) * s + p) * d;
        float* out = dx + at;
        if (relu) {
          const float* xv = x + at;
#pragma omp simd
          for (int64_t i = 0; i < d; ++i) out[i] = xv[i] > 0.f ? in[i] : 0.f;
        } else {
#pragma omp simd
          for (int64_t i = 0; i < d; ++i) out[i] = in[i];
        }
      }
    }
  }

  void do_backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& kv, const Tensor& den,
                   Tensor& dx) override {
    if (!grad_.defined()) {  // the backward's own buffers, made at the first backward (none in inference)
      grad_ = host_buffer(static_cast<size_t>(b_ * d_.s * d_.d) * sizeof(float));
      dkv_buf_ = host_buffer(static_cast<size_t>(b_ * d_.d * (d_.d + 1)) * sizeof(float));
    }
    const int64_t s = d_.s, h = d_.heads, d = d_.d, c = h * 3 * d;
    float* g = num_buf_.data();  // the gradient of num, (images * heads, tokens, d + 1)
    for (int64_t i0 = 0; i0 < d_.n; i0 += m_) {
      const float* xp = x.data() + i0 * s * c;
      gather(xp);
      const float *yp = y.data() + i0 * s * h * d, *gy = dy.data() + i0 * s * h * d, *dn = den.data() + i0 * h * s;
#pragma omp parallel for schedule(static)
      for (int64_t t = 0; t < m_ * s; ++t) {
        const int64_t img = t / s, p = t % s;
        for (int64_t j = 0; j < h; ++j) {
          const int64_t row = (img * h + j) * s + p;
          const float *gyr = gy + t * h * d + j * d, *yr = yp + t * h * d + j * d;
          const float inv = 1.f / dn[row];
          float* out = g + row * (d + 1);
          float dot = 0.f;
#pragma omp simd reduction(+ : dot)
          for (int64_t i = 0; i < d; ++i) {
            out[i] = gyr[i] * inv;
            dot += gyr[i] * yr[i];
          }
          out[d] = -dot * inv;
        }
      }
      float* dxp = dx.data() + i0 * s * c;
      const float* kvp = kv.data() + i0 * h * d * (d + 1);
      dq_.run(ctx_, pad_, g, kvp, grad_.data());
      scatter(xp, dxp, 0, true);
      dkv_.run(ctx_, pad_, q_.data(), g, dkv_buf_.data());
      dk_.run(ctx_, pad_, v_.data(), dkv_buf_.data(), grad_.data());
      scatter(xp, dxp, d, true);
      dv_.run(ctx_, pad_, k_.data(), dkv_buf_.data(), grad_.data());
      scatter(xp, dxp, 2 * d, false);
    }
  }

  LinearAttentionDesc d_;
  DnnlContext& ctx_;
  int64_t m_;  // images per pass
  int64_t b_;  // the pass's images * heads: the products' batch
  // kv = k^T v', num = q kv; the backward's dq = g kv^T, dkv = q^T g, dk = v' dkv^T, dv = k dkv[:, :d]
  Product kv_, num_, dq_, dkv_, dk_, dv_;
  Scratchpad pad_;
  Tensor q_, k_, v_;  // the gathered operands
  Tensor num_buf_;    // num (forward), its gradient g (backward)
  Tensor grad_;       // dq, dk or dv before its scatter
  Tensor dkv_buf_;
};

std::unique_ptr<LinearAttentionOp> make(Backend& b, const LinearAttentionDesc& d) {
  return std::make_unique<CpuLinearAttentionOp>(d, dnnl_context(b));
}

}  // namespace

DLT_REGISTER_OP(LinearAttentionDesc, DeviceType::kCpu, "onednn", 0, make, nullptr);

}  // namespace dlt::cpu
