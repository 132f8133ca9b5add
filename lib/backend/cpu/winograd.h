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
// Scratch lives only during a call and is shared by all instances (winograd.cpp,
// WinogradScratch).
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace dlt::cpu {

struct WinogradScratch;  // winograd.cpp: buffers shared by every WinogradConv while a call runs

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

  // y (n, oh, ow, k) = conv(x, w) + bias (when not null), then max(0, .) when relu; every
  // element of y is written. adjoint = false: w is (k, 3, 3, c) (OHWI). adjoint = true: w is
  // the (c, 3, 3, k) filter of the convolution whose data gradient this one computes (its
  // input channels are this one's outputs), used rotated by 180 degrees with the channel
  // roles swapped.
  void forward(const float* x, const float* w, bool adjoint, const float* bias, bool relu, float* y) const;
  // The gradients of forward(adjoint = false) for input x and output gradient dy:
  // dw (k, 3, 3, c) = G^T [sum over tiles of (B^T x B) . (A dy A^T)] G, and db (k) = the sum
  // of dy (when db is not null). Both are overwritten. One of the two paths below: blocks
  // while a sum per thread takes at most 64 MiB in all, chunks beyond.
  void backward_weights(const float* x, const float* dy, float* dw, float* db) const;
  // Per-thread blocks of tiles (as forward) summed into a 36 x k x c buffer per thread, added
  // in thread order: cache-resident, the same bits on every run at a thread count.
  void backward_weights_blocks(const float* x, const float* dy, float* dw, float* db) const;
  // Chunks of tiles (choose_chunk): transforms across threads, then the 36 products across
  // threads, one sum in all: less memory, more traffic; the same bits on any thread count.
  void backward_weights_chunks(const float* x, const float* dy, float* dw, float* db) const;

  // Tiles per forward block for this many tiles and threads; DLT_WINOGRAD_BLOCK lowers the
  // most (64).
  static int64_t choose_block(int64_t tiles, int threads);
  // Tiles per weight-gradient chunk (independent of the thread count).
  static int64_t choose_chunk(int64_t tiles, int64_t c, int64_t k);

 private:
  WinogradShape s_;
  float at_[6][6] = {}, bt_[6][6] = {}, g_[6][6] = {};
  int64_t tiles_h_ = 0, tiles_w_ = 0, tiles_ = 0;
  // Output tile `tile` (tiles run over images, then rows, then columns of tiles): its image, its
  // first output row and column, and how many of its 4 x 4 outputs lie inside the output.
  struct Tile {
    int64_t n = 0, y0 = 0, x0 = 0;
    int rows = 0, cols = 0;
  };
  Tile tile_at(int64_t tile) const;
  // Input transform of tiles [t0, t0 + tn) into v ([xi][tile][c], ld floats between xi; v
  // points at tile t0's slot).
  void transform_inputs(int64_t t0, int64_t tn, const float* x, float* v, int64_t ld) const;
  // A dy A^T of tiles [t0, t0 + tn) into dm ([xi][tile][k], ld between xi).
  void transform_output_grads(int64_t t0, int64_t tn, const float* dy, float* dm, int64_t ld) const;
  // db = the sum of dy's rows (per-thread ranges, added in thread order).
  void sum_rows(const float* dy, float* db, WinogradScratch& sc) const;
  // Forward of tiles [t0, t0 + tn) on the calling thread with filters u, in buf (a block of bt
  // tiles); false when sgemm failed.
  bool process_block(int64_t t0, int64_t tn, int64_t bt, const float* u, float* buf, const float* x, const float* bias,
                     bool relu, float* y) const;
};

}  // namespace dlt::cpu
