// The CUDA backend's element-wise product with broadcasting (Backend::multiply,
// multiply_backward; the DeviceType::kCuda kernels of kernel_kinds.h):
// the factors go to the kernels of cuda_multiply_kernels.cu kProductChunk at a time. The
// gradient of an input repeated over the pixels is a per-(image, channel) sum, of one repeated
// over the channels a per-pixel sum: with more factors than one launch takes, their product goes
// to a full-size scratch first.
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_multiply_kernels.h"
#include "backend/cuda/cuda_op_util.h"
#include "backend/kernel_kinds.h"

namespace dlt {
namespace {

struct Factor {
  const float* x;
  ProductDesc::Extent extent;
};

// fs[first, first + kProductChunk) as one launch's factors.
cuda::Factors chunk(const std::vector<Factor>& fs, size_t first) {
  cuda::Factors f{};
  for (size_t j = first; j < fs.size() && f.k < cuda::kProductChunk; ++j, ++f.k) {
    f.x[f.k] = fs[j].x;
    f.extent[f.k] = static_cast<unsigned char>(fs[j].extent);
  }
  return f;
}

// y = the product of fs, left to right, in launches of kProductChunk factors.
void product_all(const std::vector<Factor>& fs, float* y, const ProductDesc& d, cudaStream_t stream) {
  for (size_t first = 0; first < fs.size(); first += cuda::kProductChunk)
    cuda::product(chunk(fs, first), first > 0, y, d.n, d.pixels, d.c, stream);
}

Factor factor_of(const Tensor& x, size_t i, const ProductDesc& d) { return {x.data(), d.extent(i, x.numel())}; }

}  // namespace

static void cuda_multiply(Backend& be, const std::vector<const Tensor*>& xs, Tensor& y, const ProductDesc& d) {
  CudaBackend& gpu = cuda_backend_of(be);
  std::vector<Factor> fs;
  for (size_t i = 0; i < xs.size(); ++i) fs.push_back(factor_of(*xs[i], i, d));
  gpu.enter();
  product_all(fs, y.data(), d, gpu.context().stream);
}

static void cuda_multiply_backward(Backend& be, const Tensor& dy, const std::vector<const Tensor*>& xs, size_t i,
                                   Tensor& dx, const ProductDesc& d) {
  CudaBackend& gpu = cuda_backend_of(be);
  const cudaStream_t stream = gpu.context().stream;
  std::vector<Factor> fs{{dy.data(), ProductDesc::kFull}};
  for (size_t k = 0; k < xs.size(); ++k)
    if (k != i) fs.push_back(factor_of(*xs[k], k, d));
  gpu.enter();
  const ProductDesc::Extent extent = factor_of(*xs[i], i, d).extent;
  if (extent == ProductDesc::kFull) {
    product_all(fs, dx.data(), d, stream);
    return;
  }
  if (extent == ProductDesc::kPixels) {  // a per-pixel sum over the channels
    if (fs.size() <= static_cast<size_t>(cuda::kProductChunk)) {
      cuda::product_channel_sum(chunk(fs, 0), dx.data(), d.n, d.pixels, d.c, stream);
      return;
    }
    float* full = static_cast<float*>(gpu.scratch(static_cast<size_t>(d.n * d.pixels * d.c) * sizeof(float)));
    product_all(fs, full, d, stream);
    cuda::product_channel_sum(chunk({{full, ProductDesc::kFull}}, 0), dx.data(), d.n, d.pixels, d.c, stream);
    return;
  }
  const size_t partial_bytes = cuda::product_sum_scratch(d.n, d.pixels, d.c) * sizeof(double);
  if (fs.size() <= static_cast<size_t>(cuda::kProductChunk)) {
    cuda::product_sum(chunk(fs, 0), dx.data(), d.n, d.pixels, d.c, static_cast<double*>(gpu.scratch(partial_bytes)),
                      stream);
    return;
  }
  // More factors than one launch: their full product first, after the partials in the scratch.
  const size_t full_bytes = static_cast<size_t>(d.n * d.pixels * d.c) * sizeof(float);
  char* s = static_cast<char*>(gpu.scratch(cuda::aligned_bytes(partial_bytes) + full_bytes));
  float* full = reinterpret_cast<float*>(s + cuda::aligned_bytes(partial_bytes));
  product_all(fs, full, d, stream);
  cuda::product_sum(chunk({{full, ProductDesc::kFull}}, 0), dx.data(), d.n, d.pixels, d.c, reinterpret_cast<double*>(s),
                    stream);
}

DLT_REGISTER_KERNEL(MultiplyKernel, DeviceType::kCuda, cuda_multiply);
DLT_REGISTER_KERNEL(MultiplyBackwardKernel, DeviceType::kCuda, cuda_multiply_backward);

}  // namespace dlt
