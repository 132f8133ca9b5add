// Winograd convolution on NHWC float32 (winograd.h). Forward, per block of tiles on one
// thread: input transform into V (36 matrices of tiles x c), 36 sgemm calls M_xi = V_xi U_xi^T
// (oneDNN's dnnl_sgemm, single-threaded inside the parallel loop), output transform from M
// into y. Blocks are independent of which thread runs them, so runs repeat bit for bit at a
// thread count; the block size follows the thread count, and another row count may make
// sgemm sum in another order (1 and 2 threads agree to rounding). Weight gradient: per-thread
// blocks with a sum per thread while those sums are small (backward_weights_blocks), else
// chunks of tiles with the 36 products across threads (backward_weights_chunks).
#include "backend/cpu/winograd.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "util/check.h"
#include "util/env.h"

namespace dlt::cpu {
namespace {

constexpr int kA = 6;  // input tile
constexpr int kM = 4;  // output tile
constexpr int kR = 3;  // filter
constexpr int kXi = kA * kA;
constexpr int kChunk = 64;         // channels per transform pass (its buffers stay in L1)
constexpr int64_t kMaxBlock = 64;  // tiles per block
// backward_weights keeps a weight-gradient sum per thread (the fast path: every block stays in
// cache) while those sums take at most this much memory; beyond it, the chunked path.
constexpr int64_t kPerThreadSumsBytes = int64_t{64} << 20;

// Coefficients of prod (x - p) over the given points, lowest degree first.
std::vector<double> poly_from_roots(const std::vector<double>& roots) {
  std::vector<double> c{1.0};
  for (double p : roots) {
    std::vector<double> n(c.size() + 1, 0.0);
    for (size_t i = 0; i < c.size(); ++i) {
      n[i + 1] += c[i];
      n[i] -= p * c[i];
    }
    c = n;
  }
  return c;
}

// The input transform of one tile for channels [0, cs): v[xi][c] (stride vs between xi) from
// the a x a window whose pixels start at src[i][j] (null: outside the image, zeros).
[[gnu::target("avx2,fma")]] void input_tile(const float (&bt)[6][6], const float* (&src)[kA][kA], int cs, float* v,
                                            int64_t vs) {
  alignas(64) float d[kA][kA][kChunk];
  alignas(64) float t[kA][kA][kChunk];
  for (int i = 0; i < kA; ++i)
    for (int j = 0; j < kA; ++j) {
      if (src[i][j])
        std::memcpy(d[i][j], src[i][j], sizeof(float) * cs);
      else
        std::memset(d[i][j], 0, sizeof(float) * cs);
    }
  for (int i = 0; i < kA; ++i)
    for (int j = 0; j < kA; ++j) {
      float* o = t[i][j];
      for (int c = 0; c < cs; ++c) o[c] = 0.f;
      for (int q = 0; q < kA; ++q) {
        const float b = bt[i][q];
        if (b == 0.f) continue;
        const float* in = d[q][j];
        for (int c = 0; c < cs; ++c) o[c] += b * in[c];
      }
    }
  for (int i = 0; i < kA; ++i)
    for (int j = 0; j < kA; ++j) {
      float* o = v + (i * kA + j) * vs;
      alignas(64) float acc[kChunk];
      for (int c = 0; c < cs; ++c) acc[c] = 0.f;
      for (int q = 0; q < kA; ++q) {
        const float b = bt[j][q];
        if (b == 0.f) continue;
        const float* in = t[i][q];
        for (int c = 0; c < cs; ++c) acc[c] += b * in[c];
      }
      std::memcpy(o, acc, sizeof(float) * cs);
    }
}

// The output transform of one tile for channels [0, ks): from mm[xi] (stride ms between xi)
// to the rows x cols valid outputs at y (rows of stride ys, pixels of stride k_total).
[[gnu::target("avx2,fma")]] void output_tile(const float (&at)[6][6], const float* mm, int64_t ms, int ks,
                                             const float* bias, bool relu, float* y, int64_t ys, int64_t ps, int rows,
                                             int cols) {
  alignas(64) float t[kM][kA][kChunk];
  for (int i = 0; i < kM; ++i)
    for (int j = 0; j < kA; ++j) {
      float* o = t[i][j];
      for (int c = 0; c < ks; ++c) o[c] = 0.f;
      for (int q = 0; q < kA; ++q) {
        const float a = at[i][q];
        if (a == 0.f) continue;
        const float* in = mm + (q * kA + j) * ms;
        for (int c = 0; c < ks; ++c) o[c] += a * in[c];
      }
    }
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      alignas(64) float acc[kChunk];
      if (bias)
        for (int c = 0; c < ks; ++c) acc[c] = bias[c];
      else
        for (int c = 0; c < ks; ++c) acc[c] = 0.f;
      for (int q = 0; q < kA; ++q) {
        const float a = at[j][q];
        if (a == 0.f) continue;
        const float* in = t[i][q];
        for (int c = 0; c < ks; ++c) acc[c] += a * in[c];
      }
      float* o = y + i * ys + j * ps;
      if (relu)
        for (int c = 0; c < ks; ++c) o[c] = acc[c] > 0.f ? acc[c] : 0.f;
      else
        for (int c = 0; c < ks; ++c) o[c] = acc[c];
    }
}

// The adjoint of output_tile for channels [0, ks): dm[xi] (stride ms between xi) = (A dY A^T)
// of the rows x cols valid output gradients at dy (zero past them).
[[gnu::target("avx2,fma")]] void output_grad_tile(const float (&at)[6][6], const float* dy, int64_t ys, int64_t ps,
                                                  int rows, int cols, int ks, float* dm, int64_t ms) {
  alignas(64) float t[kM][kA][kChunk];  // t[i][q] = sum_j dY[i][j] A^T[j][q]
  for (int i = 0; i < kM; ++i)
    for (int q = 0; q < kA; ++q) {
      float* o = t[i][q];
      for (int c = 0; c < ks; ++c) o[c] = 0.f;
      if (i >= rows) continue;
      for (int j = 0; j < cols; ++j) {
        const float a = at[j][q];
        if (a == 0.f) continue;
        const float* in = dy + i * ys + j * ps;
        for (int c = 0; c < ks; ++c) o[c] += a * in[c];
      }
    }
  for (int p = 0; p < kA; ++p)
    for (int q = 0; q < kA; ++q) {
      alignas(64) float acc[kChunk];
      for (int c = 0; c < ks; ++c) acc[c] = 0.f;
      for (int i = 0; i < rows; ++i) {
        const float a = at[i][p];
        if (a == 0.f) continue;
        const float* in = t[i][q];
        for (int c = 0; c < ks; ++c) acc[c] += a * in[c];
      }
      std::memcpy(dm + (p * kA + q) * ms, acc, sizeof(float) * ks);
    }
}

// Strides, in floats, of a filter-shaped array's rows of input channels: per output channel o
// and per index pair (a, b).
struct FilterStrides {
  int64_t o, a, b;
};

// The filter transform and its adjoint, one function: for every output channel o and input
// channel, out[p][q] = sum over a, b < RI of L[p][a] L[q][b] in[a][b] (p, q < RO). Forward:
// L = G (RO = 6, RI = 3), a 3x3 filter to its 36 tile positions, u = G w G^T. Adjoint (the
// weight gradient): L = G^T (RO = 3, RI = 6), dw = G^T du G. Rows of `ins` channels at
// in + o * is.o + a * is.a + b * is.b, out likewise with os.
template <int RO, int RI, bool kTransposed>
[[gnu::target("avx2,fma")]] void filter_sandwich(const float (&g)[6][6], const float* in, FilterStrides is, float* out,
                                                 FilterStrides os, int64_t outs, int64_t ins) {
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < outs; ++o) {
    alignas(64) float t[RO][RI][kChunk];  // t[p][b] = sum over a of L[p][a] in[a][b]
    alignas(64) float acc[kChunk];
    for (int64_t i0 = 0; i0 < ins; i0 += kChunk) {
      const int cs = static_cast<int>(std::min<int64_t>(kChunk, ins - i0));
      for (int p = 0; p < RO; ++p)
        for (int b = 0; b < RI; ++b) {
          float* tt = t[p][b];
          for (int c = 0; c < cs; ++c) tt[c] = 0.f;
          for (int a = 0; a < RI; ++a) {
            const float l = kTransposed ? g[a][p] : g[p][a];
            if (l == 0.f) continue;
            const float* src = in + o * is.o + a * is.a + b * is.b + i0;
            for (int c = 0; c < cs; ++c) tt[c] += l * src[c];
          }
        }
      for (int p = 0; p < RO; ++p)
        for (int q = 0; q < RO; ++q) {
          for (int c = 0; c < cs; ++c) acc[c] = 0.f;
          for (int b = 0; b < RI; ++b) {
            const float l = kTransposed ? g[b][q] : g[q][b];
            if (l == 0.f) continue;
            const float* src = t[p][b];
            for (int c = 0; c < cs; ++c) acc[c] += l * src[c];
          }
          std::memcpy(out + o * os.o + p * os.a + q * os.b + i0, acc, sizeof(float) * cs);
        }
    }
  }
}

