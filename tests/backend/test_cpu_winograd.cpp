// dltrain's own Winograd convolution (backend/cpu/winograd.h), which runs 3x3 stride-1
// convolutions below AVX-512: its transform matrices against the definition in double, and
// WinogradConv against the double-precision reference convolution, forward, adjoint
// (backward-data) and weight gradient, with edge tiles, several tile blocks, channel counts that are not a
// multiple of the transform's chunk, bias, relu and asymmetric padding; on 1 and 2 threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/winograd.h"
#include "support/reference_ops.h"
#include "support/skip.h"
#include "support/tensor_utils.h"

using namespace dlt;
using namespace dlt::test;

namespace {

bool cpu_has_avx2_fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

// y = A^T [(G g) . (B^T d)] against the direct 1-D correlation, in double.
double max_1d_error(int m, int r) {
  const cpu::WinogradMatrices t = cpu::winograd_matrices(m, r);
  Rng rng(3);
  double worst = 0;
  for (int trial = 0; trial < 20; ++trial) {
    Vec d = random_vec(t.a, rng), g = random_vec(r, rng);
    double gg[6] = {}, bd[6] = {};
    for (int p = 0; p < t.a; ++p) {
      for (int k = 0; k < r; ++k) gg[p] += t.g[p][k] * g[k];
      for (int j = 0; j < t.a; ++j) bd[p] += t.bt[p][j] * d[j];
    }
    for (int i = 0; i < m; ++i) {
      double y = 0, want = 0;
      for (int p = 0; p < t.a; ++p) y += t.at[i][p] * gg[p] * bd[p];
      for (int k = 0; k < r; ++k) want += d[i + k] * g[k];
      worst = std::max(worst, std::abs(y - want));
    }
  }
  return worst;
}

ConvDesc desc(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t r, int64_t pt, int64_t pb, int64_t pl,
              int64_t pr) {
  ConvDesc d;
  d.n = n, d.h = h, d.w = w, d.c = c, d.k = k, d.kh = d.kw = r;
  d.pad_t = pt, d.pad_b = pb, d.pad_l = pl, d.pad_r = pr;
  return d;
}

// Forward (with bias, optionally relu) and backward-data of one shape through WinogradConv;
// returns the worst normwise relative error of the two against the reference.
double winograd_error(const ConvDesc& d, bool relu) {
  Rng rng(11);
  const int64_t oh = d.out_h(), ow = d.out_w();
  Vec x = random_vec(d.n * d.h * d.w * d.c, rng), w = random_vec(d.k * d.kh * d.kw * d.c, rng);
  Vec b = random_vec(d.k, rng), dy = random_vec(d.n * oh * ow * d.k, rng);
  Tensor tx = to_tensor(x, {d.n, d.h, d.w, d.c}), tw = to_tensor(w, {d.k, d.kh, d.kw, d.c});
  Tensor tb = to_tensor(b, {d.k}), tdy = to_tensor(dy, {d.n, oh, ow, d.k});
  Tensor ty(Shape{d.n, oh, ow, d.k}), tdx(Shape{d.n, d.h, d.w, d.c});
  cpu_backend().fill(ty, NAN);  // every element must be written
  cpu_backend().fill(tdx, NAN);

  cpu::WinogradConv fwd({d.n, d.h, d.w, d.c, d.k, oh, ow, d.pad_t, d.pad_l});
  fwd.forward(tx.data(), tw.data(), false, tb.data(), relu, ty.data());
  Vec want = ref::conv_forward(d, x, w, b);
  if (relu)
    for (double& v : want) v = std::max(v, 0.0);
  const Comparison cf = compare(ty, want);

  cpu::WinogradConv bwd({d.n, oh, ow, d.k, d.c, d.h, d.w, 2 - d.pad_t, 2 - d.pad_l});
  bwd.forward(tdy.data(), tw.data(), true, nullptr, false, tdx.data());
  const Comparison cb = compare(tdx, ref::conv_backward_data(d, dy, w));

  Tensor tdw(Shape{d.k, 3, 3, d.c}), tdb(Shape{d.k});
  cpu_backend().fill(tdw, NAN);
  cpu_backend().fill(tdb, NAN);
  fwd.backward_weights(tx.data(), tdy.data(), tdw.data(), tdb.data());
  Vec dw, db;
  ref::conv_backward_weights(d, x, dy, dw, db);
  const Comparison cw = compare(tdw, dw), cbias = compare(tdb, db);
  INFO("forward: " << cf.str() << "; backward-data: " << cb.str() << "; dw: " << cw.str() << "; db: " << cbias.str());
  CHECK(std::isfinite(cf.rel));
  CHECK(std::isfinite(cb.rel));
  CHECK(std::isfinite(cw.rel));
  CHECK(cbias.rel < 1e-6);
  return std::max({cf.rel, cb.rel, cw.rel});
}

}  // namespace

// F(2,5) is not run by the product (slower than direct convolution for CIFAR-10's 32-channel
// 5x5 layers, docs/performance.md); it checks the construction for a second (m, r).
TEST_CASE("Winograd F(4,3) and F(2,5) transforms compute the 1-D correlation", "[backend][winograd]") {
  CHECK(max_1d_error(4, 3) < 1e-12);
  CHECK(max_1d_error(2, 5) < 1e-12);
  // B^T and A^T hold integers (exact in float); the fractions are all in G.
  const cpu::WinogradMatrices t = cpu::winograd_matrices(4, 3);
  for (int i = 0; i < t.a; ++i)
    for (int j = 0; j < t.a; ++j) {
      CHECK(t.bt[i][j] == std::round(t.bt[i][j]));
      CHECK(t.at[std::min(i, t.m - 1)][j] == std::round(t.at[std::min(i, t.m - 1)][j]));
    }
}

