// Winograd convolution on NHWC float32 (winograd.h). Per block of tiles, on one thread:
// input transform into V (36 matrices of tiles x c), 36 sgemm calls M_xi = V_xi U_xi^T
// (oneDNN's dnnl_sgemm, single-threaded inside the parallel loop), output transform from M
// into y. Blocks are independent of which thread runs them, so runs repeat bit for bit at a
// thread count; the block size follows the thread count, and another row count may make
// sgemm sum in another order (1 and 2 threads agree to rounding).
#include "backend/cpu/winograd.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "util/check.h"

namespace dlt::cpu {
namespace {

constexpr int kA = 6;  // input tile
constexpr int kM = 4;  // output tile
constexpr int kR = 3;  // filter
constexpr int kXi = kA * kA;
constexpr int kChunk = 64;  // channels per transform pass (its buffers stay in L1)
constexpr int64_t kMaxBlock = 64;  // tiles per block

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
                                             const float* bias, bool relu, float* y, int64_t ys, int64_t ps,
                                             int rows, int cols) {
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

// The adjoint of filter_transform: dw[o][a][b][i] = sum over p, q of G[p][a] G[q][b] du[p*6+q][o][i].
[[gnu::target("avx2,fma")]] void filter_grad_transform(const float (&g)[6][6], const float* du, int64_t outs,
                                                       int64_t ins, float* dw) {
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < outs; ++o) {
    alignas(64) float t[kA][kR][kChunk];  // t[p][b] = sum_q G[q][b] du[p][q]
    alignas(64) float acc[kChunk];
    for (int64_t i0 = 0; i0 < ins; i0 += kChunk) {
      const int cs = static_cast<int>(std::min<int64_t>(kChunk, ins - i0));
      for (int p = 0; p < kA; ++p)
        for (int b = 0; b < kR; ++b) {
          float* tt = t[p][b];
          for (int c = 0; c < cs; ++c) tt[c] = 0.f;
          for (int q = 0; q < kA; ++q) {
            const float gv = g[q][b];
            if (gv == 0.f) continue;
            const float* in = du + ((p * kA + q) * outs + o) * ins + i0;
            for (int c = 0; c < cs; ++c) tt[c] += gv * in[c];
          }
        }
      for (int a = 0; a < kR; ++a)
        for (int b = 0; b < kR; ++b) {
          for (int c = 0; c < cs; ++c) acc[c] = 0.f;
          for (int p = 0; p < kA; ++p) {
            const float gv = g[p][a];
            if (gv == 0.f) continue;
            const float* in = t[p][b];
            for (int c = 0; c < cs; ++c) acc[c] += gv * in[c];
          }
          std::memcpy(dw + ((o * kR + a) * kR + b) * ins + i0, acc, sizeof(float) * cs);
        }
    }
  }
}

// u[xi][o][i] (xi = 36 tile positions) = (G w[o, :, :, i] G^T)[xi] for every output o and
// input channel i; w is (out, 3, 3, in).
[[gnu::target("avx2,fma")]] void filter_transform(const float (&g)[6][6], const float* w, int64_t outs, int64_t ins,
                                                  float* u) {
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < outs; ++o) {
    alignas(64) float t[kA][kR][kChunk];
    alignas(64) float acc[kChunk];
    for (int64_t i0 = 0; i0 < ins; i0 += kChunk) {
      const int cs = static_cast<int>(std::min<int64_t>(kChunk, ins - i0));
      for (int i = 0; i < kA; ++i)
        for (int b = 0; b < kR; ++b) {
          float* tt = t[i][b];
          for (int c = 0; c < cs; ++c) tt[c] = 0.f;
          for (int a = 0; a < kR; ++a) {
            const float gv = g[i][a];
            if (gv == 0.f) continue;
            const float* in = w + ((o * kR + a) * kR + b) * ins + i0;
            for (int c = 0; c < cs; ++c) tt[c] += gv * in[c];
          }
        }
      for (int i = 0; i < kA; ++i)
        for (int j = 0; j < kA; ++j) {
          for (int c = 0; c < cs; ++c) acc[c] = 0.f;
          for (int b = 0; b < kR; ++b) {
            const float gv = g[j][b];
            if (gv == 0.f) continue;
            const float* in = t[i][b];
            for (int c = 0; c < cs; ++c) acc[c] += gv * in[c];
          }
          std::memcpy(u + ((i * kA + j) * outs + o) * ins + i0, acc, sizeof(float) * cs);
        }
    }
  }
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

int64_t WinogradConv::choose_block(int64_t tiles, int threads) {
  int64_t most = kMaxBlock;
  if (const char* e = std::getenv("DLT_WINOGRAD_BLOCK")) most = std::clamp<int64_t>(std::strtol(e, nullptr, 10), 1, kMaxBlock);
  // Equal blocks of at most `most` tiles, their count a multiple of the threads (every
  // thread gets the same work). 64 tiles: 36 x 64 x (c + k) floats per thread, 1.2 MiB at 64
  // channels in and out, and sgemm calls of 64 rows; 16 and 128 were slower on ResNet-18
  // (docs/performance.md).
  const int64_t rounds = (tiles + most * threads - 1) / (most * threads);
  const int64_t blocks = std::max<int64_t>(1, rounds * threads);
  return std::max<int64_t>(1, (tiles + blocks - 1) / blocks);
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
  u_ = Tensor(Shape{kXi * s.k * s.c});
}

void WinogradConv::set_filters(const float* w, bool adjoint) {
  const int64_t r = kR, outs = s_.k, ins = s_.c;
  const float* src = w;
  if (adjoint) {
    // w is (ins, r, r, outs) as the forward convolution's (k, r, r, c); this one's filter
    // wt[o][a][b][i] = w[i][r-1-a][r-1-b][o].
    if (!w_adjoint_.defined()) w_adjoint_ = Tensor(Shape{outs * r * r * ins});
    float* wt = w_adjoint_.data();
#pragma omp parallel for schedule(static)
    for (int64_t o = 0; o < outs; ++o)
      for (int64_t a = 0; a < r; ++a)
        for (int64_t b = 0; b < r; ++b)
          for (int64_t i = 0; i < ins; ++i)
            wt[((o * r + a) * r + b) * ins + i] = w[((i * r + (r - 1 - a)) * r + (r - 1 - b)) * outs + o];
    src = wt;
  }
  filter_transform(g_, src, outs, ins, u_.data());
}

void WinogradConv::transform_inputs(int64_t t0, int64_t tn, const float* x, float* v) const {
  const int64_t c = s_.c;
  for (int64_t t = 0; t < tn; ++t) {
    const int64_t tile = t0 + t, n = tile / (tiles_h_ * tiles_w_), rem = tile % (tiles_h_ * tiles_w_);
    const int64_t iy0 = rem / tiles_w_ * kM - s_.pad_t, ix0 = rem % tiles_w_ * kM - s_.pad_l;
    for (int64_t c0 = 0; c0 < c; c0 += kChunk) {
      const float* src[kA][kA];
      for (int i = 0; i < kA; ++i)
        for (int j = 0; j < kA; ++j) {
          const int64_t yy = iy0 + i, xx = ix0 + j;
          src[i][j] = yy >= 0 && yy < s_.h && xx >= 0 && xx < s_.w ? x + ((n * s_.h + yy) * s_.w + xx) * c + c0 : nullptr;
        }
      const int cs = static_cast<int>(std::min<int64_t>(kChunk, c - c0));
      input_tile(bt_, src, cs, v + t * c + c0, block_ * c);
    }
  }
}

bool WinogradConv::process_block(int64_t block, float* buf, const float* x, const float* bias, bool relu,
                                 float* y) const {
  const int64_t c = s_.c, k = s_.k, bt = block_;
  float* v = buf;                   // [xi][tile][c]
  float* mm = buf + kXi * bt * c;   // [xi][tile][k]
  const int64_t t0 = block * bt, tn = std::min(bt, tiles_ - t0);
  transform_inputs(t0, tn, x, v);
  for (int xi = 0; xi < kXi; ++xi)
    if (dnnl_sgemm('N', 'T', tn, k, c, 1.f, v + xi * bt * c, c, u_.data() + xi * k * c, c, 0.f, mm + xi * bt * k, k) !=
        dnnl_success)
      return false;
  for (int64_t t = 0; t < tn; ++t) {
    const int64_t tile = t0 + t, n = tile / (tiles_h_ * tiles_w_), rem = tile % (tiles_h_ * tiles_w_);
    const int64_t oy0 = rem / tiles_w_ * kM, ox0 = rem % tiles_w_ * kM;
    const int rows = static_cast<int>(std::min<int64_t>(kM, s_.oh - oy0));
    const int cols = static_cast<int>(std::min<int64_t>(kM, s_.ow - ox0));
    float* yt = y + ((n * s_.oh + oy0) * s_.ow + ox0) * k;
    for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
      const int ks = static_cast<int>(std::min<int64_t>(kChunk, k - k0));
      const float* bk = bias ? bias + k0 : nullptr;
      output_tile(at_, mm + t * k + k0, bt * k, ks, bk, relu, yt + k0, s_.ow * k, k, rows, cols);
    }
  }
  return true;
}

