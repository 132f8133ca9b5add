// Separable self-attention (MobileViT v2's linear attention; layers/separable_attention_layer.cpp)
// on an NHWC image x (n, h, w, 1 + 2c): channel 0 is the query q, channels 1..c the keys k,
// channels c + 1..2c the values v. The pixels are grouped by their offset inside ph x pw patches:
// group g = (i, j) holds the pixels (a ph + i, b pw + j) (MobileViT v2's unfold into P = ph pw
// sequences of N = (h / ph)(w / pw) patches, read in place). Within each group, over its pixels p:
//   s_p = softmax_p(q_p)                 (scores: n, h, w; one per pixel)
//   ctx[c'] = sum_p s_p k_p[c']          (context: n, ph pw, c; one vector per group)
//   y_p[c'] = relu(v_p[c']) ctx[c']      (y: n, h, w, c)
// The backward, from x, dy and the forward's scores and context (dctx the context's gradient):
//   dctx[c'] = sum_p dy_p[c'] relu(v_p[c']),   dv_p[c'] = dy_p[c'] ctx[c'] where v_p[c'] > 0, else 0,
//   dk_p[c'] = s_p dctx[c'],   ds_p = k_p . dctx,   dq_p = s_p (ds_p - sum_p' s_p' ds_p').
// dx is written, not accumulated. An op of the registry (op_registry.h): each backend registers
// its kernel in its own file.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"
#include "util/check.h"

namespace dlt {

class SeparableAttentionOp;

struct SeparableAttentionDesc {
  using Op = SeparableAttentionOp;
  static constexpr const char* kOp = "separable_attention";
  int64_t n = 1, h = 1, w = 1, c = 1;  // c: the value channels (the input has 1 + 2c)
  int64_t ph = 1, pw = 1;              // the patch: ph divides h, pw divides w
  int64_t x_numel() const { return n * h * w * (1 + 2 * c); }
  int64_t y_numel() const { return n * h * w * c; }
  int64_t scores_numel() const { return n * h * w; }
  int64_t context_numel() const { return n * ph * pw * c; }
};

class SeparableAttentionOp {
 public:
  virtual ~SeparableAttentionOp() = default;
  void forward(const Tensor& x, Tensor& y, Tensor& scores, Tensor& context) {
    check(x, desc_.x_numel(), "x");
    check(y, desc_.y_numel(), "y");
    check(scores, desc_.scores_numel(), "scores");
    check(context, desc_.context_numel(), "context");
    do_forward(x, y, scores, context);
  }
  void backward(const Tensor& x, const Tensor& dy, const Tensor& scores, const Tensor& context, Tensor& dx) {
    check(x, desc_.x_numel(), "x");
    check(dy, desc_.y_numel(), "dy");
    check(scores, desc_.scores_numel(), "scores");
    check(context, desc_.context_numel(), "context");
    check(dx, desc_.x_numel(), "dx");
    do_backward(x, dy, scores, context, dx);
  }
  const SeparableAttentionDesc& desc() const { return desc_; }

 protected:
  SeparableAttentionOp(const SeparableAttentionDesc& d, Device device) : desc_(d), device_(device) {
    DLT_CHECK(
        d.n >= 1 && d.h >= 1 && d.w >= 1 && d.c >= 1 && d.ph >= 1 && d.pw >= 1 && d.h % d.ph == 0 && d.w % d.pw == 0,
        "separable attention: patch " << d.ph << "x" << d.pw << " must divide the image " << d.h << "x" << d.w << " (n "
                                      << d.n << ", c " << d.c << ")");
  }
  virtual void do_forward(const Tensor& x, Tensor& y, Tensor& scores, Tensor& context) = 0;
  virtual void do_backward(const Tensor& x, const Tensor& dy, const Tensor& scores, const Tensor& context,
                           Tensor& dx) = 0;

 private:
  void check(const Tensor& t, int64_t numel, const char* what) const {
    DLT_CHECK(t.defined() && t.device() == device_ && t.numel() == numel,
              "separable attention: " << what << " must be " << numel << " values on " << device_.str() << " (got "
                                      << (t.defined() ? t.numel() : 0) << ")");
  }
  SeparableAttentionDesc desc_;
  Device device_;
};

}  // namespace dlt
