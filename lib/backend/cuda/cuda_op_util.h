// Helpers shared by the cuDNN / cuBLAS ops: RAII descriptor handles, NHWC tensor descriptors,
// int range checks that throw ShapeError naming the op, argument size checks, the TF32 switch
// (AllowTF32), workspace carving and the bfloat16 scratch of Precision: mixed.
// Internal to lib/backend/cuda.
#pragma once
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include <cuda_bf16.h>

#include "backend/backend_options.h"
#include "backend/cuda/cuda_common.h"
#include "util/check.h"
#include "util/error.h"

namespace dlt::cuda {

// Non-copyable owner of one cuDNN descriptor.
template <class T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class CudnnDesc {
 public:
  CudnnDesc() { DLT_CUDNN(Create(&d_)); }
  ~CudnnDesc() { Destroy(d_); }
  CudnnDesc(const CudnnDesc&) = delete;
  CudnnDesc& operator=(const CudnnDesc&) = delete;
  operator T() const { return d_; }  // NOLINT: passes straight into cuDNN calls

 private:
  T d_{};
};

using TensorDesc = CudnnDesc<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc = CudnnDesc<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDesc =
    CudnnDesc<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;
using PoolingDesc = CudnnDesc<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor, cudnnDestroyPoolingDescriptor>;
using ActivationDesc =
    CudnnDesc<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor, cudnnDestroyActivationDescriptor>;
using LrnDescriptor = CudnnDesc<cudnnLRNDescriptor_t, cudnnCreateLRNDescriptor, cudnnDestroyLRNDescriptor>;

// v as an int for cuDNN / cuBLAS, or ShapeError "<op>: <what> = v exceeds ...".
inline int to_int(int64_t v, const std::string& op, const char* what) {
  if (v < 0 || v > INT_MAX)
    throw ShapeError(op + ": " + what + " = " + std::to_string(v) +
                     " does not fit cuDNN/cuBLAS's 32-bit sizes (use a smaller MiniBatchSize)");
  return static_cast<int>(v);
}

// A packed (n, h, w, c) tensor in NHWC memory order (float32 unless type says otherwise).
inline void set_nhwc(cudnnTensorDescriptor_t d, int64_t n, int64_t h, int64_t w, int64_t c, const std::string& op,
                     cudnnDataType_t type = CUDNN_DATA_FLOAT) {
  DLT_CUDNN(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NHWC, type, to_int(n, op, "N"), to_int(c, op, "C"),
                                       to_int(h, op, "H"), to_int(w, op, "W")));
  if (n * h * w * c > INT_MAX)
    throw ShapeError(op + ": " + std::to_string(n) + "x" + std::to_string(h) + "x" + std::to_string(w) + "x" +
                     std::to_string(c) + " has more than 2^31 elements (use a smaller MiniBatchSize)");
}

// A (1, c, 1, 1) per-channel vector (bias, scale, statistics).
inline void set_channels(cudnnTensorDescriptor_t d, int64_t c, const std::string& op) {
  DLT_CUDNN(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, to_int(c, op, "C"), 1, 1));
}

// Throws when a caller passes a tensor of the wrong size or on the wrong device.
inline void expect_gpu(const Tensor& t, int64_t numel, const CudaContext& ctx, const char* op, const char* what) {
  DLT_CHECK(t.defined() && t.numel() == numel, op << ": " << what << " has " << (t.defined() ? t.numel() : 0)
                                                  << " elements, expected " << numel
                                                  << " (set up the op for this shape)");
  DLT_CHECK(t.device() == Device::cuda(ctx.device), op << ": " << what << " is on " << t.device().str()
                                                       << ", expected cuda:" << ctx.device
                                                       << " (move it with Tensor::to)");
}

