// Launchers of the CUDA backend's loss kernels (cuda_loss_kernels.cu): cross-entropy, focal
// cross-entropy, generalized Dice, the regression losses and binary cross-entropy, formulas as
// Backend::loss's (backend.h) and the CPU kernels'. Each enqueues on stream, writes its totals
// into *result (device memory) and returns without synchronizing. Every sum runs over a fixed
// grid in a fixed order: results do not change from run to run.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace dlt::cuda {

// Written by the loss kernels, laid out as LossTotals (backend/loss.h; static_asserts in
// cuda_losses.cpp): first_bad = the first sample whose label is outside 0..c-1 (and not an
// allowed -1), or the first binary target not 0 or 1; UINT64_MAX when all are valid. The
// fields a loss does not fill are 0.
struct LossResult {
  double loss_sum;
  double weight_sum;
  unsigned long long correct;
  unsigned long long counted;
  unsigned long long first_bad;
  unsigned long long classes;
  double sq_sum, abs_sum, ape_sum;
  unsigned long long values, ape_count;
  unsigned long long tp, fp, fn, exact;
};

// The weighted mean cross-entropy of Backend::cross_entropy. class_weights (c) and dlogits may
// be null; undefined_labels: a label of -1 counts nowhere (its dlogits row is 0).
// scratch: cross_entropy_scratch(n) bytes (8-byte aligned).
size_t cross_entropy_scratch(int64_t n);
void cross_entropy(const float* probs, const int32_t* labels, int64_t n, int64_t c, const float* class_weights,
                   bool undefined_labels, float* dlogits, void* scratch, LossResult* result, cudaStream_t stream);

// Focal cross-entropy, -alpha (1 - p)^gamma log p, weighted and averaged as cross_entropy.
// scratch: cross_entropy_scratch(n) bytes.
void focal_cross_entropy(const float* probs, const int32_t* labels, int64_t n, int64_t c, const float* class_weights,
                         bool undefined_labels, float gamma, float alpha, float* dlogits, void* scratch,
                         LossResult* result, cudaStream_t stream);

// Generalized Dice per image of rows / images pixels, mean over the images with a counted pixel.
// scratch: generalized_dice_scratch(rows, c, images) bytes.
size_t generalized_dice_scratch(int64_t rows, int64_t c, int64_t images);
void generalized_dice(const float* probs, const int32_t* labels, int64_t rows, int64_t c, int64_t images,
                      bool undefined_labels, float* dlogits, void* scratch, LossResult* result, cudaStream_t stream);

// Tversky's smoothing (backend/loss.h's kTverskyEpsilon; cuda_losses.cpp checks they agree).
constexpr double kTverskyEpsilon = 1e-8;

// Tversky (alpha, beta) per image of rows / images pixels, summed over the classes, mean over
// the images with a counted pixel. scratch: tversky_scratch(rows, c, images) bytes.
size_t tversky_scratch(int64_t rows, int64_t c, int64_t images);
void tversky(const float* probs, const int32_t* labels, int64_t rows, int64_t c, int64_t images, bool undefined_labels,
             float alpha, float beta, float* dlogits, void* scratch, LossResult* result, cudaStream_t stream);

// mse, mae or huber (delta) on values = images * width outputs and targets; grad may be null.
// scratch: regression_loss_scratch(values) bytes.
enum class RegressionKind : int { kMse, kMae, kHuber };
size_t regression_loss_scratch(int64_t values);
void regression_loss(const float* outputs, const float* targets, int64_t values, int64_t images, RegressionKind kind,
                     float delta, float* grad, void* scratch, LossResult* result, cudaStream_t stream);

// Binary cross-entropy of sigmoid probabilities against 0/1 targets, images rows of c; dlogits
// (the gradient to the sigmoid's input) may be null. scratch: binary_cross_entropy_scratch(images)
// bytes.
size_t binary_cross_entropy_scratch(int64_t images);
void binary_cross_entropy(const float* probs, const float* targets, int64_t images, int64_t c, float* dlogits,
                          void* scratch, LossResult* result, cudaStream_t stream);

}  // namespace dlt::cuda
