// Two data-movement ops of the token layers (layers/token_layers.cpp), ops of the registry
// (op_registry.h): each backend registers its kernels in its own file.
//
// Batch broadcast (positionEmbedding's table, embeddingConcatenation's class token): tensors of
// `rows` rows of `length` values (rows = the batch), and one row b of `length` values:
//   add:  y[r, :] = x[r, :] + b   (x undefined: y[r, :] = b; y may be x),
//   sum:  db = sum over r of dy[r, :]   (b's gradient; written, not accumulated).
//
// Spatial transpose (patchEmbedding's column-major token order): x (n, h, w, c) to
// y (n, w, h, c), y[n, j, i, :] = x[n, i, j, :]; the backward is the transpose back.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"
#include "util/check.h"

namespace dlt {

class BatchBroadcastOp;
class SpatialTransposeOp;

struct BatchBroadcastDesc {
  using Op = BatchBroadcastOp;
  static constexpr const char* kOp = "batch_broadcast";
  int64_t rows = 1, length = 1;
};

class BatchBroadcastOp {
 public:
  virtual ~BatchBroadcastOp() = default;
  void add(const Tensor& x, const Tensor& b, Tensor& y) {
    if (x.defined()) check(x, desc_.rows * desc_.length, "x");
    check(b, desc_.length, "b");
    check(y, desc_.rows * desc_.length, "y");
    do_add(x.defined() ? &x : nullptr, b, y);
  }
  void sum(const Tensor& dy, Tensor& db) {
    check(dy, desc_.rows * desc_.length, "dy");
    check(db, desc_.length, "db");
    do_sum(dy, db);
  }
  const BatchBroadcastDesc& desc() const { return desc_; }

 protected:
  BatchBroadcastOp(const BatchBroadcastDesc& d, Device device) : desc_(d), device_(device) {
    DLT_CHECK(d.rows >= 1 && d.length >= 1,
              "batch broadcast: rows " << d.rows << " and length " << d.length << " must be at least 1");
  }
  virtual void do_add(const Tensor* x, const Tensor& b, Tensor& y) = 0;
  virtual void do_sum(const Tensor& dy, Tensor& db) = 0;

 private:
  void check(const Tensor& t, int64_t numel, const char* what) const {
    DLT_CHECK(t.defined() && t.device() == device_ && t.numel() == numel,
              "batch broadcast: " << what << " must be " << numel << " values on " << device_.str() << " (got "
                                  << (t.defined() ? t.numel() : 0) << ")");
  }
  BatchBroadcastDesc desc_;
  Device device_;
};

struct SpatialTransposeDesc {
  using Op = SpatialTransposeOp;
  static constexpr const char* kOp = "spatial_transpose";
  int64_t n = 1, h = 1, w = 1, c = 1;  // input
  int64_t numel() const { return n * h * w * c; }
};

class SpatialTransposeOp {
 public:
  virtual ~SpatialTransposeOp() = default;
  // y (n, w, h, c) from x (n, h, w, c).
  void forward(const Tensor& x, Tensor& y) {
    check(x, "x");
    check(y, "y");
    do_run(x, y, false);
  }
  // dx (n, h, w, c) from dy (n, w, h, c).
  void backward(const Tensor& dy, Tensor& dx) {
    check(dy, "dy");
    check(dx, "dx");
    do_run(dy, dx, true);
  }
  const SpatialTransposeDesc& desc() const { return desc_; }

 protected:
  SpatialTransposeOp(const SpatialTransposeDesc& d, Device device) : desc_(d), device_(device) {
    DLT_CHECK(d.n >= 1 && d.h >= 1 && d.w >= 1 && d.c >= 1, "spatial transpose: every size must be at least 1");
  }
  // back: from (n, w, h, c) to (n, h, w, c).
  virtual void do_run(const Tensor& from, Tensor& to, bool back) = 0;

 private:
  void check(const Tensor& t, const char* what) const {
    DLT_CHECK(t.defined() && t.device() == device_ && t.numel() == desc_.numel(),
              "spatial transpose: " << what << " must be " << desc_.numel() << " values on " << device_.str());
  }
  SpatialTransposeDesc desc_;
  Device device_;
};

}  // namespace dlt