// Float32 convolutions and matrix products may use TF32 tensor cores only when the user
// asks for it (AllowTF32, env DLT_ALLOW_TF32=1): TF32's 10-bit mantissa breaks 1e-4
// agreement with the CPU. The ops read it from their backend's options.
inline bool tf32_allowed(const BackendOptions& options) { return options.allow_tf32; }

// CudnnWorkspaceMB in bytes: the upper bound for one convolution's workspace when choosing algorithms.
inline size_t workspace_limit(const BackendOptions& options) {
  return static_cast<size_t>(options.cudnn_workspace_mb) << 20;
}

// An owned device buffer of count floats (through the backend's caching allocator).
inline Tensor device_floats(int64_t count, const CudaContext& ctx) {
  return Tensor(Shape{count > 0 ? count : 1}, Device::cuda(ctx.device));
}

// An owned device buffer of count bfloat16 values (Precision: mixed scratch), held as a float
// tensor of half as many elements; as_bf16 gives its typed pointer.
inline Tensor device_bf16(int64_t count, const CudaContext& ctx) { return device_floats((count + 1) / 2, ctx); }
inline __nv_bfloat16* as_bf16(Tensor& t) { return reinterpret_cast<__nv_bfloat16*>(t.data()); }

// Precision: mixed multiplies bfloat16 on tensor cores: cuDNN's bfloat16 convolutions (its
// PSEUDO_BFLOAT16_CONFIG) need compute capability 8.0 or later, and the cuBLAS products follow
// the same rule so that a network is mixed everywhere or nowhere. Throws DeviceError otherwise.
inline void require_bf16(const CudaContext& ctx, const std::string& op) {
  int major = 0, minor = 0;
  DLT_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ctx.device));
  DLT_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ctx.device));
  if (major < 8)
    throw DeviceError(op +
                      ": Precision mixed needs bfloat16 tensor cores (compute capability 8.0 "
                      "or later) but cuda:" +
                      std::to_string(ctx.device) + " is " + std::to_string(major) + "." + std::to_string(minor) +
                      " (set Precision: single)");
}

// Bytes rounded up so that buffers carved out of one workspace stay 256-byte aligned.
inline size_t aligned_bytes(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Float buffers of the given sizes carved out of the device's shared workspace (valid until
// the next workspace() call: within one op call).
class WorkspaceCarve {
 public:
  WorkspaceCarve(CudaContext& ctx, std::initializer_list<int64_t> counts) {
    size_t bytes = 0;
    for (int64_t c : counts) bytes += aligned_bytes(static_cast<size_t>(c) * sizeof(float));
    char* base = static_cast<char*>(ctx.workspace(bytes));
    for (int64_t c : counts) {
      ptrs_.push_back(reinterpret_cast<float*>(base));
      base += aligned_bytes(static_cast<size_t>(c) * sizeof(float));
    }
  }
  float* operator[](size_t i) const { return ptrs_[i]; }

 private:
  std::vector<float*> ptrs_;
};

// cuDNN pads symmetrically: it applies ph = min(top, bottom) and pw = min(left, right); the
// excess (et, eb, el, er) the op pads explicitly into an input of hx x wx.
struct PadSplit {
  int64_t ph = 0, pw = 0, et = 0, eb = 0, el = 0, er = 0, hx = 0, wx = 0;
  bool explicit_pad = false;
  PadSplit() = default;
  PadSplit(int64_t h, int64_t w, int64_t top, int64_t bottom, int64_t left, int64_t right)
      : ph(std::min(top, bottom)),
        pw(std::min(left, right)),
        et(top - ph),
        eb(bottom - ph),
        el(left - pw),
        er(right - pw),
        hx(h + et + eb),
        wx(w + el + er),
        explicit_pad(et || eb || el || er) {}
};

// True for cuDNN 9's "not supported" family of statuses (3000..3999).
inline bool cudnn_not_supported(cudnnStatus_t s) {
  return static_cast<int>(s) / 1000 == static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED) / 1000;
}

}  // namespace dlt::cuda