void WinogradConv::prepare(bool weight_grad) {
  const int threads = omp_get_max_threads();
  if (static_cast<int>(thread_buf_.size()) < threads) thread_buf_.resize(threads);
  for (int t = 0; t < threads; ++t)
    if (!thread_buf_[t].defined()) thread_buf_[t] = Tensor(Shape{kXi * kMaxBlock * (s_.c + s_.k)});
  if (weight_grad) {
    if (static_cast<int>(du_buf_.size()) < threads) du_buf_.resize(threads);
    for (int t = 0; t < threads; ++t)
      if (!du_buf_[t].defined()) du_buf_[t] = Tensor(Shape{kXi * s_.k * s_.c});
  }
  block_ = choose_block(tiles_, threads);
}

void WinogradConv::run(const float* x, const float* bias, bool relu, float* y) {
  prepare(false);
  const int64_t blocks = (tiles_ + block_ - 1) / block_;
  bool ok = true;
#pragma omp parallel for schedule(dynamic, 1) reduction(&& : ok)
  for (int64_t b = 0; b < blocks; ++b)
    ok = process_block(b, thread_buf_[omp_get_thread_num()].data(), x, bias, relu, y) && ok;
  DLT_CHECK(ok, "winograd: oneDNN's dnnl_sgemm failed");
}

