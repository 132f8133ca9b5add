// The CUDA backend's loss kernels (cuda_loss_kernels.h): cross-entropy and focal cross-entropy
// (a warp per sample), generalized Dice and Tversky (per-image class sums over a fixed grid of
// pixel chunks, then a thread per pixel for the gradient), the regression losses and binary
// cross-entropy (partial sums per block). Loss and metric sums in double, reduced in a fixed
// order; gradients written as the CPU kernels write them.
#include <cmath>

#include "backend/cuda/cuda_launch.cuh"
#include "backend/cuda/cuda_loss_kernels.h"

namespace dlt::cuda {

namespace {

// Every field 0, first_bad UINT64_MAX (no bad label or target yet).
void reset_result(LossResult* result, cudaStream_t stream) {
  DLT_CUDA(cudaMemsetAsync(result, 0, sizeof(LossResult), stream));
  DLT_CUDA(cudaMemsetAsync(&result->first_bad, 0xff, sizeof(result->first_bad), stream));
}

// One block: the weight sum W (the gradient's denominator) and the count of the labels that
// are not undefined, into result; the first bad label into result->first_bad.
__global__ void cross_entropy_weight_kernel(const int32_t* labels, int64_t n, int64_t c, const float* class_weights,
                                            bool undefined_labels, LossResult* result) {
  double w = 0, counted = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const int32_t l = labels[i];
    if (l == -1 && undefined_labels) continue;
    if (l < 0 || l >= c) {
      atomicMin(&result->first_bad, static_cast<unsigned long long>(i));
      continue;
    }
    w += class_weights ? static_cast<double>(class_weights[l]) : 1.0;
    counted += 1;
  }
  w = block_sum(w);
  counted = block_sum(counted);
  if (threadIdx.x == 0) {
    result->weight_sum = w;
    result->counted = static_cast<unsigned long long>(counted);
    result->classes = static_cast<unsigned long long>(c);
  }
}

// One warp per sample: weighted loss (double), whether the first maximal probability is the
// label's, and dlogits = w[l] * (probs - onehot) / W. An undefined label writes a zero row;
// a bad one (recorded by the weight kernel) writes nothing.
__global__ void cross_entropy_rows_kernel(const float* probs, const int32_t* labels, int64_t n, int64_t c,
                                          const float* class_weights, float* dlogits, double* row_loss,
                                          int32_t* row_correct, const LossResult* result) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  const double wsum = result->weight_sum;
  const float inv_w = wsum > 0 ? __fdiv_rn(1.f, static_cast<float>(wsum)) : 0.f;
  for (int64_t i = first_index() >> 5; i < n; i += warps) {
    const int32_t l = labels[i];
    if (l < 0 || l >= c) {
      if (lane == 0) {
        row_loss[i] = 0;
        row_correct[i] = 0;
      }
      if (l == -1 && dlogits)
        for (int64_t j = lane; j < c; j += 32) dlogits[i * c + j] = 0.f;
      continue;
    }
    const float w = class_weights ? class_weights[l] : 1.f;
    const float scale = class_weights ? __fmul_rn(w, inv_w) : inv_w;
    const float* row = probs + i * c;
    float best = -INFINITY;
    int64_t best_j = c;  // no candidate yet
    for (int64_t j = lane; j < c; j += 32) {
      const float v = row[j];
      // Strictly greater: the first maximum in this lane. As the CPU's scan (best starts at 0,
      // row[j] > row[best]): a NaN at j = 0 wins, a NaN elsewhere is never a candidate (it
      // must not hide a larger value later in this lane).
      if (best_j == c ? (j == 0 || !isnan(v)) : v > best) {
        best = v;
        best_j = j;
      }
      if (dlogits) {
        const float d = __fmul_rn(v, scale);
        dlogits[i * c + j] = j == l ? __fsub_rn(d, scale) : d;
      }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {  // keep the larger, on ties the first
      const float ov = __shfl_down_sync(0xffffffffu, best, offset);
      const int64_t oj = __shfl_down_sync(0xffffffffu, best_j, offset);
      if (oj != c && (best_j == c || ov > best || (ov == best && oj < best_j))) {
        best = ov;
        best_j = oj;
      }
    }
    if (lane == 0) {
      const double pl = row[l];
      row_loss[i] = static_cast<double>(w) * -log(pl < 1e-37 ? 1e-37 : pl);  // std::max's NaN behaviour, as the CPU
      row_correct[i] = best_j == l ? 1 : 0;
    }
  }
}

// One block: the loss sum and correct count over the rows.
__global__ void cross_entropy_total_kernel(const double* row_loss, const int32_t* row_correct, int64_t n,
                                           LossResult* result) {
  double loss = 0, right = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    loss += row_loss[i];
    right += row_correct[i];
  }
  loss = block_sum(loss);
  right = block_sum(right);
  if (threadIdx.x == 0) {
    result->loss_sum = loss;
    result->correct = static_cast<unsigned long long>(right);
  }
}