// u[xi][o][i] (xi = 36 tile positions) = (G w[o, :, :, i] G^T)[xi]; w is (outs, 3, 3, ins).
void filter_transform(const float (&g)[6][6], const float* w, int64_t outs, int64_t ins, float* u) {
  filter_sandwich<kA, kR, false>(g, w, {kR * kR * ins, kR * ins, ins}, u, {ins, kA * outs * ins, outs * ins}, outs,
                                 ins);
}

// The adjoint: dw[o][a][b][i] = (G^T du[:, o, i] G)[a][b], du as u.
void filter_grad_transform(const float (&g)[6][6], const float* du, int64_t outs, int64_t ins, float* dw) {
  filter_sandwich<kR, kA, true>(g, du, {ins, kA * outs * ins, outs * ins}, dw, {kR * kR * ins, kR * ins, ins}, outs,
                                ins);
}

}  // namespace

WinogradMatrices winograd_matrices(int m, int r) {
  WinogradMatrices w;
  w.m = m, w.r = r, w.a = m + r - 1;
  DLT_CHECK(w.a == kA && m >= 1 && r >= 1, "winograd: F(" << m << ", " << r << ") is not a 6x6-tile transform");
  const double kPoints[] = {0.0, 1.0, -1.0, 2.0, -2.0};
  const int finite = w.a - 1;  // the last point is infinity
  std::vector<double> p(kPoints, kPoints + finite);
  for (int q = 0; q < finite; ++q) {
    std::vector<double> others;
    double f = 1.0;
    for (int l = 0; l < finite; ++l)
      if (l != q) {
        others.push_back(p[l]);
        f *= p[q] - p[l];
      }
    const std::vector<double> coeff = poly_from_roots(others);  // degree a - 2
    for (int j = 0; j < w.a; ++j) w.bt[q][j] = j < static_cast<int>(coeff.size()) ? coeff[j] : 0.0;
    for (int k = 0; k < r; ++k) w.g[q][k] = std::pow(p[q], k) / f;
    for (int i = 0; i < m; ++i) w.at[i][q] = std::pow(p[q], i);
  }
  const std::vector<double> all = poly_from_roots(p);  // degree a - 1: the row of infinity
  for (int j = 0; j < w.a; ++j) w.bt[finite][j] = all[j];
  w.g[finite][r - 1] = 1.0;
  w.at[m - 1][finite] = 1.0;
  return w;
}

