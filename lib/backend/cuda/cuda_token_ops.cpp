// The CUDA token ops (backend/token_ops.h): its kernels in cuda_token_kernels.cu, on
// the compute stream.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_common.h"
#include "backend/token_ops.h"

namespace dlt::cuda {

// cuda_token_kernels.cu.
void batch_broadcast_add(const float* x, const float* b, float* y, int64_t rows, int64_t length, cudaStream_t stream);
void batch_sum(const float* dy, float* db, int64_t rows, int64_t length, cudaStream_t stream);
void spatial_transpose(const float* from, float* to, int64_t n, int64_t h, int64_t w, int64_t c, bool back,
                       cudaStream_t stream);
void row_gather(const float* x, float* y, const int32_t* index, int64_t n, int64_t rows_in, int64_t rows_out,
                int64_t cols, cudaStream_t stream);
void row_gather_backward(const float* dy, float* dx, const int32_t* starts, const int32_t* sources, int64_t n,
                         int64_t rows_in, int64_t rows_out, int64_t cols, cudaStream_t stream);

void head_normalize(const float* x, const float* t, float* y, int64_t rows, int64_t heads, int64_t per_head,
                    int64_t dim, float max_log, bool linear, cudaStream_t stream);
void head_normalize_backward(const float* x, const float* t, const float* dy, float* dx, float* dt, int64_t rows,
                             int64_t heads, int64_t per_head, int64_t dim, float max_log, bool linear,
                             cudaStream_t stream);
void rotary(const float* x, const float* cos_t, const float* sin_t, float* y, int64_t n, int64_t seq, int64_t heads,
            int64_t dim, int64_t prefix, bool half, bool per_head, bool back, cudaStream_t stream);

namespace {

class CudaRotaryOp final : public RotaryOp {
 public:
  CudaRotaryOp(const RotaryDesc& d, CudaContext& ctx) : RotaryOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {}

 private:
  void do_run(const Tensor& x, const Tensor& cos, const Tensor& sin, Tensor& y, bool back) override {
    rotary(x.data(), cos.data(), sin.data(), y.data(), d_.n, d_.seq, d_.heads, d_.dim, d_.prefix, d_.half,
           d_.table_heads > 1, back, ctx_.stream);
  }

  RotaryDesc d_;
  CudaContext& ctx_;
};

class CudaHeadNormalizeOp final : public HeadNormalizeOp {
 public:
  CudaHeadNormalizeOp(const HeadNormalizeDesc& d, CudaContext& ctx)
      : HeadNormalizeOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {}

 private:
  void do_forward(const Tensor& x, const Tensor* t, Tensor& y) override {
    head_normalize(x.data(), t ? t->data() : nullptr, y.data(), d_.rows, d_.heads, d_.per_head, d_.dim,
                   static_cast<float>(d_.max_log_scale), d_.linear, ctx_.stream);
  }
  void do_backward(const Tensor& x, const Tensor* t, const Tensor& dy, Tensor& dx, Tensor* dt) override {
    head_normalize_backward(x.data(), t ? t->data() : nullptr, dy.data(), dx.data(), dt ? dt->data() : nullptr, d_.rows,
                            d_.heads, d_.per_head, d_.dim, static_cast<float>(d_.max_log_scale), d_.linear,
                            ctx_.stream);
  }

  HeadNormalizeDesc d_;
  CudaContext& ctx_;
};

class CudaBatchBroadcastOp final : public BatchBroadcastOp {
 public:
  CudaBatchBroadcastOp(const BatchBroadcastDesc& d, CudaContext& ctx)
      : BatchBroadcastOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {}

 private:
  void do_add(const Tensor* x, const Tensor& b, Tensor& y) override {
    batch_broadcast_add(x ? x->data() : nullptr, b.data(), y.data(), d_.rows, d_.length, ctx_.stream);
  }
  void do_sum(const Tensor& dy, Tensor& db) override {
    batch_sum(dy.data(), db.data(), d_.rows, d_.length, ctx_.stream);
  }

  BatchBroadcastDesc d_;
  CudaContext& ctx_;
};

class CudaSpatialTransposeOp final : public SpatialTransposeOp {
 public:
  CudaSpatialTransposeOp(const SpatialTransposeDesc& d, CudaContext& ctx)
      : SpatialTransposeOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {}

