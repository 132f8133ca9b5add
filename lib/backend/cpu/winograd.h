// Winograd convolution F(4x4, 3x3) on NHWC float32 tensors, for CPUs where oneDNN 2.6 has
// none (below avx512_core; its jit_wino_4x3 needs AVX-512). Each output tile of 4 x 4 pixels
// comes from a 6 x 6 input tile: the input tiles and the filters are transformed, multiplied
// channel by channel as 36 independent matrix products (oneDNN's sgemm does all the
// multiply-adds), and transformed back: 36 multiplies per tile and channel pair where direct
// convolution does 144.
//
// The transforms are the only arithmetic written here: O(a^2) adds per tile and channel,
// vectorized over channels (NHWC keeps them contiguous), compiled for AVX2 + FMA. Tiles are
// processed in blocks per thread, so a block's transformed inputs and products stay in cache.
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace dlt::cpu {

// The transforms of the 1-D F(m, r): the correlation y_i = sum_k d[i + k] g[k] (i < m, k < r)
// of a tile d of a = m + r - 1 inputs is y = A^T [(G g) . (B^T d)], and the 2-D one
// Y = A^T [(G g G^T) . (B^T d B)] A. Toom-Cook from the points 0, 1, -1, 2, -2, ... and
// infinity: G evaluates the filter at the points (the Lagrange denominators folded in), B^T
// holds the integer coefficients of the products of (x - p) over the other points, A^T the
// powers of the points. Exact in double for the sizes used here.
struct WinogradMatrices {
  static constexpr int kMaxA = 6;
  int m = 0, r = 0, a = 0;
  double at[kMaxA][kMaxA] = {};  // A^T, m x a
  double bt[kMaxA][kMaxA] = {};  // B^T, a x a
  double g[kMaxA][kMaxA] = {};   // G, a x r
};
// m + r - 1 must be 6 (the tile size the kernels are compiled for): F(4, 3) or F(2, 5).
WinogradMatrices winograd_matrices(int m, int r);

// One 3x3, stride-1, dilation-1 convolution as the Winograd kernels see it.
struct WinogradShape {
  int64_t n = 1, h = 1, w = 1, c = 1;  // input, NHWC
  int64_t k = 1;                       // output channels
  int64_t oh = 1, ow = 1;              // output size
  int64_t pad_t = 0, pad_l = 0;        // output (0, 0)'s window starts at input (-pad_t, -pad_l)
};

class WinogradConv {
 public:
  explicit WinogradConv(const WinogradShape& s);

  // Transforms the filters for run(). adjoint = false: w is (k, 3, 3, c) (OHWI). adjoint = true:
  // w is the (c, 3, 3, k) filter of the convolution whose data gradient this one computes
  // (its input channels are this one's outputs): it is used rotated by 180 degrees with the
  // channel roles swapped.
  void set_filters(const float* w, bool adjoint);
  // y (n, oh, ow, k) = conv(x, filters) + bias (when not null), then max(0, .) when relu.
  // Every element of y is written.
  void run(const float* x, const float* bias, bool relu, float* y);
  // The gradients of the forward convolution (adjoint = false) for input x and output
  // gradient dy: dw (k, 3, 3, c) = G^T [sum over tiles of (B^T x B) . (A dy A^T)] G, and
  // db (k) = the sum of dy (when db is not null). Both are overwritten.
  void backward_weights(const float* x, const float* dy, float* dw, float* db);

  int64_t tiles() const { return tiles_; }
  // Tiles per block for this many tiles and threads; DLT_WINOGRAD_BLOCK lowers the most (64).
  static int64_t choose_block(int64_t tiles, int threads);

 private:
  WinogradShape s_;
  float at_[6][6] = {}, bt_[6][6] = {}, g_[6][6] = {};
  int64_t tiles_h_ = 0, tiles_w_ = 0, tiles_ = 0, block_ = 1;  // block_: run()'s
  Tensor u_;                       // transformed filters: 36 x k x c
  Tensor w_adjoint_;               // set_filters(adjoint): the rotated, transposed filter
  std::vector<Tensor> thread_buf_;  // per thread: 36 x block x c inputs, 36 x block x k products
  std::vector<Tensor> du_buf_;      // per thread: 36 x k x c weight-gradient sums
  Tensor db_part_;                  // per thread: k bias-gradient sums
  // db = the sum of dy's rows: per-thread ranges, added in thread order.
  void sum_rows(const float* dy, float* db);
  // Buffers for the current thread count, and the block size.
  void prepare(bool weight_grad);
  // Input transform of tiles [t0, t0 + tn) into v ([xi][tile][c], block_ tiles per xi).
  void transform_inputs(int64_t t0, int64_t tn, const float* x, float* v) const;
  // One block of tiles on the calling thread; false when sgemm failed.
  bool process_block(int64_t block, float* buf, const float* x, const float* bias, bool relu, float* y) const;
  // Adds one block's weight-gradient products to du (or writes them, when first).
  bool accumulate_block(int64_t block, float* buf, const float* x, const float* dy, float* du, bool first) const;
};

}  // namespace dlt::cpu