// Buffers needed only while a call runs, shared by every WinogradConv of the process (layers
// run one at a time; the mutex keeps two callers apart): transformed filters, per-thread tile
// blocks, the weight gradient's chunk and sums. Each grows to the largest layer's need, so a
// network's Winograd layers cost the largest one's scratch, not the sum of all.
struct WinogradScratch {
  std::mutex mutex;
  Tensor u, w_adjoint, chunk, du, db_part;
  std::vector<Tensor> block;      // per thread: 36 x block x (c + k)
  std::vector<Tensor> du_thread;  // per thread: 36 x k x c (backward_weights_blocks)
  std::vector<float*> du_of;      // du_thread's buffers
};

namespace {

WinogradScratch& scratch() {
  static WinogradScratch s;
  return s;
}

float* at_least(Tensor& t, int64_t n) {
  if (!t.defined() || t.numel() < n) t = Tensor(Shape{n});
  return t.data();
}

// One tile block per thread, each big enough for kMaxBlock tiles of `channels` (c + k) floats
// at each of the 36 positions.
void grow_blocks(WinogradScratch& sc, int threads, int64_t channels) {
  if (static_cast<int>(sc.block.size()) < threads) sc.block.resize(threads);
  for (int t = 0; t < threads; ++t) at_least(sc.block[t], kXi * kMaxBlock * channels);
}

}  // namespace

