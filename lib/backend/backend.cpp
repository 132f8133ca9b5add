// Backend's public methods: every argument check, written once for all backends, then the
// device's registered kernel; the loss read later where there is no AsyncDevice (computed at once);
// StepScalars and Adam's bias correction; backend_for().
#include "backend/backend.h"

#include <atomic>
#include <cmath>
#include <sstream>
#include <utility>

#include "backend/async_device.h"
#include "backend/kernel_kinds.h"
#include "util/error.h"
#include "util/rng.h"

namespace dlt {

Backend& cpu_backend(const BackendOptions& options);              // backend/cpu/cpu_backend.cpp
Backend& cuda_backend(int index, const BackendOptions& options);  // backend/cuda_plugin.cpp: the plugin's, or throws

namespace {

void same_numel(const Tensor& a, const Tensor& b, const char* op) {
  DLT_CHECK(a.numel() == b.numel(), op << ": tensors of " << a.numel() << " and " << b.numel() << " elements");
}

// t is defined and on device d.
void on(const Tensor& t, Device d, const char* op) {
  DLT_CHECK(t.defined() && t.device() == d, op << ": a tensor is "
                                               << (t.defined() ? "on " + t.device().str() : "undefined")
                                               << ", expected " << d.str() << " (move it with Tensor::to)");
}

void slot(const Tensor& norms, int64_t index, const char* op) {
  DLT_CHECK(index >= 0 && index < norms.numel(), op << ": slot " << index << " of " << norms.numel() << " norms");
}

// The layout of a totals tensor (the CUDA backend's kernel writes the same struct).
static_assert(sizeof(LossTotals) <= Backend::kLossTotalsFloats * sizeof(float));

void check_totals(const Tensor& totals, Device d) {
  DLT_CHECK(totals.defined() && totals.numel() >= Backend::kLossTotalsFloats,
            "loss totals: need a tensor of " << Backend::kLossTotalsFloats << " floats");
  on(totals, d, "loss totals");
}

// The device type's kernel of kind K, looked up in the registry once per type and kept (a
// CUDA kernel is registered before any CUDA backend exists: the plugin registers on load).
template <class K>
typename K::Fn* kernel_of(DeviceType type) {
  static std::atomic<typename K::Fn*> slots[2] = {};
  auto& slot = slots[type == DeviceType::kCpu ? 0 : 1];
  typename K::Fn* f = slot.load(std::memory_order_acquire);
  if (!f) {
    const std::vector<op_registry::Entry> found = op_registry::find(K::kOp, type);
    if (found.empty()) op_registry::no_kernel(K::kOp, type);
    f = reinterpret_cast<typename K::Fn*>(found.front().fn);
    slot.store(f, std::memory_order_release);
  }
  return f;
}

}  // namespace

template <class K, class... Args>
auto Backend::run(Args&&... args) {
  return kernel_of<K>(device().type)(*this, std::forward<Args>(args)...);
}

void Backend::fill(Tensor& t, float value) {
  on(t, device(), "fill");
  run<FillKernel>(t, value);
}

void Backend::copy(const Tensor& src, Tensor& dst) {
  same_numel(src, dst, "copy");
  on(src, device(), "copy");
  on(dst, device(), "copy");
  run<CopyKernel>(src, dst);
}

void Backend::axpby(float a, const Tensor& x, float b, Tensor& y) {
  same_numel(x, y, "axpby");
  on(x, device(), "axpby");
  on(y, device(), "axpby");
  run<AxpbyKernel>(a, x, b, y);
}

void Backend::sum(const std::vector<const Tensor*>& xs, Tensor& y) {
  DLT_CHECK(!xs.empty(), "sum: no inputs");
  on(y, device(), "sum");
  for (const Tensor* x : xs) {
    same_numel(*x, y, "sum");
    on(*x, device(), "sum");
  }
  run<SumKernel>(xs, y);
}

void Backend::scale(Tensor& t, float s) {
  on(t, device(), "scale");
  run<ScaleKernel>(t, s);
}

void Backend::clamp(Tensor& t, float lo, float hi) {
  on(t, device(), "clamp");
  run<ClampKernel>(t, lo, hi);
}

double Backend::sum_squares(const Tensor& t) {
  on(t, device(), "sum_squares");
  return run<SumSquaresKernel>(t);
}

void Backend::l2_norm_into(const Tensor& t, Tensor& norms, int64_t index, bool accumulate) {
  on(t, device(), "l2_norm_into");
  on(norms, device(), "l2_norm_into");
  slot(norms, index, "l2_norm_into");
  run<L2NormIntoKernel>(t, norms, index, accumulate);
}

void Backend::clip_to_norm(Tensor& t, const Tensor& norms, int64_t index, double threshold) {
  on(t, device(), "clip_to_norm");
  on(norms, device(), "clip_to_norm");
  slot(norms, index, "clip_to_norm");
  run<ClipToNormKernel>(t, norms, index, threshold);
}

void Backend::shift_scale(const Tensor& x, const Tensor& shift, const Tensor& mul, Tensor& y) {
  same_numel(x, y, "shift_scale");
  const int64_t n = x.numel(), ns = shift.numel(), nm = mul.defined() ? mul.numel() : 1;
  DLT_CHECK(ns > 0 && nm > 0 && n % ns == 0 && n % nm == 0,
            "shift_scale: " << ns << " shifts / " << nm << " multipliers do not tile " << n << " elements");
  on(x, device(), "shift_scale");
  on(shift, device(), "shift_scale");
  on(y, device(), "shift_scale");
  if (mul.defined()) on(mul, device(), "shift_scale");
  run<ShiftScaleKernel>(x, shift, mul, y);
}

void Backend::dropout_forward(const Tensor& x, Tensor& y, Tensor& mask, float p, uint64_t seed, uint64_t stream) {
  same_numel(x, y, "dropout");
  same_numel(x, mask, "dropout mask");
  on(x, device(), "dropout");
  on(y, device(), "dropout");
  on(mask, device(), "dropout");
  // Every backend: the same key, so the same mask for the same (seed, stream); kept values
  // are scaled by 1 / (1 - p).
  const uint64_t key = Rng::derive(seed, {stream}).next_u64();
  const float keep_value = p < 1.f ? 1.f / (1.f - p) : 0.f;
  run<DropoutKernel>(x, y, mask, p, key, keep_value);
}

void Backend::multiply(const Tensor& x, const Tensor& m, Tensor& y) {
  same_numel(x, m, "multiply");
  same_numel(x, y, "multiply");
  on(x, device(), "multiply");
  on(m, device(), "multiply");
  on(y, device(), "multiply");
  run<MultiplySameSizeKernel>(x, m, y);
}

namespace {
// Each input has the values of its extent (ProductDesc::extent), on device dev.
void check_product(const std::vector<const Tensor*>& xs, const ProductDesc& d, Device dev, const char* op) {
  DLT_CHECK(!xs.empty(), op << ": no inputs");
  DLT_CHECK(d.n >= 0 && d.pixels >= 1 && d.c >= 1,
            op << ": " << d.n << " images of " << d.pixels << " pixels and " << d.c << " channels");
  DLT_CHECK(d.extents.empty() || d.extents.size() == xs.size(),
            op << ": " << d.extents.size() << " extents for " << xs.size() << " inputs");
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor* x = xs[i];
    const int64_t values = x && x->defined() ? x->numel() : 0;
    DLT_CHECK(x && x->defined() && values == d.values(d.extent(i, values)),
              op << ": input " << i << " has " << values << " elements, expected " << d.values(d.extent(i, values))
                 << " (" << d.n << " images of " << d.pixels << " pixels and " << d.c
                 << " channels, or one of them repeated)");
    on(*x, dev, op);
  }
}
}  // namespace