 private:
  void do_run(const Tensor& from, Tensor& to, bool back) override {
    spatial_transpose(from.data(), to.data(), d_.n, d_.h, d_.w, d_.c, back, ctx_.stream);
  }

  SpatialTransposeDesc d_;
  CudaContext& ctx_;
};

// The index and its inverse (RowGatherOp::inverse) as int32 on the device, each held in a float
// tensor of as many elements.
class CudaRowGatherOp final : public RowGatherOp {
 public:
  CudaRowGatherOp(const RowGatherDesc& d, CudaContext& ctx)
      : RowGatherOp(d, Device::cuda(ctx.device)), d_(d), ctx_(ctx) {
    DLT_CHECK(d.rows_in < (int64_t{1} << 31) && d.rows_out < (int64_t{1} << 31),
              "row gather: " << d.rows_in << " -> " << d.rows_out << " rows is over the CUDA kernel's 2^31");
    std::vector<int64_t> starts, sources;
    inverse(starts, sources);
    index_ = upload(d.index);
    starts_ = upload(starts);
    sources_ = upload(sources);
  }

 private:
  void do_forward(const Tensor& x, Tensor& y) override {
    row_gather(x.data(), y.data(), ints(index_), d_.n, d_.rows_in, d_.rows_out, d_.cols, ctx_.stream);
  }
  void do_backward(const Tensor& dy, Tensor& dx) override {
    row_gather_backward(dy.data(), dx.data(), ints(starts_), ints(sources_), d_.n, d_.rows_in, d_.rows_out, d_.cols,
                        ctx_.stream);
  }
  Tensor upload(const std::vector<int64_t>& v) const {
    const int64_t count = std::max<int64_t>(1, static_cast<int64_t>(v.size()));
    Tensor host(Shape{count});
    int32_t* p = reinterpret_cast<int32_t*>(host.data());
    for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<int32_t>(v[i]);
    return host.to(Device::cuda(ctx_.device));
  }
  static const int32_t* ints(const Tensor& t) { return reinterpret_cast<const int32_t*>(t.data()); }

  RowGatherDesc d_;
  CudaContext& ctx_;
  Tensor index_, starts_, sources_;
};

std::unique_ptr<BatchBroadcastOp> make_broadcast(Backend& b, const BatchBroadcastDesc& d) {
  cuda_backend_of(b).enter();
  return std::make_unique<CudaBatchBroadcastOp>(d, cuda_context(b));
}
std::unique_ptr<SpatialTransposeOp> make_transpose(Backend& b, const SpatialTransposeDesc& d) {
  cuda_backend_of(b).enter();
  return std::make_unique<CudaSpatialTransposeOp>(d, cuda_context(b));
}
std::unique_ptr<RowGatherOp> make_gather(Backend& b, const RowGatherDesc& d) {
  cuda_backend_of(b).enter();
  return std::make_unique<CudaRowGatherOp>(d, cuda_context(b));
}
std::unique_ptr<HeadNormalizeOp> make_head_normalize(Backend& b, const HeadNormalizeDesc& d) {
  cuda_backend_of(b).enter();
  return std::make_unique<CudaHeadNormalizeOp>(d, cuda_context(b));
}
std::unique_ptr<RotaryOp> make_rotary(Backend& b, const RotaryDesc& d) {
  cuda_backend_of(b).enter();
  return std::make_unique<CudaRotaryOp>(d, cuda_context(b));
}

}  // namespace

DLT_REGISTER_OP(RowGatherDesc, DeviceType::kCuda, "own", 0, make_gather, nullptr);
DLT_REGISTER_OP(BatchBroadcastDesc, DeviceType::kCuda, "own", 0, make_broadcast, nullptr);
DLT_REGISTER_OP(SpatialTransposeDesc, DeviceType::kCuda, "own", 0, make_transpose, nullptr);
DLT_REGISTER_OP(HeadNormalizeDesc, DeviceType::kCuda, "own", 0, make_head_normalize, nullptr);
DLT_REGISTER_OP(RotaryDesc, DeviceType::kCuda, "own", 0, make_rotary, nullptr);

}  // namespace dlt::cuda