int64_t WinogradConv::choose_block(int64_t tiles, int threads) {
  // DLT_WINOGRAD_BLOCK (1..kMaxBlock) lowers the cap, for measuring other block sizes.
  const int64_t most = env_int("DLT_WINOGRAD_BLOCK", 1, kMaxBlock).value_or(kMaxBlock);
  // Equal blocks of at most `most` tiles, their count a multiple of the threads (every
  // thread gets the same work). 64 tiles: 36 x 64 x (c + k) floats per thread, 1.2 MiB at 64
  // channels in and out, and sgemm calls of 64 rows; 16 and 128 were slower on ResNet-18
  // (docs/performance.md).
  const int64_t rounds = (tiles + most * threads - 1) / (most * threads);
  const int64_t blocks = std::max<int64_t>(1, rounds * threads);
  return std::max<int64_t>(1, (tiles + blocks - 1) / blocks);
}

int64_t WinogradConv::choose_chunk(int64_t tiles, int64_t c, int64_t k) {
  // About 32 MiB of transformed inputs and output gradients per chunk, at least 64 tiles;
  // equal chunks. Depends on the shape only, so the weight gradient is the same on any number
  // of threads.
  const int64_t most = std::max<int64_t>(64, (int64_t{32} << 20) / (kXi * (c + k) * 4));
  const int64_t chunks = (tiles + most - 1) / most;
  return (tiles + chunks - 1) / chunks;
}

WinogradConv::WinogradConv(const WinogradShape& s) : s_(s) {
  const WinogradMatrices wm = winograd_matrices(kM, kR);
  for (int i = 0; i < kA; ++i)
    for (int j = 0; j < kA; ++j) {
      at_[i][j] = static_cast<float>(wm.at[i][j]);
      bt_[i][j] = static_cast<float>(wm.bt[i][j]);
      g_[i][j] = static_cast<float>(wm.g[i][j]);
    }
  tiles_h_ = (s.oh + kM - 1) / kM;
  tiles_w_ = (s.ow + kM - 1) / kM;
  tiles_ = s.n * tiles_h_ * tiles_w_;
}

WinogradConv::Tile WinogradConv::tile_at(int64_t tile) const {
  const int64_t per_image = tiles_h_ * tiles_w_, rem = tile % per_image;
  Tile t;
  t.n = tile / per_image;
  t.y0 = rem / tiles_w_ * kM;
  t.x0 = rem % tiles_w_ * kM;
  t.rows = static_cast<int>(std::min<int64_t>(kM, s_.oh - t.y0));
  t.cols = static_cast<int>(std::min<int64_t>(kM, s_.ow - t.x0));
  return t;
}

void WinogradConv::transform_inputs(int64_t t0, int64_t tn, const float* x, float* v, int64_t ld) const {
  const int64_t c = s_.c;
  for (int64_t t = 0; t < tn; ++t) {
    const Tile tl = tile_at(t0 + t);
    const int64_t n = tl.n, iy0 = tl.y0 - s_.pad_t, ix0 = tl.x0 - s_.pad_l;
    for (int64_t c0 = 0; c0 < c; c0 += kChunk) {
      const float* src[kA][kA];
      for (int i = 0; i < kA; ++i)
        for (int j = 0; j < kA; ++j) {
          const int64_t yy = iy0 + i, xx = ix0 + j;
          src[i][j] =
              yy >= 0 && yy < s_.h && xx >= 0 && xx < s_.w ? x + ((n * s_.h + yy) * s_.w + xx) * c + c0 : nullptr;
        }
      const int cs = static_cast<int>(std::min<int64_t>(kChunk, c - c0));
      input_tile(bt_, src, cs, v + t * c + c0, ld);
    }
  }
}