void Backend::multiply(const std::vector<const Tensor*>& xs, Tensor& y, const ProductDesc& d) {
  check_product(xs, d, device(), "multiply");
  DLT_CHECK(y.defined() && y.numel() == d.n * d.pixels * d.c,
            "multiply: y has " << (y.defined() ? y.numel() : 0) << " elements, expected " << d.n * d.pixels * d.c);
  on(y, device(), "multiply");
  for (const Tensor* x : xs) DLT_CHECK(x->data() != y.data() || y.numel() == 0, "multiply: y aliases an input");
  run<MultiplyKernel>(xs, y, d);
}

void Backend::multiply_backward(const Tensor& dy, const std::vector<const Tensor*>& xs, size_t i, Tensor& dx,
                                const ProductDesc& d) {
  check_product(xs, d, device(), "multiply_backward");
  DLT_CHECK(i < xs.size(), "multiply_backward: input " << i << " of " << xs.size());
  DLT_CHECK(dy.defined() && dy.numel() == d.n * d.pixels * d.c, "multiply_backward: dy has "
                                                                    << (dy.defined() ? dy.numel() : 0)
                                                                    << " elements, expected " << d.n * d.pixels * d.c);
  DLT_CHECK(dx.defined() && dx.numel() == xs[i]->numel(), "multiply_backward: dx has "
                                                              << (dx.defined() ? dx.numel() : 0) << " elements, input "
                                                              << i << " " << xs[i]->numel());
  on(dy, device(), "multiply_backward");
  on(dx, device(), "multiply_backward");
  if (dx.numel() == 0) return;
  DLT_CHECK(dx.data() != dy.data(), "multiply_backward: dx aliases dy");
  for (const Tensor* x : xs) DLT_CHECK(x->data() != dx.data(), "multiply_backward: dx aliases an input");
  run<MultiplyBackwardKernel>(dy, xs, i, dx, d);
}

