// The collectives of synchronized batch norm (batch_norm_layer.cpp), over the Communicator
// interface only.
#pragma once
#include "backend/collectives.h"
#include "tensor/tensor.h"

namespace dlt {

// Synchronized batch norm's collectives, called by the batchNormalization layer during
// forward and backward (every rank in the same order; a rank with an empty share passes
// zeros and weight 0). Host tensors are reduced in place in double precision; device tensors
// with the *_float versions below (no host wait).
// mean, var (C): in, this rank's batch mean and biased variance; out, the global batch's:
//   mean = sum_i w_i mean_i,  var = sum_i w_i (var_i + mean_i^2) - mean^2
// in double precision (one all-reduce of 2C doubles; the float inputs bound the error).
// scratch: (C) on the same device, kept by the caller (the device path needs a copy of the
// rank's mean; no allocation per call).
void sync_batch_norm_moments(Communicator& comm, double weight, Tensor& mean, Tensor& var, Tensor& scratch);
// a, b (C): in, this rank's values; out, sum_i w_i a_i and sum_i w_i b_i (2C doubles).
void sync_batch_norm_sums(Communicator& comm, double weight, Tensor& a, Tensor& b);
// The same with float collectives on the tensors' own device (backend element-wise ops, no
// host copies): the variance in two passes, var = sum_i w_i (var_i + (mean_i - mean)^2), so no
// cancellation; two all-reduces of C floats each for the moments and for the sums.
void sync_batch_norm_moments_float(Communicator& comm, double weight, Tensor& mean, Tensor& var, Tensor& scratch);
void sync_batch_norm_sums_float(Communicator& comm, double weight, Tensor& a, Tensor& b);

}  // namespace dlt