// The first maximal value's index of row[0..c) over a warp (valid in lane 0), as the CPU's scan
// and cross_entropy_rows_kernel: a NaN at j = 0 wins, a NaN elsewhere is never a candidate.
__device__ int64_t warp_first_max(const float* row, int64_t c, int lane) {
  float best = -INFINITY;
  int64_t best_j = c;  // no candidate yet
  for (int64_t j = lane; j < c; j += 32) {
    const float v = row[j];
    if (best_j == c ? (j == 0 || !isnan(v)) : v > best) {
      best = v;
      best_j = j;
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) {  // keep the larger, on ties the first
    const float ov = __shfl_down_sync(0xffffffffu, best, offset);
    const int64_t oj = __shfl_down_sync(0xffffffffu, best_j, offset);
    if (oj != c && (best_j == c || ov > best || (ov == best && oj < best_j))) {
      best = ov;
      best_j = oj;
    }
  }
  return best_j;
}

// One warp per sample: the weighted focal loss w -alpha q^gamma log p (q = 1 - p of the label)
// and, with h = -alpha (q^gamma - gamma p q^(gamma-1) log p) w / W, dlogit_j = h ([j == l] - p_j).
// Undefined and bad labels as cross_entropy_rows_kernel.
__global__ void focal_rows_kernel(const float* probs, const int32_t* labels, int64_t n, int64_t c,
                                  const float* class_weights, float gamma, float alpha, float* dlogits,
                                  double* row_loss, int32_t* row_correct, const LossResult* result) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  const double wsum = result->weight_sum, inv_w = wsum > 0 ? 1.0 / wsum : 0.0;
  const double a = alpha, g = gamma;
  for (int64_t i = first_index() >> 5; i < n; i += warps) {
    const int32_t l = labels[i];
    if (l < 0 || l >= c) {
      if (lane == 0) {
        row_loss[i] = 0;
        row_correct[i] = 0;
      }
      if (l == -1 && dlogits)
        for (int64_t j = lane; j < c; j += 32) dlogits[i * c + j] = 0.f;
      continue;
    }
    const float* row = probs + i * c;
    const double w = class_weights ? static_cast<double>(class_weights[l]) : 1.0;
    const double pl = row[l], q = 1.0 - pl, log_p = log(pl < 1e-37 ? 1e-37 : pl), qg = pow(q, g);
    if (dlogits) {
      const double bend = g > 0 && q > 0 ? g * pl * pow(q, g - 1) * log_p : 0.0;
      const double h = -a * (qg - bend) * w * inv_w;
      for (int64_t j = lane; j < c; j += 32)
        dlogits[i * c + j] = static_cast<float>(h * ((j == l ? 1.0 : 0.0) - static_cast<double>(row[j])));
    }
    const int64_t best_j = warp_first_max(row, c, lane);
    if (lane == 0) {
      row_loss[i] = -(w * a * qg * log_p);
      row_correct[i] = best_j == l ? 1 : 0;
    }
  }
}

// ---- generalized Dice ----
constexpr int64_t kDiceMaxChunks = 64;  // pixel chunks per image (blocks of the sums)

int64_t dice_chunks(int64_t pixels) {
  int64_t g = (pixels + kThreads * 4 - 1) / (kThreads * 4);
  return g < 1 ? 1 : g > kDiceMaxChunks ? kDiceMaxChunks : g;
}