void Backend::channel_moments(const Tensor& x, Tensor& mean, Tensor& var) {
  const int64_t c = mean.numel();
  DLT_CHECK(c > 0 && var.numel() == c && x.numel() % c == 0,
            "channel_moments: " << x.numel() << " elements do not tile " << c << " channels");
  on(mean, device(), "channel_moments");
  on(var, device(), "channel_moments");
  const int64_t positions = x.numel() / c;
  if (positions == 0) {
    run<FillKernel>(mean, 0.f);
    run<FillKernel>(var, 0.f);
    return;
  }
  on(x, device(), "channel_moments");
  run<ChannelMomentsKernel>(x, positions, mean, var);
}

void Backend::batch_norm_dx_correction(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& scale,
                                       float epsilon, double m, const Tensor& dshift, const Tensor& dscale,
                                       Tensor& dx) {
  const int64_t c = mean.numel();
  DLT_CHECK(c > 0 && x.numel() % c == 0 && dx.numel() == x.numel() && var.numel() == c && scale.numel() == c &&
                dshift.numel() == c && dscale.numel() == c,
            "batch_norm_dx_correction: shapes do not agree (" << x.numel() << " elements, " << c << " channels)");
  const int64_t positions = x.numel() / c;
  if (positions == 0 || m <= 0) return;
  for (const Tensor* t : {&x, &mean, &var, &scale, &dshift, &dscale, &static_cast<const Tensor&>(dx)})
    on(*t, device(), "batch_norm_dx_correction");
  run<BatchNormDxCorrectionKernel>(x, positions, mean, var, scale, epsilon, m, dshift, dscale, dx);
}

namespace {
void check_unpool(const Tensor& in, const Tensor& idx, const Tensor& out, const PoolDesc& d, Device dev,
                  const char* op) {
  const int64_t big = d.n * d.h * d.w * d.c, small = d.n * d.out_h() * d.out_w() * d.c;
  DLT_CHECK(in.defined() && idx.defined() && out.defined(), op << ": undefined tensor");
  DLT_CHECK(big == in.numel() + out.numel() - small && (in.numel() == big || in.numel() == small) &&
                idx.numel() == small && idx.dtype() == DType::kI32,
            op << ": tensors of " << in.numel() << ", " << idx.numel() << " and " << out.numel()
               << " elements for pooling " << d.h << "x" << d.w << " -> " << d.out_h() << "x" << d.out_w() << " of "
               << d.n << "x" << d.c << " planes (idx: int32)");
  on(in, dev, op);
  on(idx, dev, op);
  on(out, dev, op);
}
}  // namespace

