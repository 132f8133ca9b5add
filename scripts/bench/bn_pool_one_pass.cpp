// How much one pass could save over oneDNN's batch normalization + max pooling in training
// (issue 20; docs/performance.md "Outside the convolutions"). Not used by dltrain: a measurement.
//
// CIFAR-10's bn1 -> relu1 -> pool1 on conv1's output x (100x32x32x32, NHWC), forward_training:
//  - oneDNN: bnorm forward_training (fuse_norm_relu, scale and shift) and max pooling 3x3 stride 2
//    forward_training on its output, as dltrain runs them;
//  - one pass: per image, the per-channel sums of x and x^2 and the window maxima of sgn_c * x
//    with their positions (sgn_c = the sign of gamma_c: batch norm then ReLU are monotone per
//    channel, so max-pooling commutes with them), then the 4.4x smaller pooled tensor is
//    normalized and ReLU'd. Its variance is E[x^2] - E[x]^2 from float sums per image and double
//    sums across images: fine for this check, not for a product (large means cancel).
// Then the backward, folded the same way (one_pass_backward) against oneDNN's pooling backward and
// bnorm backward. All after flushing the caches (128 MB written), best of 15; prints the largest
// differences of the pooled outputs, dx, and dgamma / dbeta.
//
//   g++ -O3 -fopenmp -std=c++20 scripts/bench/bn_pool_one_pass.cpp -o /tmp/bn_pool -ldnnl
//   OMP_NUM_THREADS=2 /tmp/bn_pool        # and with DNNL_MAX_CPU_ISA=AVX2
#include <immintrin.h>
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dnnl.hpp>
#include <random>
#include <vector>
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
constexpr int N = 100, C = 32, H = 32, OH = 15, K = 3, S = 2;
__attribute__((target("avx2,fma"))) void one_pass(const float* x, const float* sgn, float* pooled, uint8_t* idx,
                                                  double* sums /*[threads][2C]*/) {
#pragma omp parallel
  {
    double* my = sums + omp_get_thread_num() * 2 * C;
    std::fill(my, my + 2 * C, 0.0);
    __m256 sg[C / 8];
    for (int j = 0; j < C / 8; ++j) sg[j] = _mm256_loadu_ps(sgn + 8 * j);
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {
      const float* xi = x + (size_t)n * H * H * C;
      __m256 s1[C / 8], s2[C / 8];
      for (int j = 0; j < C / 8; ++j) {
        s1[j] = _mm256_setzero_ps();
        s2[j] = _mm256_setzero_ps();
      }
      for (int p = 0; p < H * H; ++p)
        for (int j = 0; j < C / 8; ++j) {
          __m256 v = _mm256_loadu_ps(xi + p * C + 8 * j);
          s1[j] = _mm256_add_ps(s1[j], v);
          s2[j] = _mm256_fmadd_ps(v, v, s2[j]);
        }
      for (int j = 0; j < C / 8; ++j) {
        float a[8], q[8];
        _mm256_storeu_ps(a, s1[j]);
        _mm256_storeu_ps(q, s2[j]);
        for (int l = 0; l < 8; ++l) {
          my[8 * j + l] += a[l];
          my[C + 8 * j + l] += q[l];
        }
      }
      float* po = pooled + (size_t)n * OH * OH * C;
      uint8_t* io = idx + (size_t)n * OH * OH * C;
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OH; ++ow) {
          for (int j = 0; j < C / 8; ++j) {
            __m256 m = _mm256_set1_ps(-INFINITY);
            __m256i a = _mm256_setzero_si256();
            for (int r = 0; r < K; ++r)
              for (int q = 0; q < K; ++q) {
                __m256 v = _mm256_mul_ps(sg[j], _mm256_loadu_ps(xi + ((oh * S + r) * H + ow * S + q) * C + 8 * j));
                __m256 gt = _mm256_cmp_ps(v, m, _CMP_GT_OQ);
                m = _mm256_blendv_ps(m, v, gt);
                a = _mm256_castps_si256(
                    _mm256_blendv_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(_mm256_set1_epi32(r * K + q)), gt));
              }
            _mm256_storeu_ps(po + (oh * OH + ow) * C + 8 * j, _mm256_mul_ps(sg[j], m));
            alignas(32) int32_t ai[8];
            _mm256_store_si256((__m256i*)ai, a);
            for (int l = 0; l < 8; ++l) io[(oh * OH + ow) * C + 8 * j + l] = (uint8_t)ai[l];
          }
        }
    }
  }
}
// Backward, the same way: dp (pooled gradient) masked by ReLU (pooled pre-ReLU value > 0) gives
// dbeta and dgamma at pooled size; then one pass over x gathers each pixel's gradient from the
// windows whose maximum it was (idx) and writes dx = s (dy - dbeta / M - xhat dgamma / M).
__attribute__((target("avx2,fma"))) void one_pass_backward(const float* x, const float* xp, const uint8_t* idx,
                                                           const float* dp, const float* mean, const float* invstd,
                                                           const float* gamma, const float* beta, float* dpm, float* dx,
                                                           float* dgamma, float* dbeta) {
  const int T = omp_get_max_threads();
  std::vector<double> part(T * 2 * C, 0.0);
#pragma omp parallel
  {
    double* my = part.data() + omp_get_thread_num() * 2 * C;
#pragma omp for schedule(static)
    for (int n = 0; n < N; ++n) {  // per image: float sums in registers, added into double
      for (int j = 0; j < C; j += 8) {
        const __m256 mu = _mm256_loadu_ps(mean + j), is = _mm256_loadu_ps(invstd + j);
        const __m256 ga = _mm256_loadu_ps(gamma + j), be = _mm256_loadu_ps(beta + j);
        __m256 sb = _mm256_setzero_ps(), sg = _mm256_setzero_ps();
        for (size_t i = (size_t)n * OH * OH; i < (size_t)(n + 1) * OH * OH; ++i) {
          const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xp + i * C + j), mu), is);
          const __m256 pos = _mm256_cmp_ps(_mm256_fmadd_ps(ga, xh, be), _mm256_setzero_ps(), _CMP_GT_OQ);
          const __m256 g = _mm256_and_ps(pos, _mm256_loadu_ps(dp + i * C + j));
          _mm256_storeu_ps(dpm + i * C + j, g);
          sb = _mm256_add_ps(sb, g);
          sg = _mm256_fmadd_ps(g, xh, sg);
        }
        float fb[8], fg[8];
        _mm256_storeu_ps(fb, sb);
        _mm256_storeu_ps(fg, sg);
        for (int l = 0; l < 8; ++l) {
          my[j + l] += fb[l];
          my[C + j + l] += fg[l];
        }
      }
    }
  }
  float k0[C], k1[C], sc[C];
  const float M = (float)N * H * H;
  for (int c = 0; c < C; ++c) {
    double b = 0, g = 0;
    for (int t = 0; t < T; ++t) {
      b += part[t * 2 * C + c];
      g += part[t * 2 * C + C + c];
    }
    dbeta[c] = (float)b;
    dgamma[c] = (float)g;
    sc[c] = gamma[c] * invstd[c];
    k0[c] = (float)b / M;
    k1[c] = (float)g / M;
  }
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    const float* xi = x + (size_t)n * H * H * C;
    const float* gi = dpm + (size_t)n * OH * OH * C;
    const uint8_t* ii = idx + (size_t)n * OH * OH * C;
    float* di = dx + (size_t)n * H * H * C;
    for (int ih = 0; ih < H; ++ih) {
      const int oh0 = ih < K ? 0 : (ih - K + S) / S, oh1 = std::min(OH - 1, ih / S);
      for (int iw = 0; iw < H; ++iw) {
        const int ow0 = iw < K ? 0 : (iw - K + S) / S, ow1 = std::min(OH - 1, iw / S);
        for (int j = 0; j < C; j += 8) {
          __m256 acc = _mm256_setzero_ps();
          for (int oh = oh0; oh <= oh1; ++oh)
            for (int ow = ow0; ow <= ow1; ++ow) {
              const int o = (oh * OH + ow) * C + j;
              const __m256i at = _mm256_set1_epi32((ih - oh * S) * K + (iw - ow * S));
              const __m256i id = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(ii + o)));
              acc = _mm256_add_ps(
                  acc, _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(id, at)), _mm256_loadu_ps(gi + o)));
            }
          const int q = (ih * H + iw) * C + j;
          const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xi + q), _mm256_loadu_ps(mean + j)),
                                          _mm256_loadu_ps(invstd + j));
          const __m256 d =
              _mm256_sub_ps(_mm256_sub_ps(acc, _mm256_loadu_ps(k0 + j)), _mm256_mul_ps(xh, _mm256_loadu_ps(k1 + j)));
          _mm256_storeu_ps(di + q, _mm256_mul_ps(_mm256_loadu_ps(sc + j), d));
        }
      }
    }
  }
}

