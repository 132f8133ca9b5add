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
//
// Row gather (windowAttention's window partition and its reverse, its relative position table
// spread to the dense bias): n blocks of rows_in rows of `cols` values to n blocks of rows_out
// rows by one index per output row, the same for every block:
//   forward:  y[b, r, :] = index[r] >= 0 ? x[b, index[r], :] : 0,
//   backward: dx[b, s, :] = sum over the rows r with index[r] == s of dy[b, r, :] (in r's order;
//             written, not accumulated; 0 for a row no index names).
//
// Head normalize (windowAttention's cosine attention, Swin V2's): `rows` rows of `heads` groups
// of `dim` values; each group scaled to unit length (its L2 norm at least kEps, as PyTorch's
// F.normalize) and, with a logit scale t (one value per head), times s[h] = exp(min(t[h],
// max_log_scale)):
//   forward:  y[r, h, :] = s[h] x[r, h, :] / max(|x[r, h, :]|, kEps),
//   backward: dx from x and dy (dx may be x or dy: each group is read before it is written) and
//             dt[h] = s[h] sum over r of dy[r, h, :] . x[r, h, :] / max(|x[r, h, :]|, kEps) where
//             t[h] < max_log_scale, else 0 (written, not accumulated).
//
// Rotary position embedding (RoPE: EVA-02's, LLaMA's; selfAttention's RotaryEmbedding) of the
// queries or keys: n sequences of seq tokens, each token `heads` groups of `dim` channels. The
// tokens from `prefix` on (those before it, a class token, are copied) rotate each pair (a, b)
// of channels of every group, channels (2i, 2i + 1) (interleaved: timm's rot, EVA-02's) or
// (i, i + dim / 2) (half: rotate_half, LLaMA's), by its row of the tables: with
// c = cos[t - prefix, i], s = sin[t - prefix, i] (cos and sin (seq - prefix, dim / 2), any
// values: a rotation where c^2 + s^2 = 1; with table_heads = heads a table per head, (heads,
// seq - prefix, dim / 2): RoPE-Mixed's),
//   forward:  y_a = a c - b s,   y_b = b c + a s,
//   backward: dx_a = dy_a c + dy_b s,   dx_b = dy_b c - dy_a s   (the transposed rotation; dx may
//             be dy, y may be x).
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"
#include "util/check.h"

namespace dlt {

class BatchBroadcastOp;
class SpatialTransposeOp;
class RowGatherOp;
class HeadNormalizeOp;
class RotaryOp;

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

struct RowGatherDesc {
  using Op = RowGatherOp;
  static constexpr const char* kOp = "row_gather";
  int64_t n = 1, rows_in = 1, rows_out = 1, cols = 1;
  std::vector<int64_t> index;  // rows_out entries, each -1 (a zero row) or in [0, rows_in)
};

class RowGatherOp {
 public:
  virtual ~RowGatherOp() = default;
  void forward(const Tensor& x, Tensor& y) {
    check(x, desc_.rows_in, "x");
    check(y, desc_.rows_out, "y");
    do_forward(x, y);
  }
  void backward(const Tensor& dy, Tensor& dx) {
    check(dy, desc_.rows_out, "dy");
    check(dx, desc_.rows_in, "dx");
    do_backward(dy, dx);
  }
  const RowGatherDesc& desc() const { return desc_; }

 protected:
  RowGatherOp(const RowGatherDesc& d, Device device) : desc_(d), device_(device) {
    DLT_CHECK(d.n >= 1 && d.rows_in >= 1 && d.rows_out >= 1 && d.cols >= 1,
              "row gather: every size must be at least 1");
    DLT_CHECK(static_cast<int64_t>(d.index.size()) == d.rows_out,
              "row gather: " << d.index.size() << " indices for " << d.rows_out << " rows");
    for (int64_t i : d.index)
      DLT_CHECK(i >= -1 && i < d.rows_in, "row gather: index " << i << " outside [-1, " << d.rows_in << ")");
  }
  // The rows r of each input row s, in r's order (CSR: rows [starts[s], starts[s + 1]) of
  // `sources`), for the backward.
  void inverse(std::vector<int64_t>& starts, std::vector<int64_t>& sources) const {
    starts.assign(static_cast<size_t>(desc_.rows_in + 1), 0);
    for (int64_t i : desc_.index)
      if (i >= 0) ++starts[static_cast<size_t>(i + 1)];
    for (size_t s = 1; s < starts.size(); ++s) starts[s] += starts[s - 1];
    sources.assign(static_cast<size_t>(starts.back()), 0);
    std::vector<int64_t> next(starts.begin(), starts.end() - 1);
    for (int64_t r = 0; r < desc_.rows_out; ++r) {
      const int64_t i = desc_.index[static_cast<size_t>(r)];
      if (i >= 0) sources[static_cast<size_t>(next[static_cast<size_t>(i)]++)] = r;
    }
  }
  virtual void do_forward(const Tensor& x, Tensor& y) = 0;
  virtual void do_backward(const Tensor& dy, Tensor& dx) = 0;