void Backend::max_pool_indices(const Tensor& x, Tensor& idx, const PoolDesc& d) {
  check_unpool(x, idx, idx, d, device(), "max_pool_indices");
  DLT_CHECK(x.numel() == d.n * d.h * d.w * d.c, "max_pool_indices: x has " << x.numel() << " elements");
  run<MaxPoolIndicesKernel>(x, idx, d);
}

void Backend::max_unpool(const Tensor& x, const Tensor& idx, Tensor& y, const PoolDesc& d) {
  check_unpool(y, idx, x, d, device(), "max_unpool");
  DLT_CHECK(y.numel() == d.n * d.h * d.w * d.c, "max_unpool: y has " << y.numel() << " elements");
  run<MaxUnpoolKernel>(x, idx, y, d);
}

void Backend::max_unpool_backward(const Tensor& dy, const Tensor& idx, Tensor& dx, const PoolDesc& d) {
  check_unpool(dy, idx, dx, d, device(), "max_unpool_backward");
  DLT_CHECK(dy.numel() == d.n * d.h * d.w * d.c, "max_unpool_backward: dy has " << dy.numel() << " elements");
  run<MaxUnpoolBackwardKernel>(dy, idx, dx, d);
}

namespace {
void check_crop(const Tensor& big, const Tensor& small, const CropDesc& d, Device dev, const char* op) {
  DLT_CHECK(big.defined() && small.defined(), op << ": undefined tensor");
  DLT_CHECK(
      d.out_h >= 1 && d.out_w >= 1 && d.top >= 0 && d.left >= 0 && d.top + d.out_h <= d.h && d.left + d.out_w <= d.w,
      op << ": the window " << d.out_h << "x" << d.out_w << " at (" << d.top << ", " << d.left << ") is not inside "
         << d.h << "x" << d.w);
  DLT_CHECK(big.numel() == d.n * d.h * d.w * d.c && small.numel() == d.n * d.out_h * d.out_w * d.c,
            op << ": tensors of " << big.numel() << " and " << small.numel() << " elements for cropping " << d.n << "x"
               << d.h << "x" << d.w << "x" << d.c << " to " << d.out_h << "x" << d.out_w);
  on(big, dev, op);
  on(small, dev, op);
}
}  // namespace

void Backend::crop2d(const Tensor& x, Tensor& y, const CropDesc& d) {
  check_crop(x, y, d, device(), "crop2d");
  run<Crop2dKernel>(x, y, d);
}

void Backend::crop2d_backward(const Tensor& dy, Tensor& dx, const CropDesc& d) {
  check_crop(dx, dy, d, device(), "crop2d_backward");
  run<Crop2dBackwardKernel>(dy, dx, d);
}

namespace {
void check_shuffle(const Tensor& in, const Tensor& out, const ChannelShuffleDesc& d, Device dev, const char* op) {
  DLT_CHECK(in.defined() && out.defined(), op << ": undefined tensor");
  DLT_CHECK(d.pixels >= 0 && d.c >= 1 && d.groups >= 1 && d.c % d.groups == 0,
            op << ": " << d.groups << " groups do not divide " << d.c << " channels");
  DLT_CHECK(in.numel() == d.pixels * d.c && out.numel() == in.numel(), op << ": tensors of " << in.numel() << " and "
                                                                          << out.numel() << " elements for " << d.pixels
                                                                          << " pixels of " << d.c << " channels");
  DLT_CHECK(in.data() != out.data() || in.numel() == 0, op << ": the output must not be the input");
  on(in, dev, op);
  on(out, dev, op);
}

void check_slice(const Tensor& big, const Tensor& small, const ChannelSliceDesc& d, Device dev, const char* op) {
  DLT_CHECK(big.defined() && small.defined(), op << ": undefined tensor");
  DLT_CHECK(d.pixels >= 0 && d.count >= 1 && d.start >= 0 && d.start + d.count <= d.c,
            op << ": channels " << d.start << ".." << d.start + d.count - 1 << " are not inside 0.." << d.c - 1);
  DLT_CHECK(big.numel() == d.pixels * d.c && small.numel() == d.pixels * d.count,
            op << ": tensors of " << big.numel() << " and " << small.numel() << " elements for " << d.pixels
               << " pixels of " << d.c << " channels, " << d.count << " taken");
  on(big, dev, op);
  on(small, dev, op);
}
}  // namespace

