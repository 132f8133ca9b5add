// Launcher of the channel shuffle kernel (Backend::channel_shuffle): enqueues on stream,
// checks the launch, returns without synchronizing; pixels * c == 0 launches nothing.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace dlt::cuda {

// y[p * c + j * groups + g] = x[p * c + g * (c / groups) + j] (groups divides c).
void channel_shuffle(const float* x, float* y, int64_t pixels, int64_t c, int64_t groups, cudaStream_t stream);

}  // namespace dlt::cuda