int main() {
  const int T = omp_get_max_threads();
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  auto xm = memory::desc({N, C, H, H}, dt::f32, tag::nhwc), pm = memory::desc({N, C, OH, OH}, dt::f32, tag::nhwc);
  memory X(xm, eng), Y(xm, eng), P(pm, eng), MEAN(memory::desc({C}, dt::f32, tag::a), eng),
      VAR(memory::desc({C}, dt::f32, tag::a), eng), SS(memory::desc({2, C}, dt::f32, tag::ab), eng);
  float* xp = (float*)X.get_data_handle();
  std::mt19937 rg(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (size_t i = 0; i < (size_t)N * C * H * H; ++i) xp[i] = nd(rg);
  float* ss = (float*)SS.get_data_handle();
  for (int c = 0; c < C; ++c) {
    ss[c] = (c % 5 == 0) ? -0.5f : 1.f;
    ss[C + c] = 0.1f;
  }
  batch_normalization_forward::desc bd(prop_kind::forward_training, xm, 1e-5f,
                                       normalization_flags::use_scale_shift | normalization_flags::fuse_norm_relu);
  batch_normalization_forward::primitive_desc bpd(bd, eng);
  batch_normalization_forward bn(bpd);
  memory WS(bpd.workspace_desc(), eng);
  pooling_forward::desc pd(prop_kind::forward_training, algorithm::pooling_max, xm, pm, {S, S}, {K, K}, {0, 0}, {0, 0});
  pooling_forward::primitive_desc ppd(pd, eng);
  pooling_forward pool(ppd);
  memory PWS(ppd.workspace_desc(), eng);
  std::vector<float> pooled((size_t)N * OH * OH * C), pooled_y(pooled.size()), sgn(C);
  std::vector<uint8_t> idx(pooled.size());
  std::vector<double> sums(T * 2 * C);
  for (int c = 0; c < C; ++c) sgn[c] = ss[c] < 0 ? -1.f : 1.f;
  static std::vector<char> junk(128 << 20);
  auto flush = [&] {
#pragma omp parallel for
    for (size_t q = 0; q < junk.size(); q += 64) junk[q] += 1;
  };
  for (int rep = 0; rep < 2; ++rep) {
    double b = 1e9, f = 1e9;
    for (int it = 0; it < 15; ++it) {
      flush();
      auto t0 = std::chrono::steady_clock::now();
      bn.execute(st, {{DNNL_ARG_SRC, X},
                      {DNNL_ARG_DST, Y},
                      {DNNL_ARG_MEAN, MEAN},
                      {DNNL_ARG_VARIANCE, VAR},
                      {DNNL_ARG_SCALE_SHIFT, SS},
                      {DNNL_ARG_WORKSPACE, WS}});
      pool.execute(st, {{DNNL_ARG_SRC, Y}, {DNNL_ARG_DST, P}, {DNNL_ARG_WORKSPACE, PWS}});
      st.wait();
      b = std::min(b, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      flush();
      t0 = std::chrono::steady_clock::now();
      one_pass(xp, sgn.data(), pooled.data(), idx.data(), sums.data());
      // finish: mean/var, then normalize + relu the pooled tensor in place
      float sc[C], sh[C];
      for (int c = 0; c < C; ++c) {
        double s1 = 0, s2 = 0;
        for (int t = 0; t < T; ++t) {
          s1 += sums[t * 2 * C + c];
          s2 += sums[t * 2 * C + C + c];
        }
        double cnt = (double)N * H * H, mu = s1 / cnt, var = s2 / cnt - mu * mu;
        sc[c] = ss[c] / std::sqrt((float)var + 1e-5f);
        sh[c] = ss[C + c] - (float)mu * sc[c];
      }
#pragma omp parallel for schedule(static)
      for (size_t i = 0; i < pooled.size(); i += C)
        for (int c = 0; c < C; ++c) pooled_y[i + c] = std::max(0.f, pooled[i + c] * sc[c] + sh[c]);
      f = std::min(f, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    // agreement of the pooled outputs
    const float* ref = (const float*)P.get_data_handle();
    double maxd = 0;
    for (size_t i = 0; i < pooled.size(); ++i) maxd = std::max(maxd, (double)std::fabs(ref[i] - pooled_y[i]));
    printf("forward:  oneDNN bnorm+pool %.3f ms, one pass %.3f ms (flushed caches, %d threads); max |diff| %.2e\n", b,
           f, T, maxd);
  }
  // Backward: oneDNN's pooling backward then bnorm backward (fuse_norm_relu) against one_pass_backward.
  memory DP(pm, eng), DZ(xm, eng), DX(xm, eng), DSS(memory::desc({2, C}, dt::f32, tag::ab), eng);
  float* dpp = (float*)DP.get_data_handle();
  for (size_t i = 0; i < pooled.size(); ++i) dpp[i] = nd(rg) * 1e-2f;
  pooling_backward::desc pbd(algorithm::pooling_max, xm, pm, {S, S}, {K, K}, {0, 0}, {0, 0});
  pooling_backward::primitive_desc pbpd(pbd, eng, ppd);
  pooling_backward pool_b(pbpd);
  batch_normalization_backward::desc bbd(prop_kind::backward, xm, xm, 1e-5f,
                                         normalization_flags::use_scale_shift | normalization_flags::fuse_norm_relu);
  batch_normalization_backward::primitive_desc bbpd(bbd, eng, bpd);
  batch_normalization_backward bn_b(bbpd);
  std::vector<float> dpm(pooled.size()), dx((size_t)N * H * H * C), mean(C), invstd(C), dg(C), db(C);
  const float* mp = (const float*)MEAN.get_data_handle();
  const float* vp = (const float*)VAR.get_data_handle();
  for (int c = 0; c < C; ++c) {
    mean[c] = mp[c];
    invstd[c] = 1.f / std::sqrt(vp[c] + 1e-5f);
  }
  for (int rep = 0; rep < 2; ++rep) {
    double b = 1e9, f = 1e9;
    for (int it = 0; it < 15; ++it) {
      flush();
      auto t0 = std::chrono::steady_clock::now();
      pool_b.execute(st, {{DNNL_ARG_DIFF_DST, DP}, {DNNL_ARG_DIFF_SRC, DZ}, {DNNL_ARG_WORKSPACE, PWS}});
      bn_b.execute(st, {{DNNL_ARG_SRC, X},
                        {DNNL_ARG_MEAN, MEAN},
                        {DNNL_ARG_VARIANCE, VAR},
                        {DNNL_ARG_DIFF_DST, DZ},
                        {DNNL_ARG_SCALE_SHIFT, SS},
                        {DNNL_ARG_WORKSPACE, WS},
                        {DNNL_ARG_DIFF_SRC, DX},
                        {DNNL_ARG_DIFF_SCALE_SHIFT, DSS}});
      st.wait();
      b = std::min(b, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      flush();
      t0 = std::chrono::steady_clock::now();
      one_pass_backward(xp, pooled.data(), idx.data(), dpp, mean.data(), invstd.data(), ss, ss + C, dpm.data(),
                        dx.data(), dg.data(), db.data());
      f = std::min(f, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    const float* ref = (const float*)DX.get_data_handle();
    const float* dss = (const float*)DSS.get_data_handle();
    double maxd = 0, maxr = 0, maxp = 0;
    for (size_t i = 0; i < dx.size(); ++i) {
      maxd = std::max(maxd, (double)std::fabs(ref[i] - dx[i]));
      maxr = std::max(maxr, (double)std::fabs(ref[i]));
    }
    for (int c = 0; c < C; ++c)
      maxp = std::max(maxp, std::max((double)std::fabs(dss[c] - dg[c]), (double)std::fabs(dss[C + c] - db[c])));
    printf(
        "backward: oneDNN pool+bnorm %.3f ms, one pass %.3f ms; max |diff| dx %.2e (max |dx| %.2e), dgamma/dbeta "
        "%.2e\n",
        b, f, maxd, maxr, maxp);
  }
}