void Backend::channel_shuffle(const Tensor& x, Tensor& y, const ChannelShuffleDesc& d) {
  check_shuffle(x, y, d, device(), "channel_shuffle");
  run<ChannelShuffleKernel>(x, y, d);
}

void Backend::channel_shuffle_backward(const Tensor& dy, Tensor& dx, const ChannelShuffleDesc& d) {
  check_shuffle(dy, dx, d, device(), "channel_shuffle_backward");
  ChannelShuffleDesc inverse = d;
  inverse.groups = d.c / d.groups;
  run<ChannelShuffleKernel>(dy, dx, inverse);
}

void Backend::channel_slice(const Tensor& x, Tensor& y, const ChannelSliceDesc& d) {
  check_slice(x, y, d, device(), "channel_slice");
  run<ChannelSliceKernel>(x, y, d);
}

void Backend::channel_slice_backward(const Tensor& dy, Tensor& dx, const ChannelSliceDesc& d) {
  check_slice(dx, dy, d, device(), "channel_slice_backward");
  run<ChannelSliceBackwardKernel>(dy, dx, d);
}

namespace {
void check_loss(const Tensor& probs, const Tensor& labels, const Tensor& dlogits, const LossOptions& opt, Device d) {
  const int64_t n = labels.numel();
  DLT_CHECK(n > 0 && probs.numel() % n == 0,
            "cross_entropy: " << probs.numel() << " probabilities for " << n << " labels");
  on(probs, d, "cross_entropy");
  on(labels, d, "cross_entropy labels");
  if (dlogits.defined()) {
    same_numel(probs, dlogits, "cross_entropy dlogits");
    on(dlogits, d, "cross_entropy dlogits");
  }
  if (opt.class_weights.defined()) {
    DLT_CHECK(opt.class_weights.numel() == probs.numel() / n, "cross_entropy: " << opt.class_weights.numel()
                                                                                << " class weights for "
                                                                                << probs.numel() / n << " classes");
    on(opt.class_weights, d, "cross_entropy class weights");
  }
}

// The mean loss of totals; throws DataError for a bad label (read from the device).
double finish_loss(const LossTotals& t, const Tensor& labels, int64_t* correct, int64_t* counted) {
  if (t.first_bad != UINT64_MAX && labels.dtype() == DType::kF32) {
    float target = 0;
    copy_bytes(&target, Device::cpu(), labels.data() + t.first_bad, labels.device(), sizeof(target));
    const uint64_t c = t.classes > 0 ? t.classes : 1;
    std::ostringstream os;
    os << "binary_cross_entropy: target " << target << " of image " << t.first_bad / c << ", class " << t.first_bad % c
       << " is not 0 or 1 (multi-label targets say whether a class is present)";
    throw DataError(os.str());
  }
  if (t.first_bad != UINT64_MAX) {
    int32_t label = 0;
    copy_bytes(&label, Device::cpu(), labels.data_i32() + t.first_bad, labels.device(), sizeof(label));
    throw DataError("cross_entropy: label " + std::to_string(label) + " of sample " + std::to_string(t.first_bad) +
                    " is outside 0.." + std::to_string(static_cast<int64_t>(t.classes) - 1) + " (the network has " +
                    std::to_string(t.classes) + " classes; check the labels)");
  }
  if (correct) *correct = static_cast<int64_t>(t.correct);
  if (counted) *counted = static_cast<int64_t>(t.counted);
  return t.weight_sum > 0 ? t.loss_sum / t.weight_sum : 0.0;
}
}  // namespace

double Backend::cross_entropy(const Tensor& probs, const Tensor& labels, Tensor& dlogits, int64_t* correct,
                              const LossOptions& opt, int64_t* counted) {
  check_loss(probs, labels, dlogits, opt, device());
  return finish_loss(run<CrossEntropyKernel>(probs, labels, opt, dlogits), labels, correct, counted);
}