// Block (chunk, image): over the chunk's counted pixels, per class k the sum of y_k^2 (kSquares:
// Dice) or of y_k (Tversky), the sum of y_k where the label is k, and the count of k, into
// partials[(image * chunks + chunk) * (3c + 1) + 3k ..]; the pixels whose first maximum is their
// label at [3c].
constexpr int64_t kOverlapFields = 3;

template <bool kSquares>
__global__ void overlap_partial_kernel(const float* probs, const int32_t* labels, int64_t pixels, int64_t c,
                                       int64_t chunks, double* partials) {
  const int64_t img = blockIdx.y, stride = chunks * blockDim.x, start = blockIdx.x * blockDim.x + threadIdx.x;
  const float* p = probs + img * pixels * c;
  const int32_t* lab = labels + img * pixels;
  double* out = partials + (img * chunks + blockIdx.x) * (kOverlapFields * c + 1);
  double right = 0;
  for (int64_t i = start; i < pixels; i += stride) {
    const int32_t l = lab[i];
    if (l < 0 || l >= c) continue;
    const float* row = p + i * c;
    int64_t best = 0;
    for (int64_t j = 1; j < c; ++j)
      if (row[j] > row[best]) best = j;
    right += best == l ? 1.0 : 0.0;
  }
  right = block_sum(right);
  if (threadIdx.x == 0) out[kOverlapFields * c] = right;
  for (int64_t k = 0; k < c; ++k) {
    double first = 0, inter = 0, count = 0;
    for (int64_t i = start; i < pixels; i += stride) {
      const int32_t l = lab[i];
      if (l < 0 || l >= c) continue;
      const double v = p[i * c + k];
      first += kSquares ? v * v : v;
      if (l == k) inter += v, count += 1;
    }
    first = block_sum(first);
    inter = block_sum(inter);
    count = block_sum(count);
    if (threadIdx.x == 0) {
      double* q = out + kOverlapFields * k;
      q[0] = first, q[1] = inter, q[2] = count;
    }
  }
}

// Class k's sums of image img over its chunks (overlap_partial_kernel's fields).
struct ClassSums {
  double first = 0, inter = 0, count = 0;
};
__device__ ClassSums class_sums(const double* partials, int64_t img, int64_t c, int64_t chunks, int64_t k) {
  ClassSums s;
  for (int64_t ch = 0; ch < chunks; ++ch) {
    const double* q = partials + (img * chunks + ch) * (kOverlapFields * c + 1) + kOverlapFields * k;
    s.first += q[0], s.inter += q[1], s.count += q[2];
  }
  return s;
}

// A thread per image: w_k = 1 / n_k^2 (0 for n_k = 0), A = sum w a, B = sum w b into
// coef[image * (c + 2) ..]; the image's loss 1 - 2 A / B and whether it counts (B > 0).
__global__ void dice_image_kernel(const double* partials, int64_t images, int64_t c, int64_t chunks, double* coef,
                                  double* image_loss, double* image_counted) {
  for (int64_t img = first_index(); img < images; img += grid_stride()) {
    double* w = coef + img * (c + 2);
    double a = 0, b = 0;
    for (int64_t k = 0; k < c; ++k) {
      const ClassSums s = class_sums(partials, img, c, chunks, k);
      w[k] = s.count > 0 ? 1.0 / (s.count * s.count) : 0.0;
      a += w[k] * s.inter;
      b += w[k] * (s.first + s.count);
    }
    w[c] = a;
    w[c + 1] = b;
    image_loss[img] = b > 0 ? 1 - 2 * a / b : 0.0;
    image_counted[img] = b > 0 ? 1.0 : 0.0;
  }
}

