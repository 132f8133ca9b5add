// ReLU linear attention (EfficientViT's LiteMLA; layers/linear_attention_layer.cpp) on tokens x
// (n, s, heads 3d): head h's channels are [h 3d, h 3d + d) its queries, the next d its keys, the
// next d its values. Per image and head, with q = relu(queries), k = relu(keys), v the values
// (s x d each) and v' = [v 1] (s x (d + 1), a column of ones after the values):
//   kv = k^T v'                          (d x (d + 1), kept)
//   num = q kv                           (s x (d + 1))
//   den_p = num[p, d] + eps              (kept)
//   y[p, h d + j] = num[p, j] / den_p    (y: n, s, heads d)
// The backward, from x, y, dy and the kept kv and den (g the gradient of num):
//   g[p, j] = dy[p, j] / den_p (j < d),   g[p, d] = -sum_j dy[p, j] y[p, j] / den_p,
//   dq = (g kv^T) where the queries > 0,   dkv = q^T g,
//   dk = (v' dkv^T) where the keys > 0,    dv = k dkv[:, :d].
// dx is written, not accumulated. An op of the registry (op_registry.h): each backend registers
// its kernel in its own file.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"
#include "util/check.h"

namespace dlt {

class LinearAttentionOp;

struct LinearAttentionDesc {
  using Op = LinearAttentionOp;
  static constexpr const char* kOp = "linear_attention";
  int64_t n = 1, s = 1;      // images, tokens per image
  int64_t heads = 1, d = 1;  // heads, channels per head of each of the queries, keys and values
  float eps = 1e-5f;         // added to the denominator
  int64_t x_numel() const { return n * s * heads * 3 * d; }
  int64_t y_numel() const { return n * s * heads * d; }
  int64_t kv_numel() const { return n * heads * d * (d + 1); }
  int64_t den_numel() const { return n * heads * s; }
};

class LinearAttentionOp {
 public:
  virtual ~LinearAttentionOp() = default;
  void forward(const Tensor& x, Tensor& y, Tensor& kv, Tensor& den) {
    check(x, desc_.x_numel(), "x");
    check(y, desc_.y_numel(), "y");
    check(kv, desc_.kv_numel(), "kv");
    check(den, desc_.den_numel(), "den");
    do_forward(x, y, kv, den);
  }
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& kv, const Tensor& den, Tensor& dx) {
    check(x, desc_.x_numel(), "x");
    check(y, desc_.y_numel(), "y");
    check(dy, desc_.y_numel(), "dy");
    check(kv, desc_.kv_numel(), "kv");
    check(den, desc_.den_numel(), "den");
    check(dx, desc_.x_numel(), "dx");
    do_backward(x, y, dy, kv, den, dx);
  }
  const LinearAttentionDesc& desc() const { return desc_; }

 protected:
  LinearAttentionOp(const LinearAttentionDesc& d, Device device) : desc_(d), device_(device) {
    DLT_CHECK(d.n >= 1 && d.s >= 1 && d.heads >= 1 && d.d >= 1 && d.eps >= 0.f,
              "linear attention: n " << d.n << ", tokens " << d.s << ", heads " << d.heads << ", channels per head "
                                     << d.d << " must be at least 1 and eps " << d.eps << " not negative");
  }
  virtual void do_forward(const Tensor& x, Tensor& y, Tensor& kv, Tensor& den) = 0;
  virtual void do_backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& kv, const Tensor& den,
                           Tensor& dx) = 0;

 private:
  void check(const Tensor& t, int64_t numel, const char* what) const {
    DLT_CHECK(t.defined() && t.device() == device_ && t.numel() == numel,
              "linear attention: " << what << " must be " << numel << " values on " << device_.str() << " (got "
                                   << (t.defined() ? t.numel() : 0) << ")");
  }
  LinearAttentionDesc desc_;
  Device device_;
};

}  // namespace dlt
