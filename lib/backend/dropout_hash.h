// The dropout mask's hash, shared by the CPU loop and the CUDA kernel so that both backends
// draw the same mask bit for bit: a counter-based hash of (key, index), so the mask depends on
// neither thread count nor launch geometry. No CUDA header is needed to include this.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define DLT_HOST_DEVICE __host__ __device__
#else
#define DLT_HOST_DEVICE
#endif

namespace dlt {

DLT_HOST_DEVICE inline uint64_t dropout_hash(uint64_t key, uint64_t i) {
  uint64_t z = key + (i + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A uniform in [0, 1) from the hash's top 24 bits; an element is kept when it is >= p.
DLT_HOST_DEVICE inline float dropout_uniform(uint64_t key, uint64_t i) {
  return static_cast<float>(dropout_hash(key, i) >> 40) * 0x1p-24f;
}

}  // namespace dlt