bool WinogradConv::accumulate_block(int64_t block, float* buf, const float* x, const float* dy, float* du,
                                    bool first) const {
  const int64_t c = s_.c, k = s_.k, bt = block_;
  float* v = buf;                  // [xi][tile][c]
  float* dm = buf + kXi * bt * c;  // [xi][tile][k]
  const int64_t t0 = block * bt, tn = std::min(bt, tiles_ - t0);
  transform_inputs(t0, tn, x, v);
  for (int64_t t = 0; t < tn; ++t) {
    const int64_t tile = t0 + t, n = tile / (tiles_h_ * tiles_w_), rem = tile % (tiles_h_ * tiles_w_);
    const int64_t oy0 = rem / tiles_w_ * kM, ox0 = rem % tiles_w_ * kM;
    const int rows = static_cast<int>(std::min<int64_t>(kM, s_.oh - oy0));
    const int cols = static_cast<int>(std::min<int64_t>(kM, s_.ow - ox0));
    const float* dyt = dy + ((n * s_.oh + oy0) * s_.ow + ox0) * k;
    for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
      const int ks = static_cast<int>(std::min<int64_t>(kChunk, k - k0));
      output_grad_tile(at_, dyt + k0, s_.ow * k, k, rows, cols, ks, dm + t * k + k0, bt * k);
    }
  }
  // du[xi] (k x c) += dm[xi]^T (k x tn) v[xi] (tn x c)
  for (int xi = 0; xi < kXi; ++xi)
    if (dnnl_sgemm('T', 'N', k, c, tn, 1.f, dm + xi * bt * k, k, v + xi * bt * c, c, first ? 0.f : 1.f,
                   du + xi * k * c, c) != dnnl_success)
      return false;
  return true;
}

void WinogradConv::backward_weights(const float* x, const float* dy, float* dw, float* db) {
  prepare(true);
  const int64_t blocks = (tiles_ + block_ - 1) / block_, size = kXi * s_.k * s_.c;
  bool ok = true;
  int team = 1;
  // Each thread sums its own blocks (a fixed set: static schedule) into its du; then the
  // threads' sums are added in thread order. Same bits on every run at a thread count.
#pragma omp parallel reduction(&& : ok)
  {
    const int t = omp_get_thread_num();
#pragma omp single
    team = omp_get_num_threads();
    float* du = du_buf_[t].data();
    bool first = true;
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      ok = accumulate_block(b, thread_buf_[t].data(), x, dy, du, first) && ok;
      first = false;
    }
    if (first) std::memset(du, 0, sizeof(float) * size);
  }
  DLT_CHECK(ok, "winograd: oneDNN's dnnl_sgemm failed");
  float* du0 = du_buf_[0].data();
  if (team > 1) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < size; ++i)
      for (int t = 1; t < team; ++t) du0[i] += du_buf_[t].data()[i];
  }
  filter_grad_transform(g_, du0, s_.k, s_.c, dw);
  if (db) sum_rows(dy, db);
}

void WinogradConv::sum_rows(const float* dy, float* db) {
  const int64_t rows = s_.n * s_.oh * s_.ow, k = s_.k;
  const int threads = omp_get_max_threads();
  if (db_part_.numel() < threads * k) db_part_ = Tensor(Shape{threads * k});
  int team = 1;
#pragma omp parallel
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#pragma omp single
    team = nt;
    float* part = db_part_.data() + t * k;
    std::fill(part, part + k, 0.f);
    for (int64_t r = rows * t / nt; r < rows * (t + 1) / nt; ++r) {
      const float* in = dy + r * k;
      for (int64_t i = 0; i < k; ++i) part[i] += in[i];
    }
  }
  std::copy(db_part_.data(), db_part_.data() + k, db);
  for (int t = 1; t < team; ++t)
    for (int64_t i = 0; i < k; ++i) db[i] += db_part_.data()[t * k + i];
}

}  // namespace dlt::cpu