 private:
  void check(const Tensor& t, int64_t rows, const char* what) const {
    const int64_t numel = desc_.n * rows * desc_.cols;
    DLT_CHECK(t.defined() && t.device() == device_ && t.numel() == numel,
              "row gather: " << what << " must be " << numel << " values on " << device_.str() << " (got "
                             << (t.defined() ? t.numel() : 0) << ")");
  }
  RowGatherDesc desc_;
  Device device_;
};

// Each group of `dim` values divided by its L2 norm (at least kEps) and multiplied by its head's
// factor: x (rows, heads, per_head, dim), the factor of head h exp(min(t[h], max_log_scale))
// (Swin V2's cosine attention's logit scale) or, linear, t[h] itself (XCiT's temperature); 1
// without t.
struct HeadNormalizeDesc {
  using Op = HeadNormalizeOp;
  static constexpr const char* kOp = "head_normalize";
  static constexpr float kEps = 1e-12f;
  int64_t rows = 1, heads = 1, dim = 1;
  double max_log_scale = 4.605170185988091;  // log(100), Swin V2's clamp
  int64_t per_head = 1;                      // groups of dim values per head
  bool linear = false;                       // the factor is t itself, not exp(min(t, max_log_scale))
  int64_t numel() const { return rows * heads * per_head * dim; }
};

class HeadNormalizeOp {
 public:
  virtual ~HeadNormalizeOp() = default;
  // t: the logit scale (heads values), undefined for none (s = 1).
  void forward(const Tensor& x, const Tensor& t, Tensor& y) {
    check(x, desc_.numel(), "x");
    check(y, desc_.numel(), "y");
    if (t.defined()) check(t, desc_.heads, "t");
    do_forward(x, t.defined() ? &t : nullptr, y);
  }
  // dt: null when t is undefined or its gradient is not wanted.
  void backward(const Tensor& x, const Tensor& t, const Tensor& dy, Tensor& dx, Tensor* dt) {
    check(x, desc_.numel(), "x");
    check(dy, desc_.numel(), "dy");
    check(dx, desc_.numel(), "dx");
    if (t.defined()) check(t, desc_.heads, "t");
    DLT_CHECK(!dt || t.defined(), "head normalize: a logit scale gradient without a logit scale");
    if (dt) check(*dt, desc_.heads, "dt");
    do_backward(x, t.defined() ? &t : nullptr, dy, dx, dt);
  }
  const HeadNormalizeDesc& desc() const { return desc_; }

 protected:
  HeadNormalizeOp(const HeadNormalizeDesc& d, Device device) : desc_(d), device_(device) {
    DLT_CHECK(d.rows >= 1 && d.heads >= 1 && d.dim >= 1 && d.per_head >= 1,
              "head normalize: every size must be at least 1");
  }
  virtual void do_forward(const Tensor& x, const Tensor* t, Tensor& y) = 0;
  virtual void do_backward(const Tensor& x, const Tensor* t, const Tensor& dy, Tensor& dx, Tensor* dt) = 0;

 private:
  void check(const Tensor& t, int64_t numel, const char* what) const {
    DLT_CHECK(t.defined() && t.device() == device_ && t.numel() == numel,
              "head normalize: " << what << " must be " << numel << " values on " << device_.str() << " (got "
                                 << (t.defined() ? t.numel() : 0) << ")");
  }
  HeadNormalizeDesc desc_;
  Device device_;
};

struct RotaryDesc {
  using Op = RotaryOp;
  static constexpr const char* kOp = "rotary";
  int64_t n = 1, seq = 1, heads = 1, dim = 2;
  int64_t prefix = 0;  // tokens copied, not rotated
  bool half = false;   // pairs (i, i + dim / 2), not (2i, 2i + 1)
  int64_t table_heads = 1;  // 1: one table for every head; heads: one per head
  int64_t numel() const { return n * seq * heads * dim; }
  int64_t table_numel() const { return table_heads * (seq - prefix) * (dim / 2); }
};

class RotaryOp {
 public:
  virtual ~RotaryOp() = default;
  void forward(const Tensor& x, const Tensor& cos, const Tensor& sin, Tensor& y) {
    check(x, desc_.numel(), "x");
    check(y, desc_.numel(), "y");
    check(cos, desc_.table_numel(), "cos");
    check(sin, desc_.table_numel(), "sin");
    do_run(x, cos, sin, y, false);
  }
  void backward(const Tensor& dy, const Tensor& cos, const Tensor& sin, Tensor& dx) {
    check(dy, desc_.numel(), "dy");
    check(dx, desc_.numel(), "dx");
    check(cos, desc_.table_numel(), "cos");
    check(sin, desc_.table_numel(), "sin");
    do_run(dy, cos, sin, dx, true);
  }
  const RotaryDesc& desc() const { return desc_; }

 protected:
  RotaryOp(const RotaryDesc& d, Device device) : desc_(d), device_(device) {
    DLT_CHECK(d.n >= 1 && d.seq >= 1 && d.heads >= 1 && d.dim >= 2 && d.dim % 2 == 0,
              "rotary: sizes must be at least 1 and dim even (n " << d.n << ", seq " << d.seq << ", heads " << d.heads
                                                                  << ", dim " << d.dim << ")");
    DLT_CHECK(d.prefix >= 0 && d.prefix < d.seq,
              "rotary: prefix " << d.prefix << " must leave tokens to rotate of " << d.seq);
    DLT_CHECK(d.table_heads == 1 || d.table_heads == d.heads,
              "rotary: " << d.table_heads << " tables for " << d.heads << " heads (1 or one per head)");
  }
  // back: the transposed rotation (the backward).
  virtual void do_run(const Tensor& x, const Tensor& cos, const Tensor& sin, Tensor& y, bool back) = 0;

 private:
  void check(const Tensor& t, int64_t numel, const char* what) const {
    DLT_CHECK(t.defined() && t.device() == device_ && t.numel() == numel,
              "rotary: " << what << " must be " << numel << " values on " << device_.str() << " (got "
                         << (t.defined() ? t.numel() : 0) << ")");
  }
  RotaryDesc desc_;
  Device device_;
};

}  // namespace dlt