// A thread per image: TI_k = (TP + e) / (TP + alpha FP + beta FN + e), the image's loss sum_k (1 -
// TI_k), whether it counts (a counted pixel), and the loss's derivatives by y_k where the label
// is k and where it is not into coef[(image * c + k) * 2 ..].
__global__ void tversky_image_kernel(const double* partials, int64_t images, int64_t c, int64_t chunks, double alpha,
                                     double beta, double* coef, double* image_loss, double* image_counted) {
  for (int64_t img = first_index(); img < images; img += grid_stride()) {
    double loss = 0, pixels = 0;
    for (int64_t k = 0; k < c; ++k) {
      const ClassSums s = class_sums(partials, img, c, chunks, k);
      const double num = s.inter + kTverskyEpsilon,
                   den = s.inter + alpha * (s.first - s.inter) + beta * (s.count - s.inter) + kTverskyEpsilon;
      loss += 1 - num / den;
      pixels += s.count;
      coef[(img * c + k) * 2] = -(den - num * (1 - beta)) / (den * den);
      coef[(img * c + k) * 2 + 1] = num * alpha / (den * den);
    }
    image_loss[img] = pixels > 0 ? loss : 0.0;
    image_counted[img] = pixels > 0 ? 1.0 : 0.0;
  }
}

// One block: the loss sum, the images that count (the mean's denominator) and the correct pixels.
__global__ void overlap_total_kernel(const double* partials, const double* image_loss, const double* image_counted,
                                     int64_t images, int64_t c, int64_t chunks, LossResult* result) {
  double loss = 0, counted = 0, right = 0;
  for (int64_t i = threadIdx.x; i < images; i += blockDim.x) loss += image_loss[i], counted += image_counted[i];
  for (int64_t i = threadIdx.x; i < images * chunks; i += blockDim.x)
    right += partials[i * (kOverlapFields * c + 1) + kOverlapFields * c];
  loss = block_sum(loss);
  counted = block_sum(counted);
  right = block_sum(right);
  if (threadIdx.x == 0) {
    result->loss_sum = loss;
    result->weight_sum = counted;
    result->correct = static_cast<unsigned long long>(right);
  }
}

// A thread per pixel: g_k = -2 w_k (t_k B - 2 A y_k) / (B^2 images) (Dice) or Tversky's
// coefficient of (k, t_k) / images, through the softmax: dlogit_k = y_k (g_k - sum_j y_j g_j); 0 for
// an undefined pixel.
template <bool kTversky>
__global__ void overlap_grad_kernel(const float* probs, const int32_t* labels, int64_t rows, int64_t pixels, int64_t c,
                                    const double* coef, const LossResult* result, float* dlogits) {
  const double images = result->weight_sum, inv_images = images > 0 ? 1.0 / images : 0.0;
  for (int64_t r = first_index(); r < rows; r += grid_stride()) {
    const int32_t l = labels[r];
    float* d = dlogits + r * c;
    if (l < 0 || l >= c) {
      for (int64_t k = 0; k < c; ++k) d[k] = 0.f;
      continue;
    }
    const float* row = probs + r * c;
    const int64_t img = r / pixels;
    auto grad = [&](int64_t k) {
      if constexpr (kTversky) {
        return inv_images * coef[(img * c + k) * 2 + (k == l ? 0 : 1)];
      } else {
        const double* w = coef + img * (c + 2);
        const double a = w[c], b = w[c + 1];
        return -2 * inv_images / (b * b) * w[k] * ((k == l ? b : 0.0) - 2 * a * row[k]);
      }
    };
    double dot = 0;
    for (int64_t k = 0; k < c; ++k) dot += row[k] * grad(k);
    for (int64_t k = 0; k < c; ++k) d[k] = static_cast<float>(row[k] * (grad(k) - dot));
  }
}

// ---- the losses on float targets: partial sums per block, then one block ----
constexpr int kLossPartialBlocks = 256;
constexpr int kLossFields = 5;  // partial sums per block

unsigned partial_blocks(int64_t work) {
  const unsigned b = grid_for(work);
  return b < kLossPartialBlocks ? b : kLossPartialBlocks;
}

// Sum over the blocks of field k of partials (every thread must call it; valid in thread 0).
__device__ double sum_field(const double* partials, int blocks, int k) {
  double s = 0;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) s += partials[b * kLossFields + k];
  return block_sum(s);
}