void Backend::cross_entropy_async(const Tensor& probs, const Tensor& labels, Tensor& dlogits, Tensor& totals,
                                  const LossOptions& opt) {
  check_loss(probs, labels, dlogits, opt, device());
  check_totals(totals, device());
  if (async_) {
    async_->loss_async(probs, labels, opt, dlogits, totals);
    return;
  }
  const LossTotals t = run<CrossEntropyKernel>(probs, labels, opt, dlogits);
  copy_bytes(totals.data(), totals.device(), &t, Device::cpu(), sizeof(t));
}

double Backend::read_loss(const Tensor& totals, const Tensor& labels, int64_t* correct, int64_t* counted) {
  return read_loss_totals(totals, labels, correct, counted).loss_sum;
}

LossTotals Backend::read_loss_totals(const Tensor& totals, const Tensor& labels, int64_t* correct, int64_t* counted) {
  check_totals(totals, device());
  LossTotals t;
  if (async_)
    t = async_->read_loss_totals(totals);
  else
    copy_bytes(&t, Device::cpu(), totals.data(), totals.device(), sizeof(t));
  t.loss_sum = finish_loss(t, labels, correct, counted);
  return t;
}

namespace {
void check_float_targets(const Tensor& outputs, const Tensor& targets, const Tensor& grad, const LossOptions& opt,
                         Device d, const char* op) {
  DLT_CHECK(opt.images > 0 && outputs.numel() > 0 && outputs.numel() % opt.images == 0,
            op << ": " << outputs.numel() << " outputs for " << opt.images << " images");
  same_numel(outputs, targets, op);
  DLT_CHECK(targets.dtype() == DType::kF32, op << ": the targets must be float32");
  on(outputs, d, op);
  on(targets, d, op);
  if (grad.defined()) {
    same_numel(outputs, grad, op);
    on(grad, d, op);
  }
}

const char* loss_name(LossKind k) {
  switch (k) {
    case LossKind::kCrossEntropy:
      return "cross_entropy";
    case LossKind::kBinaryCrossEntropy:
      return "binary_cross_entropy";
    case LossKind::kMse:
      return "mse";
    case LossKind::kMae:
      return "mae";
    case LossKind::kHuber:
      return "huber";
    case LossKind::kGeneralizedDice:
      return "generalized_dice";
    case LossKind::kFocalCrossEntropy:
      return "focal_cross_entropy";
    case LossKind::kTversky:
      return "tversky";
  }
  return "loss";
}

// The checks of loss and loss_async: the tensors' sizes and devices, and each kind's options.
void check_loss_args(const Tensor& outputs, const Tensor& targets, const Tensor& grad, const LossOptions& opt,
                     Device d) {
  const char* op = loss_name(opt.kind);
  if (float_targets(opt.kind)) {
    check_float_targets(outputs, targets, grad, opt, d, op);
    DLT_CHECK(opt.kind != LossKind::kHuber || opt.huber_delta > 0, "huber: the transition point must be > 0");
    return;
  }
  check_loss(outputs, targets, grad, opt, d);
  if (opt.kind == LossKind::kGeneralizedDice || opt.kind == LossKind::kTversky) {
    DLT_CHECK(opt.images > 0 && targets.numel() % opt.images == 0,
              op << ": " << targets.numel() << " labels for " << opt.images << " images");
    DLT_CHECK(opt.kind != LossKind::kGeneralizedDice || !opt.class_weights.defined(),
              op << ": MATLAB's generalized Dice loss weights each class by its inverse squared pixel count and "
                    "takes no class weights; leave ClassWeights out");
    DLT_CHECK(opt.kind != LossKind::kTversky || !opt.class_weights.defined(),
              op << ": the Tversky loss sums its classes' indices unweighted and takes no class weights; leave "
                    "ClassWeights out");
  }
  if (opt.kind == LossKind::kTversky)
    DLT_CHECK(opt.tversky_alpha >= 0 && opt.tversky_beta >= 0 && opt.tversky_alpha + opt.tversky_beta > 0,
              op << ": Alpha and Beta must be >= 0, not both 0");
  if (opt.kind == LossKind::kFocalCrossEntropy)
    DLT_CHECK(opt.focal_gamma >= 0 && opt.focal_alpha > 0, op << ": Gamma must be >= 0 and Alpha > 0");
}
}  // namespace