TEST_CASE("WinogradConv agrees with the reference convolution, forward and both gradients", "[backend][winograd][skippable]") {
  DLT_SKIP_IF(!cpu_has_avx2_fma(), "dltrain's Winograd kernels need AVX2 and FMA, which this CPU lacks");
  const int threads = cpu_threads();
  for (int t : {1, 2}) {
    cpu_set_threads(t);
    INFO(t << " thread(s)");
    // 3x3 pad 1, 20x20: 3 x 5 x 5 = 75 tiles (two blocks on one thread), channels past one chunk.
    CHECK(winograd_error(desc(3, 20, 20, 70, 66, 3, 1, 1, 1, 1), true) < 2e-5);
    // no padding, odd sizes (edge tiles of 1-3 rows), fewer channels than a chunk
    CHECK(winograd_error(desc(2, 9, 11, 8, 5, 3, 0, 0, 0, 0), false) < 2e-5);
    // asymmetric padding
    CHECK(winograd_error(desc(2, 7, 6, 16, 24, 3, 1, 0, 0, 1), true) < 2e-5);
    // padding 2 on one side: the adjoint's window starts inside the image (negative padding)
    CHECK(winograd_error(desc(1, 10, 9, 12, 20, 3, 2, 0, 0, 2), false) < 2e-5);
  }
  cpu_set_threads(threads);
}

// The block size follows the thread count (equal work per thread), and oneDNN's sgemm may sum
// in another order for another row count: 1 and 2 threads agree to rounding, and repeated runs
// at one thread count bit for bit (blocks are independent of which thread runs them).
TEST_CASE("WinogradConv repeats bit for bit at a thread count", "[backend][winograd][skippable]") {
  DLT_SKIP_IF(!cpu_has_avx2_fma(), "dltrain's Winograd kernels need AVX2 and FMA, which this CPU lacks");
  const ConvDesc d = desc(4, 16, 16, 64, 64, 3, 1, 1, 1, 1);
  Rng rng(5);
  Tensor tx = to_tensor(random_vec(d.n * d.h * d.w * d.c, rng), {d.n, d.h, d.w, d.c});
  Tensor tw = to_tensor(random_vec(d.k * 9 * d.c, rng), {d.k, 3, 3, d.c});
  Tensor tb = to_tensor(random_vec(d.k, rng), {d.k});
  const int threads = cpu_threads();
  std::vector<Vec> out;
  for (int t : {1, 2, 2, 2}) {
    cpu_set_threads(t);
    cpu::WinogradConv op({d.n, d.h, d.w, d.c, d.k, d.h, d.w, 1, 1});
    Tensor ty(Shape{d.n, d.h, d.w, d.k});
    op.forward(tx.data(), tw.data(), false, tb.data(), false, ty.data());
    out.push_back(to_vec(ty));
  }
  cpu_set_threads(threads);
  CHECK(out[1] == out[2]);
  CHECK(out[2] == out[3]);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < out[0].size(); ++i) {
    worst = std::max(worst, std::abs(out[0][i] - out[1][i]));
    scale = std::max(scale, std::abs(out[1][i]));
  }
  CHECK(worst <= 5e-5 * scale);
}

// The weight gradient's two paths on 52 x 6 x 6 = 1,872 tiles (two chunks at 64 + 72
// channels, WinogradConv::choose_chunk): both against the reference; the chunked path the same
// bits on 1 and 2 threads (its chunks depend on the shape only, and each of the 36 products sums
// them in order), the per-thread path the same bits on every run at a thread count.
TEST_CASE("WinogradConv's weight gradient, per-thread blocks and chunks", "[backend][winograd][skippable]") {
  DLT_SKIP_IF(!cpu_has_avx2_fma(), "dltrain's Winograd kernels need AVX2 and FMA, which this CPU lacks");
  const ConvDesc d = desc(52, 24, 24, 64, 72, 3, 1, 1, 1, 1);
  CHECK(cpu::WinogradConv::choose_chunk(52 * 36, 64, 72) < 52 * 36);
  Rng rng(9);
  Vec x = random_vec(d.n * d.h * d.w * d.c, rng), dy = random_vec(d.n * d.h * d.w * d.k, rng);
  Tensor tx = to_tensor(x, {d.n, d.h, d.w, d.c});
  Tensor tdy = to_tensor(dy, {d.n, d.h, d.w, d.k});
  Vec dw, db;
  ref::conv_backward_weights(d, x, dy, dw, db);
  const int threads = cpu_threads();
  cpu::WinogradConv op({d.n, d.h, d.w, d.c, d.k, d.h, d.w, 1, 1});
  auto run = [&](bool chunks) {
    Tensor tdw(Shape{d.k, 3, 3, d.c}), tdb(Shape{d.k});
    if (chunks)
      op.backward_weights_chunks(tx.data(), tdy.data(), tdw.data(), tdb.data());
    else
      op.backward_weights_blocks(tx.data(), tdy.data(), tdw.data(), tdb.data());
    const Comparison cw = compare(tdw, dw), cb = compare(tdb, db);
    INFO((chunks ? "chunks" : "blocks") << ", " << cpu_threads() << " thread(s): dw " << cw.str() << "; db "
                                        << cb.str());
    CHECK(cw.rel < 2e-5);
    CHECK(cb.rel < 1e-5);
    return to_vec(tdw);
  };
  std::vector<Vec> chunked, blocked;
  for (int t : {1, 2}) {
    cpu_set_threads(t);
    chunked.push_back(run(true));
  }
  blocked.push_back(run(false));
  blocked.push_back(run(false));
  cpu_set_threads(threads);
  CHECK(chunked[0] == chunked[1]);
  CHECK(blocked[0] == blocked[1]);
}
