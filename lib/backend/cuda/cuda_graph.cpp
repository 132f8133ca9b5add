// CudaBackend's CUDA Graphs: the compute stream captured in thread-local mode (this thread may
// make no unsafe call, other threads are unaffected), instantiated once, launched per step.
// The caching allocator guards the memory: nothing may be allocated or freed while capturing,
// and a graph whose blocks were freed since is never launched. docs/gpu.md "CUDA Graphs".
#include <string>

#include "backend/cuda/cuda_allocator.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "util/error.h"

namespace dlt {

void CudaBackend::not_capturing(const char* what) const {
  if (s_.capturing_)
    throw DeviceError(std::string(what) + " on cuda:" + std::to_string(device_) +
                      " while a CUDA graph is being captured (a captured step may not wait for "
                      "the device, read values back or upload; unset DLT_CUDA_GRAPH)");
}

void CudaBackend::begin_capture() {
  DLT_CHECK(!s_.capturing_, "begin_capture: cuda:" << device_ << " is already capturing");
  enter();
  drop_capture();
  // Uploads begun so far must be joined before the capture (a cross-stream wait inside it
  // would pull the copy stream into the graph).
  upload_wait();
  alloc_.begin_capture();
  s_.graph_loss_ = nullptr;
  const cudaError_t e = cudaStreamBeginCapture(ctx_.stream, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    alloc_.cancel_capture();
    cuda::throw_cuda(e, "cudaStreamBeginCapture", __FILE__, __LINE__);
  }
  s_.capturing_ = true;
}

void CudaBackend::end_capture() {
  DLT_CHECK(s_.capturing_, "end_capture: cuda:" << device_ << " is not capturing");
  enter();
  s_.capturing_ = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t e = cudaStreamEndCapture(ctx_.stream, &graph);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (graph) cudaGraphDestroy(graph);
    alloc_.cancel_capture();
    cuda::throw_cuda(e, "cudaStreamEndCapture (something in the step cannot be captured)", __FILE__, __LINE__);
  }
  try {
    alloc_.end_capture();  // throws when the step allocated or freed while capturing
    DLT_CUDA(cudaGraphInstantiate(&s_.graph_, graph, 0));
  } catch (...) {
    // A failed instantiation stays this thread's last error, which the next kernel launch
    // check would report; the caller goes on uncaptured, so clear it.
    (void)cudaGetLastError();
    cudaGraphDestroy(graph);
    s_.graph_ = nullptr;
    alloc_.cancel_capture();
    throw;
  }
  DLT_CUDA(cudaGraphDestroy(graph));  // the executable graph keeps what it needs
}

void CudaBackend::abort_capture() noexcept {
  if (!s_.capturing_) return;
  s_.capturing_ = false;
  cudaSetDevice(device_);
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(ctx_.stream, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
  (void)cudaGetLastError();  // capture errors are not sticky; clear them
  alloc_.cancel_capture();
}

bool CudaBackend::replay() {
  if (!s_.graph_) return false;
  if (!alloc_.graph_valid()) {  // memory it writes has been freed (ops made again, a resize)
    drop_capture();
    return false;
  }
  enter();
  // Uploads begun since are not joined: the next batch's upload overlaps the graph (what the
  // graph reads from uploads, the optimizer's scalars, was joined by their owner).
  DLT_CUDA(cudaGraphLaunch(s_.graph_, ctx_.stream));
  s_.loss_pending_ = s_.graph_loss_;  // the graph copies its loss and records s_.loss_mark_ after it
  return true;
}

void CudaBackend::drop_capture() {
  if (!s_.graph_) return;
  enter();
  DLT_CUDA(cudaGraphExecDestroy(s_.graph_));
  s_.graph_ = nullptr;
  alloc_.drop_graph();
}

}  // namespace dlt