// Per block: the loss, squared, absolute and absolute percentage error sums and the count of
// nonzero targets; grad as the CPU kernel writes it.
__global__ void regression_partial_kernel(const float* y, const float* t, int64_t values, RegressionKind kind,
                                          float delta, float inv_n, float* grad, double* partials) {
  double s[kLossFields] = {0, 0, 0, 0, 0};  // loss, sq, abs, ape, ape count
  const double dd = delta;
  for (int64_t i = first_index(); i < values; i += grid_stride()) {
    const float yi = y[i], ti = t[i], ef = __fsub_rn(yi, ti);
    const double e = static_cast<double>(yi) - static_cast<double>(ti), a = fabs(e);
    s[1] += e * e;
    s[2] += a;
    if (ti != 0.f) {
      s[3] += a / fabs(static_cast<double>(ti));
      s[4] += 1;
    }
    float gi;
    if (kind == RegressionKind::kMse) {
      s[0] += e * e / 2;
      gi = __fmul_rn(ef, inv_n);
    } else if (kind == RegressionKind::kMae) {
      s[0] += a;
      gi = __fmul_rn(static_cast<float>((ef > 0.f) - (ef < 0.f)), inv_n);
    } else {
      s[0] += a <= dd ? e * e / 2 : dd * (a - dd / 2);
      gi = fabsf(ef) <= delta ? __fmul_rn(ef, inv_n) : __fmul_rn(ef > 0.f ? delta : -delta, inv_n);
    }
    if (grad) grad[i] = gi;
  }
  for (int k = 0; k < kLossFields; ++k) {
    const double v = block_sum(s[k]);
    if (threadIdx.x == 0) partials[blockIdx.x * kLossFields + k] = v;
  }
}

__global__ void regression_total_kernel(const double* partials, int blocks, int64_t values, int64_t images,
                                        LossResult* result) {
  double s[kLossFields];
  for (int k = 0; k < kLossFields; ++k) s[k] = sum_field(partials, blocks, k);
  if (threadIdx.x == 0) {
    result->loss_sum = s[0];
    result->sq_sum = s[1];
    result->abs_sum = s[2];
    result->ape_sum = s[3];
    result->ape_count = static_cast<unsigned long long>(s[4]);
    result->weight_sum = static_cast<double>(images);
    result->counted = static_cast<unsigned long long>(images);
    result->classes = static_cast<unsigned long long>(values / images);
    result->values = static_cast<unsigned long long>(values);
  }
}

// A thread per image: the loss (logs at least log 1e-37), tp / fp / fn at p >= 0.5 and whether
// every label is right; dlogits = (p - t) / n; a target not 0 or 1 into first_bad.
__global__ void bce_partial_kernel(const float* p, const float* t, int64_t images, int64_t c, float inv_n,
                                   float* dlogits, double* partials, LossResult* result) {
  double s[kLossFields] = {0, 0, 0, 0, 0};  // loss, tp, fp, fn, exact
  for (int64_t img = first_index(); img < images; img += grid_stride()) {
    bool all_right = true;
    for (int64_t j = img * c; j < (img + 1) * c; ++j) {
      const float pj = p[j], tj = t[j];
      if (tj != 0.f && tj != 1.f) atomicMin(&result->first_bad, static_cast<unsigned long long>(j));
      const bool positive = tj == 1.f, predicted = pj >= 0.5f;
      const double v = positive ? static_cast<double>(pj) : 1.0 - static_cast<double>(pj);
      s[0] -= log(v < 1e-37 ? 1e-37 : v);
      s[1] += predicted && positive ? 1 : 0;
      s[2] += predicted && !positive ? 1 : 0;
      s[3] += !predicted && positive ? 1 : 0;
      all_right = all_right && predicted == positive;
      if (dlogits) dlogits[j] = __fmul_rn(__fsub_rn(pj, tj), inv_n);
    }
    s[4] += all_right ? 1 : 0;
  }
  for (int k = 0; k < kLossFields; ++k) {
    const double v = block_sum(s[k]);
    if (threadIdx.x == 0) partials[blockIdx.x * kLossFields + k] = v;
  }
}