bool WinogradConv::process_block(int64_t t0, int64_t tn, int64_t bt, const float* u, float* buf, const float* x,
                                 const float* bias, bool relu, float* y) const {
  const int64_t c = s_.c, k = s_.k;
  float* v = buf;                  // [xi][tile][c]
  float* mm = buf + kXi * bt * c;  // [xi][tile][k]
  transform_inputs(t0, tn, x, v, bt * c);
  for (int xi = 0; xi < kXi; ++xi)
    if (dnnl_sgemm('N', 'T', tn, k, c, 1.f, v + xi * bt * c, c, u + xi * k * c, c, 0.f, mm + xi * bt * k, k) !=
        dnnl_success)
      return false;
  for (int64_t t = 0; t < tn; ++t) {
    const Tile tl = tile_at(t0 + t);
    float* yt = y + ((tl.n * s_.oh + tl.y0) * s_.ow + tl.x0) * k;
    for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
      const int ks = static_cast<int>(std::min<int64_t>(kChunk, k - k0));
      output_tile(at_, mm + t * k + k0, bt * k, ks, bias ? bias + k0 : nullptr, relu, yt + k0, s_.ow * k, k, tl.rows,
                  tl.cols);
    }
  }
  return true;
}

void WinogradConv::forward(const float* x, const float* w, bool adjoint, const float* bias, bool relu, float* y) const {
  WinogradScratch& sc = scratch();
  std::lock_guard<std::mutex> lock(sc.mutex);
  const int64_t outs = s_.k, ins = s_.c;
  const float* src = w;
  if (adjoint) {
    // w is (ins, 3, 3, outs), the forward convolution's (k, 3, 3, c); this one's filter is
    // wt[o][a][b][i] = w[i][2-a][2-b][o].
    float* wt = at_least(sc.w_adjoint, outs * kR * kR * ins);
#pragma omp parallel for schedule(static)
    for (int64_t o = 0; o < outs; ++o)
      for (int64_t a = 0; a < kR; ++a)
        for (int64_t b = 0; b < kR; ++b)
          for (int64_t i = 0; i < ins; ++i)
            wt[((o * kR + a) * kR + b) * ins + i] = w[((i * kR + (kR - 1 - a)) * kR + (kR - 1 - b)) * outs + o];
    src = wt;
  }
  float* u = at_least(sc.u, kXi * outs * ins);
  filter_transform(g_, src, outs, ins, u);

  const int threads = omp_get_max_threads();
  grow_blocks(sc, threads, ins + outs);
  const int64_t bt = choose_block(tiles_, threads), blocks = (tiles_ + bt - 1) / bt;
  bool ok = true;
#pragma omp parallel for schedule(dynamic, 1) reduction(&& : ok)
  for (int64_t b = 0; b < blocks; ++b)
    ok = process_block(b * bt, std::min(bt, tiles_ - b * bt), bt, u, sc.block[omp_get_thread_num()].data(), x, bias,
                       relu, y) &&
         ok;
  DLT_CHECK(ok, "winograd: oneDNN's dnnl_sgemm failed");
}

void WinogradConv::transform_output_grads(int64_t t0, int64_t tn, const float* dy, float* dm, int64_t ld) const {
  const int64_t k = s_.k;
  for (int64_t t = 0; t < tn; ++t) {
    const Tile tl = tile_at(t0 + t);
    const float* dyt = dy + ((tl.n * s_.oh + tl.y0) * s_.ow + tl.x0) * k;
    for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
      const int ks = static_cast<int>(std::min<int64_t>(kChunk, k - k0));
      output_grad_tile(at_, dyt + k0, s_.ow * k, k, tl.rows, tl.cols, ks, dm + t * k + k0, ld);
    }
  }
}

void WinogradConv::backward_weights(const float* x, const float* dy, float* dw, float* db) const {
  const int64_t sums = int64_t{omp_get_max_threads()} * kXi * s_.k * s_.c * 4;
  if (sums <= kPerThreadSumsBytes)
    backward_weights_blocks(x, dy, dw, db);
  else
    backward_weights_chunks(x, dy, dw, db);
}

