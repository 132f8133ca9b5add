// The data-parallel steps of a training iteration (seed 004's aggregate* functions), each a
// collective every rank calls in the same order, a rank with an empty share included.
// Rank i holds n_i of the N images of the global mini-batch and a loss / gradient that are
// means over its own images; weighting by w_i = n_i / N before summing gives exactly the
// mean over the global mini-batch.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "layers/batch_norm_sync.h"

namespace dlt {

class Network;

struct GlobalTotals {
  double images = 0;   // N: images in the global mini-batch (all ranks)
  double loss = 0;     // mean loss over the N images
  double correct = 0;  // correct predictions over the N images (pixels when per pixel); the headline's sum
  double counted = 0;  // labels counted: N, or the pixels that are not undefined
  double weight = 1;   // this rank's w = n / N
};

// This rank's share of the global mini-batch, known before forward (synchronized batch norm
// and the gradient buckets need it). known_global > 0 is N when every rank knows it (no image
// was skipped: the loader's global batch size), so nothing is communicated; otherwise one
// all-reduce of n (one double, a host wait). In one process {n, 1}.
struct GlobalShare {
  int64_t images = 0;  // N
  double weight = 1;   // w = n / N (0 when N is 0)
};
GlobalShare global_share(Communicator& comm, int64_t images, int64_t known_global = 0);

// All-reduces (n, n * loss, correct, counted) of this rank's share; counted < 0: n (one label
// per image).
GlobalTotals all_reduce_totals(Communicator& comm, int64_t images, double mean_loss, double correct,
                               double counted = -1);

// Rank 0's `bytes` on every rank (others pass anything): one all-reduce of two doubles (the
// size, and whether rank 0 `failed`), then one broadcast of the bytes packed into floats on
// `device` (the communicator's: CPU for Gloo, the rank's GPU for NCCL). When rank 0 failed,
// the other ranks throw CommError "rank R of N: rank 0 could not <what>" and rank 0 gets ""
// back (it reports its own error).
std::string broadcast_from_rank0(Communicator& comm, const std::string& bytes, bool failed, Device device,
                                 const std::string& what);
// grads <- sum over ranks of w_i * grads_i (one all-reduce of the flat buffer, after backward).
void all_reduce_gradients(Communicator& comm, Tensor& flat_grads, double weight);

// Batch-norm TrainedMean / TrainedVariance combined across ranks (seed 004's aggregateState,
// for per-worker batch statistics; synchronized batch norm needs no aggregation):
//   mean = sum_i w_i mean_i;  variance = sum_i w_i (var_i + (mean_i - mean)^2).
// Two all-reduces for all batch-norm layers together. No-op without batch norm.
void aggregate_batch_norm_states(Communicator& comm, Network& net, double weight);

// Synchronized batch norm's collectives: layers/batch_norm_sync.h.

// The gradient all-reduce in buckets that start while backward is still running (PyTorch
// DDP's reducer). The flat gradient buffer is laid out in layer order and backward completes
// it from the end, so buckets are contiguous ranges cut from the end: bucket k starts (scaled
// by w, then all_reduce_sum_async) as soon as backward reports every gradient from its first
// element on final. Every rank cuts the same buckets and starts them in the same order.
class GradientBuckets {
 public:
  // bucket_elements <= 0: gradient_bucket_elements(comm.kind()). Nothing to do in a world of
  // one. timing (CommunicationTiming): the destructor logs the timing below.
  GradientBuckets(Communicator& comm, Tensor& flat_grads, int64_t bucket_elements = 0, bool timing = false);
  // With timing, logs the mean forward + backward time and the time finish()
  // waited per iteration (the all-reduce not hidden behind backward).
  ~GradientBuckets();
  void begin(double weight);        // before forward: this iteration's share
  void ready_from(int64_t offset);  // gradients at flat offsets >= offset are final
  void finish();                    // starts the remaining buckets and waits for all of them
  size_t count() const { return buckets_.size(); }

 private:
  Communicator& comm_;
  std::vector<Tensor> buckets_;  // views of flat_grads, last range first
  std::vector<int64_t> starts_;  // flat offset of each bucket's first element
  size_t next_ = 0;
  double weight_ = 1;
  // timing: seconds since begin(), at the end of backward and after finish().
  bool timing_ = false;
  std::chrono::steady_clock::time_point began_, backward_done_;
  double compute_ = 0, exposed_ = 0;
  int64_t iterations_ = 0;
};

// Elements per gradient bucket: megabytes of float32 (GradientBucketSizeMB), or with mb <= 0
// (auto) kBucketMB for
// Gloo (CPU: each all-reduce costs ~0.15 ms, measured) or kNcclBucketMB for NCCL (PyTorch
// DDP's 25 MB: over NVLink a collective's fixed cost is tens of microseconds).
constexpr double kBucketMB = 0.25;
constexpr double kNcclBucketMB = 25;
int64_t gradient_bucket_elements(const std::string& comm_kind = "gloo", double mb = 0);

// Every rank takes rank 0's learnables and states (identical seeds make them equal already;
// this makes it certain, input normalization statistics included).
void broadcast_model(Communicator& comm, Network& net);

}  // namespace dlt