__global__ void bce_total_kernel(const double* partials, int blocks, int64_t images, int64_t c, LossResult* result) {
  double s[kLossFields];
  for (int k = 0; k < kLossFields; ++k) s[k] = sum_field(partials, blocks, k);
  if (threadIdx.x == 0) {
    result->loss_sum = s[0];
    result->tp = static_cast<unsigned long long>(s[1]);
    result->fp = static_cast<unsigned long long>(s[2]);
    result->fn = static_cast<unsigned long long>(s[3]);
    result->exact = static_cast<unsigned long long>(s[4]);
    result->weight_sum = static_cast<double>(images);
    result->counted = static_cast<unsigned long long>(images);
    result->classes = static_cast<unsigned long long>(c);
    result->values = static_cast<unsigned long long>(images * c);
  }
}

}  // namespace

size_t cross_entropy_scratch(int64_t n) { return static_cast<size_t>(n) * (sizeof(double) + sizeof(int32_t)); }

void cross_entropy(const float* probs, const int32_t* labels, int64_t n, int64_t c, const float* class_weights,
                   bool undefined_labels, float* dlogits, void* scratch, LossResult* result, cudaStream_t stream) {
  auto* row_loss = static_cast<double*>(scratch);
  auto* row_correct = reinterpret_cast<int32_t*>(row_loss + n);
  reset_result(result, stream);
  cross_entropy_weight_kernel<<<1, kThreads, 0, stream>>>(labels, n, c, class_weights, undefined_labels, result);
  DLT_LAUNCH_CHECK();
  if (n > 0) {
    cross_entropy_rows_kernel<<<grid_for(n, kThreads / 32), kThreads, 0, stream>>>(
        probs, labels, n, c, class_weights, dlogits, row_loss, row_correct, result);
    DLT_LAUNCH_CHECK();
  }
  cross_entropy_total_kernel<<<1, kThreads, 0, stream>>>(row_loss, row_correct, n, result);
  DLT_LAUNCH_CHECK();
}

void focal_cross_entropy(const float* probs, const int32_t* labels, int64_t n, int64_t c, const float* class_weights,
                         bool undefined_labels, float gamma, float alpha, float* dlogits, void* scratch,
                         LossResult* result, cudaStream_t stream) {
  auto* row_loss = static_cast<double*>(scratch);
  auto* row_correct = reinterpret_cast<int32_t*>(row_loss + n);
  reset_result(result, stream);
  cross_entropy_weight_kernel<<<1, kThreads, 0, stream>>>(labels, n, c, class_weights, undefined_labels, result);
  DLT_LAUNCH_CHECK();
  if (n > 0) {
    focal_rows_kernel<<<grid_for(n, kThreads / 32), kThreads, 0, stream>>>(
        probs, labels, n, c, class_weights, gamma, alpha, dlogits, row_loss, row_correct, result);
    DLT_LAUNCH_CHECK();
  }
  cross_entropy_total_kernel<<<1, kThreads, 0, stream>>>(row_loss, row_correct, n, result);
  DLT_LAUNCH_CHECK();
}

namespace {

// The scratch of generalized_dice and tversky: the partial sums, per image the coefficients
// (coef_per_image each), the loss and whether it counts.
size_t overlap_scratch(int64_t rows, int64_t c, int64_t images, int64_t coef_per_image) {
  const int64_t chunks = dice_chunks(rows / images);
  return static_cast<size_t>(images * chunks * (kOverlapFields * c + 1) + images * coef_per_image + 2 * images) *
         sizeof(double);
}

// The two losses' common steps; image_step(partials, coef, image_loss, image_counted) launches the
// per-image kernel.
template <bool kTversky, class ImageStep>
void overlap_loss(const float* probs, const int32_t* labels, int64_t rows, int64_t c, int64_t images,
                  bool undefined_labels, int64_t coef_per_image, float* dlogits, void* scratch, LossResult* result,
                  cudaStream_t stream, ImageStep image_step) {
  const int64_t pixels = rows / images, chunks = dice_chunks(pixels);
  auto* partials = static_cast<double*>(scratch);
  double* coef = partials + images * chunks * (kOverlapFields * c + 1);
  double* image_loss = coef + images * coef_per_image;
  double* image_counted = image_loss + images;
  reset_result(result, stream);
  // The labels' validity and count (weight_sum, replaced below by the images that count).
  cross_entropy_weight_kernel<<<1, kThreads, 0, stream>>>(labels, rows, c, nullptr, undefined_labels, result);
  DLT_LAUNCH_CHECK();
  const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(images));
  overlap_partial_kernel<!kTversky><<<grid, kThreads, 0, stream>>>(probs, labels, pixels, c, chunks, partials);
  DLT_LAUNCH_CHECK();
  image_step(partials, chunks, coef, image_loss, image_counted);
  DLT_LAUNCH_CHECK();
  overlap_total_kernel<<<1, kThreads, 0, stream>>>(partials, image_loss, image_counted, images, c, chunks, result);
  DLT_LAUNCH_CHECK();
  if (dlogits) {
    overlap_grad_kernel<kTversky>
        <<<grid_for(rows), kThreads, 0, stream>>>(probs, labels, rows, pixels, c, coef, result, dlogits);
    DLT_LAUNCH_CHECK();
  }
}

}  // namespace