void WinogradConv::backward_weights_blocks(const float* x, const float* dy, float* dw, float* db) const {
  WinogradScratch& sc = scratch();
  std::lock_guard<std::mutex> lock(sc.mutex);
  const int64_t c = s_.c, k = s_.k, size = kXi * k * c;
  const int threads = omp_get_max_threads();
  grow_blocks(sc, threads, c + k);
  if (static_cast<int>(sc.du_thread.size()) < threads) sc.du_thread.resize(threads);
  if (static_cast<int>(sc.du_of.size()) < threads) sc.du_of.resize(threads);
  for (int t = 0; t < threads; ++t) sc.du_of[t] = at_least(sc.du_thread[t], size);
  const int64_t bt = choose_block(tiles_, threads), blocks = (tiles_ + bt - 1) / bt;
  bool ok = true;
  int team = 1;
  // Each thread sums its own blocks (a fixed set: static schedule) into its du; then the
  // threads' sums are added in thread order.
#pragma omp parallel reduction(&& : ok)
  {
    const int t = omp_get_thread_num();
#pragma omp single
    team = omp_get_num_threads();
    float* buf = sc.block[t].data();
    float* du = sc.du_of[t];
    float* v = buf;                  // [xi][tile][c]
    float* dm = buf + kXi * bt * c;  // [xi][tile][k]
    bool first = true;
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t t0 = b * bt, tn = std::min(bt, tiles_ - t0);
      transform_inputs(t0, tn, x, v, bt * c);
      transform_output_grads(t0, tn, dy, dm, bt * k);
      for (int xi = 0; xi < kXi; ++xi)
        ok = dnnl_sgemm('T', 'N', k, c, tn, 1.f, dm + xi * bt * k, k, v + xi * bt * c, c, first ? 0.f : 1.f,
                        du + xi * k * c, c) == dnnl_success &&
             ok;
      first = false;
    }
    if (first) std::memset(du, 0, sizeof(float) * size);
  }
  DLT_CHECK(ok, "winograd: oneDNN's dnnl_sgemm failed");
  float* du0 = sc.du_of[0];
  float* const* du_of = sc.du_of.data();
  if (team > 1) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < size; ++i)
      for (int t = 1; t < team; ++t) du0[i] += du_of[t][i];
  }
  filter_grad_transform(g_, du0, k, c, dw);
  if (db) sum_rows(dy, db, sc);
}

void WinogradConv::backward_weights_chunks(const float* x, const float* dy, float* dw, float* db) const {
  WinogradScratch& sc = scratch();
  std::lock_guard<std::mutex> lock(sc.mutex);
  const int64_t c = s_.c, k = s_.k, tc = choose_chunk(tiles_, c, k);
  float* v = at_least(sc.chunk, kXi * tc * (c + k));  // [xi][tile][c]
  float* dm = v + kXi * tc * c;                       // [xi][tile][k]
  float* du = at_least(sc.du, kXi * k * c);           // [xi][k][c]
  // Per chunk of tiles: transform x and dy (tiles across threads), then du[xi] += dm[xi]^T v[xi]
  // (the 36 products across threads, each summing the chunks in order).
  for (int64_t t0 = 0; t0 < tiles_; t0 += tc) {
    const int64_t tn = std::min(tc, tiles_ - t0);
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < tn; ++t) {
      transform_inputs(t0 + t, 1, x, v + t * c, tc * c);
      transform_output_grads(t0 + t, 1, dy, dm + t * k, tc * k);
    }
    bool ok = true;
#pragma omp parallel for schedule(static) reduction(&& : ok)
    for (int xi = 0; xi < kXi; ++xi)
      ok = dnnl_sgemm('T', 'N', k, c, tn, 1.f, dm + xi * tc * k, k, v + xi * tc * c, c, t0 == 0 ? 0.f : 1.f,
                      du + xi * k * c, c) == dnnl_success &&
           ok;
    DLT_CHECK(ok, "winograd: oneDNN's dnnl_sgemm failed");
  }
  filter_grad_transform(g_, du, k, c, dw);
  if (db) sum_rows(dy, db, sc);
}

void WinogradConv::sum_rows(const float* dy, float* db, WinogradScratch& sc) const {
  const int64_t rows = s_.n * s_.oh * s_.ow, k = s_.k;
  const int threads = omp_get_max_threads();
  float* part = at_least(sc.db_part, threads * k);
  int team = 1;
#pragma omp parallel
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#pragma omp single
    team = nt;
    float* mine = part + t * k;
    std::fill(mine, mine + k, 0.f);
    for (int64_t r = rows * t / nt; r < rows * (t + 1) / nt; ++r) {
      const float* in = dy + r * k;
      for (int64_t i = 0; i < k; ++i) mine[i] += in[i];
    }
  }
  std::copy(part, part + k, db);
  for (int t = 1; t < team; ++t)
    for (int64_t i = 0; i < k; ++i) db[i] += part[t * k + i];
}

}  // namespace dlt::cpu