LossTotals Backend::loss(const Tensor& outputs, const Tensor& targets, Tensor& grad, const LossOptions& opt) {
  check_loss_args(outputs, targets, grad, opt, device());
  switch (opt.kind) {
    case LossKind::kCrossEntropy:
      return run<CrossEntropyKernel>(outputs, targets, opt, grad);
    case LossKind::kBinaryCrossEntropy:
      return run<BinaryCrossEntropyKernel>(outputs, targets, opt, grad);
    case LossKind::kMse:
    case LossKind::kMae:
    case LossKind::kHuber:
      return run<RegressionLossKernel>(outputs, targets, opt, grad);
    case LossKind::kGeneralizedDice:
      return run<GeneralizedDiceKernel>(outputs, targets, opt, grad);
    case LossKind::kFocalCrossEntropy:
      return run<FocalCrossEntropyKernel>(outputs, targets, opt, grad);
    case LossKind::kTversky:
      return run<TverskyKernel>(outputs, targets, opt, grad);
  }
  DLT_CHECK(false, "loss: unknown loss kind " << static_cast<int>(opt.kind));
  return {};
}

void Backend::loss_async(const Tensor& outputs, const Tensor& targets, Tensor& grad, Tensor& totals,
                         const LossOptions& opt) {
  check_totals(totals, device());
  if (async_) {
    check_loss_args(outputs, targets, grad, opt, device());
    async_->loss_async(outputs, targets, opt, grad, totals);
    return;
  }
  const LossTotals t = loss(outputs, targets, grad, opt);
  copy_bytes(totals.data(), totals.device(), &t, Device::cpu(), sizeof(t));
}

float adam_correction(float b, int64_t t) { return 1.f / (1.f - static_cast<float>(std::pow(double(b), double(t)))); }

StepScalars StepScalars::at_step(const UpdateRule& rule, float lr, int64_t t) {
  StepScalars k;
  k.lr.value = lr;
  if (adam_family(rule.solver)) {
    DLT_CHECK(t >= 1, "adam_update: step " << t << " must start at 1");
    k.c1.value = adam_correction(rule.b1, t);
    k.c2.value = adam_correction(rule.b2, t);
  }
  return k;
}

void Backend::optimizer_update(const UpdateRule& rule, const StepScalars& k, Tensor& w, const Tensor& g, Tensor& m,
                               Tensor& s) {
  const char* op = rule.solver == Solver::kSgdm    ? "sgdm_update"
                   : rule.solver == Solver::kAdam  ? "adam_update"
                   : rule.solver == Solver::kAdamW ? "adamw_update"
                                                   : "rmsprop_update";
  const bool uses_m = rule.solver != Solver::kRmsprop, uses_s = rule.solver != Solver::kSgdm;
  same_numel(w, g, op);
  if (uses_m) same_numel(w, m, op);
  if (uses_s) same_numel(w, s, op);
  on(w, device(), op);
  on(g, device(), op);
  if (uses_m) on(m, device(), op);
  if (uses_s) on(s, device(), op);
  auto resolve = [&](const StepScalar& v) {
    if (!v.in) return ScalarArg{v.value, nullptr};
    DLT_CHECK(v.in->device() == device() && v.index >= 0 && v.index < v.in->numel(),
              op << ": step scalar " << v.index << " is not in a tensor of that many floats on " << device().str());
    return ScalarArg{0.f, v.in->data() + v.index};
  };
  UpdateScalars u{resolve(k.lr), ScalarArg{1.f, nullptr}, ScalarArg{1.f, nullptr}};
  if (adam_family(rule.solver)) {
    u.c1 = resolve(k.c1);
    u.c2 = resolve(k.c2);
  }
  run<OptimizerUpdateKernel>(rule, u, w, g, m, s);
}

void Backend::synchronize() {
  if (async_) async_->synchronize();
}

size_t Backend::peak_memory_bytes() const { return async_ ? async_->peak_memory_bytes() : 0; }

Backend& backend_for(Device device, const BackendOptions& options) {
  if (device.is_cpu()) return cpu_backend(options);
  return cuda_backend(device.index, options);
}

Backend& backend_for(Device device) { return backend_for(device, BackendOptions{}); }

}  // namespace dlt
