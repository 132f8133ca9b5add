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

constexpr int kA = 6;     // tile size the kernels are compiled for
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
template <int M>
[[gnu::target("avx2,fma")]] void output_tile(const float (&at)[6][6], const float* mm, int64_t ms, int ks,
                                             const float* bias, bool relu, float* y, int64_t ys, int64_t ps,
                                             int rows, int cols) {
  alignas(64) float t[M][kA][kChunk];
  for (int i = 0; i < M; ++i)
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

// u[xi][o][i] (xi = 36 tile positions) = (G w[o, :, :, i] G^T)[xi] for every output o and
// input channel i; w is (out, r, r, in).
template <int R>
[[gnu::target("avx2,fma")]] void filter_transform(const float (&g)[6][6], const float* w, int64_t outs, int64_t ins,
                                                  float* u) {
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < outs; ++o) {
    alignas(64) float t[kA][R][kChunk];
    alignas(64) float acc[kChunk];
    for (int64_t i0 = 0; i0 < ins; i0 += kChunk) {
      const int cs = static_cast<int>(std::min<int64_t>(kChunk, ins - i0));
      for (int i = 0; i < kA; ++i)
        for (int b = 0; b < R; ++b) {
          float* tt = t[i][b];
          for (int c = 0; c < cs; ++c) tt[c] = 0.f;
          for (int a = 0; a < R; ++a) {
            const float gv = g[i][a];
            if (gv == 0.f) continue;
            const float* in = w + ((o * R + a) * R + b) * ins + i0;
            for (int c = 0; c < cs; ++c) tt[c] += gv * in[c];
          }
        }
      for (int i = 0; i < kA; ++i)
        for (int j = 0; j < kA; ++j) {
          for (int c = 0; c < cs; ++c) acc[c] = 0.f;
          for (int b = 0; b < R; ++b) {
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
  DLT_CHECK(s.r == 3 || s.r == 5, "winograd: filter size " << s.r << " (3 or 5)");
  m_ = kA - s.r + 1;
  const WinogradMatrices wm = winograd_matrices(m_, s.r);
  for (int i = 0; i < kA; ++i)
    for (int j = 0; j < kA; ++j) {
      at_[i][j] = static_cast<float>(wm.at[i][j]);
      bt_[i][j] = static_cast<float>(wm.bt[i][j]);
      g_[i][j] = static_cast<float>(wm.g[i][j]);
    }
  tiles_h_ = (s.oh + m_ - 1) / m_;
  tiles_w_ = (s.ow + m_ - 1) / m_;
  tiles_ = s.n * tiles_h_ * tiles_w_;
  u_ = Tensor(Shape{kXi * s.k * s.c});
}

void WinogradConv::set_filters(const float* w, bool adjoint) {
  const int64_t r = s_.r, outs = s_.k, ins = s_.c;
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
  if (r == 3)
    filter_transform<3>(g_, src, outs, ins, u_.data());
  else
    filter_transform<5>(g_, src, outs, ins, u_.data());
}

bool WinogradConv::process_block(int64_t block, float* buf, const float* x, const float* bias, bool relu,
                                 float* y) const {
  const int64_t c = s_.c, k = s_.k, bt = block_;
  float* v = buf;                   // [xi][tile][c]
  float* mm = buf + kXi * bt * c;   // [xi][tile][k]
  const int64_t t0 = block * bt, tn = std::min(bt, tiles_ - t0);
  for (int64_t t = 0; t < tn; ++t) {
    const int64_t tile = t0 + t, n = tile / (tiles_h_ * tiles_w_), rem = tile % (tiles_h_ * tiles_w_);
    const int64_t iy0 = rem / tiles_w_ * m_ - s_.pad_t, ix0 = rem % tiles_w_ * m_ - s_.pad_l;
    for (int64_t c0 = 0; c0 < c; c0 += kChunk) {
      const float* src[kA][kA];
      for (int i = 0; i < kA; ++i)
        for (int j = 0; j < kA; ++j) {
          const int64_t yy = iy0 + i, xx = ix0 + j;
          src[i][j] = yy >= 0 && yy < s_.h && xx >= 0 && xx < s_.w ? x + ((n * s_.h + yy) * s_.w + xx) * c + c0 : nullptr;
        }
      const int cs = static_cast<int>(std::min<int64_t>(kChunk, c - c0));
      input_tile(bt_, src, cs, v + t * c + c0, bt * c);
    }
  }
  for (int xi = 0; xi < kXi; ++xi)
    if (dnnl_sgemm('N', 'T', tn, k, c, 1.f, v + xi * bt * c, c, u_.data() + xi * k * c, c, 0.f, mm + xi * bt * k, k) !=
        dnnl_success)
      return false;
  for (int64_t t = 0; t < tn; ++t) {
    const int64_t tile = t0 + t, n = tile / (tiles_h_ * tiles_w_), rem = tile % (tiles_h_ * tiles_w_);
    const int64_t oy0 = rem / tiles_w_ * m_, ox0 = rem % tiles_w_ * m_;
    const int rows = static_cast<int>(std::min<int64_t>(m_, s_.oh - oy0));
    const int cols = static_cast<int>(std::min<int64_t>(m_, s_.ow - ox0));
    float* yt = y + ((n * s_.oh + oy0) * s_.ow + ox0) * k;
    for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
      const int ks = static_cast<int>(std::min<int64_t>(kChunk, k - k0));
      const float* bk = bias ? bias + k0 : nullptr;
      if (m_ == 4)
        output_tile<4>(at_, mm + t * k + k0, bt * k, ks, bk, relu, yt + k0, s_.ow * k, k, rows, cols);
      else
        output_tile<2>(at_, mm + t * k + k0, bt * k, ks, bk, relu, yt + k0, s_.ow * k, k, rows, cols);
    }
  }
  return true;
}

void WinogradConv::run(const float* x, const float* bias, bool relu, float* y) {
  const int threads = omp_get_max_threads();
  if (static_cast<int>(thread_buf_.size()) < threads) {
    thread_buf_.resize(threads);
    for (auto& b : thread_buf_)
      if (!b.defined()) b = Tensor(Shape{kXi * kMaxBlock * (s_.c + s_.k)});
  }
  block_ = choose_block(tiles_, threads);
  const int64_t blocks = (tiles_ + block_ - 1) / block_;
  bool ok = true;
#pragma omp parallel for schedule(dynamic, 1) reduction(&& : ok)
  for (int64_t b = 0; b < blocks; ++b)
    ok = process_block(b, thread_buf_[omp_get_thread_num()].data(), x, bias, relu, y) && ok;
  DLT_CHECK(ok, "winograd: oneDNN's dnnl_sgemm failed");
}

}  // namespace dlt::cpu
