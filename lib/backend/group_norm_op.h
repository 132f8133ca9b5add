// Group normalization (MATLAB's groupNormalizationLayer and instanceNormalizationLayer, PyTorch's
// GroupNorm and InstanceNorm2d with affine) on NHWC tensors x (n, pixels, c): the c channels are
// `groups` contiguous blocks of c / groups; per image and group g the mean and the biased
// variance over its pixels and channels (pixels * c / groups values), then
//   y = (x - mean) / sqrt(var + epsilon) * scale[ch] + offset[ch]   (scale, offset: c each).
// groups 1 is layer normalization over (H, W, C); groups = c is instance normalization.
// Training writes mean and var (n * groups, image-major), which backward reads:
//   dx = rstd (g - mean(g) - xhat mean(g xhat)) over the group, g = dy scale[ch],
//   dscale[ch] = the sum of dy xhat over images and pixels, doffset[ch] = the sum of dy.
// An op of the registry (op_registry.h): each backend registers its kernel in its own file.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"
#include "util/check.h"

namespace dlt {

class GroupNormOp;

struct GroupNormDesc {
  using Op = GroupNormOp;
  static constexpr const char* kOp = "group_norm";
  int64_t n = 1, pixels = 1, c = 1, groups = 1;
  float epsilon = 1e-5f;
  int64_t numel() const { return n * pixels * c; }
  int64_t stats() const { return n * groups; }
  int64_t group_channels() const { return c / groups; }
};

class GroupNormOp {
 public:
  virtual ~GroupNormOp() = default;
  void forward_training(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor& mean,
                        Tensor& var) {
    data(x, "x");
    data(y, "y");
    params(scale, offset);
    stats(mean, "mean");
    stats(var, "var");
    do_forward(x, scale, offset, y, &mean, &var);
  }
  void forward_inference(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y) {
    data(x, "x");
    data(y, "y");
    params(scale, offset);
    do_forward(x, scale, offset, y, nullptr, nullptr);
  }
  // dx (written) through the group statistics; dscale and doffset (written) may be undefined
  // (frozen learnables).
  void backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean, const Tensor& var,
                Tensor& dx, Tensor& dscale, Tensor& doffset) {
    data(x, "x");
    data(dy, "dy");
    data(dx, "dx");
    params(scale, scale);
    stats(mean, "mean");
    stats(var, "var");
    if (dscale.defined()) check(dscale, desc_.c, "dscale");
    if (doffset.defined()) check(doffset, desc_.c, "doffset");
    do_backward(x, dy, scale, mean, var, dx, dscale, doffset);
  }
  const GroupNormDesc& desc() const { return desc_; }

 protected:
  GroupNormOp(const GroupNormDesc& d, Device device) : desc_(d), device_(device) {
    DLT_CHECK(d.n >= 1 && d.pixels >= 1 && d.c >= 1 && d.groups >= 1 && d.c % d.groups == 0,
              "group normalization: " << d.c << " channels in " << d.groups << " groups (n " << d.n << ", pixels "
                                      << d.pixels << "): the groups must divide the channels, every size at least 1");
    DLT_CHECK(d.epsilon > 0.f, "group normalization: epsilon " << d.epsilon << " must be positive");
  }
  // mean and var null: inference (the statistics are not kept).
  virtual void do_forward(const Tensor& x, const Tensor& scale, const Tensor& offset, Tensor& y, Tensor* mean,
                          Tensor* var) = 0;
  virtual void do_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean,
                           const Tensor& var, Tensor& dx, Tensor& dscale, Tensor& doffset) = 0;

 private:
  void data(const Tensor& t, const char* what) const { check(t, desc_.numel(), what); }
  void stats(const Tensor& t, const char* what) const { check(t, desc_.stats(), what); }
  void params(const Tensor& scale, const Tensor& offset) const {
    check(scale, desc_.c, "scale");
    check(offset, desc_.c, "offset");
  }
  void check(const Tensor& t, int64_t numel, const char* what) const {
    DLT_CHECK(t.defined() && t.device() == device_ && t.numel() == numel,
              "group normalization: " << what << " must be " << numel << " values on " << device_.str() << " (got "
                                      << (t.defined() ? t.numel() : 0) << ")");
  }
  GroupNormDesc desc_;
  Device device_;
};

}  // namespace dlt