size_t generalized_dice_scratch(int64_t rows, int64_t c, int64_t images) {
  return overlap_scratch(rows, c, images, c + 2);
}

void generalized_dice(const float* probs, const int32_t* labels, int64_t rows, int64_t c, int64_t images,
                      bool undefined_labels, float* dlogits, void* scratch, LossResult* result, cudaStream_t stream) {
  overlap_loss<false>(probs, labels, rows, c, images, undefined_labels, c + 2, dlogits, scratch, result, stream,
                      [&](const double* partials, int64_t chunks, double* coef, double* loss, double* counted) {
                        dice_image_kernel<<<grid_for(images), kThreads, 0, stream>>>(partials, images, c, chunks,
                                                                                     coef, loss, counted);
                      });
}

size_t tversky_scratch(int64_t rows, int64_t c, int64_t images) { return overlap_scratch(rows, c, images, 2 * c); }

void tversky(const float* probs, const int32_t* labels, int64_t rows, int64_t c, int64_t images, bool undefined_labels,
             float alpha, float beta, float* dlogits, void* scratch, LossResult* result, cudaStream_t stream) {
  overlap_loss<true>(probs, labels, rows, c, images, undefined_labels, 2 * c, dlogits, scratch, result, stream,
                     [&](const double* partials, int64_t chunks, double* coef, double* loss, double* counted) {
                       tversky_image_kernel<<<grid_for(images), kThreads, 0, stream>>>(
                           partials, images, c, chunks, alpha, beta, coef, loss, counted);
                     });
}

size_t regression_loss_scratch(int64_t) { return kLossPartialBlocks * kLossFields * sizeof(double); }

void regression_loss(const float* outputs, const float* targets, int64_t values, int64_t images, RegressionKind kind,
                     float delta, float* grad, void* scratch, LossResult* result, cudaStream_t stream) {
  auto* partials = static_cast<double*>(scratch);
  const unsigned blocks = partial_blocks(values);
  reset_result(result, stream);
  regression_partial_kernel<<<blocks, kThreads, 0, stream>>>(outputs, targets, values, kind, delta,
                                                             1.f / static_cast<float>(images), grad, partials);
  DLT_LAUNCH_CHECK();
  regression_total_kernel<<<1, kThreads, 0, stream>>>(partials, static_cast<int>(blocks), values, images, result);
  DLT_LAUNCH_CHECK();
}

size_t binary_cross_entropy_scratch(int64_t) { return kLossPartialBlocks * kLossFields * sizeof(double); }

void binary_cross_entropy(const float* probs, const float* targets, int64_t images, int64_t c, float* dlogits,
                          void* scratch, LossResult* result, cudaStream_t stream) {
  auto* partials = static_cast<double*>(scratch);
  const unsigned blocks = partial_blocks(images);
  reset_result(result, stream);
  bce_partial_kernel<<<blocks, kThreads, 0, stream>>>(probs, targets, images, c, 1.f / static_cast<float>(images),
                                                      dlogits, partials, result);
  DLT_LAUNCH_CHECK();
  bce_total_kernel<<<1, kThreads, 0, stream>>>(partials, static_cast<int>(blocks), images, c, result);
  DLT_LAUNCH_CHECK();
}

}  // namespace dlt::cuda
