// The process-wide cache of measured cuDNN convolution algorithms, keyed by the problem cuDNN
// sees (device, TF32 and deterministic switches, data type, padded input, filters, symmetric
// padding, stride, dilation, groups), so a second op of the same shape (another layer, the smaller
// last batch seen again) does not measure again. Thread-safe; directions are measured and stored independently.
#pragma once
#include <array>
#include <map>
#include <memory>
#include <mutex>

#include <cudnn.h>

#include "backend/cuda/cudnn_conv_engines.h"

namespace dlt::cuda {

// device, math switches (bit 0 TF32, bit 1 deterministic, bit 2 legacy algorithms only), data type (a cudnnDataType_t:
// float or bfloat16), n, h, w, c, k, kh, kw, pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w, groups
using ConvAlgoKey = std::array<int64_t, 17>;

struct ConvAlgos {
  bool has_fwd = false, has_bwd_data = false, has_bwd_filter = false;
  cudnnConvolutionFwdAlgo_t fwd = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t bwd_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  cudnnConvolutionBwdFilterAlgo_t bwd_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
  size_t fwd_ws = 0, bwd_data_ws = 0, bwd_filter_ws = 0;  // workspace bytes each needs
  // A graph-API plan where one measured faster than the legacy algorithm (which is then unused).
  std::shared_ptr<const ConvPlan> fwd_plan, bwd_data_plan, bwd_filter_plan;
};

class ConvAlgoCache {
 public:
  // What is known for key (directions not yet measured have has_* = false).
  ConvAlgos get(const ConvAlgoKey& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    return it == map_.end() ? ConvAlgos{} : it->second;
  }
  // Records the measured directions of a (others keep what is stored).
  void put(const ConvAlgoKey& key, const ConvAlgos& a) {
    std::lock_guard<std::mutex> lock(mu_);
    ConvAlgos& s = map_[key];
    if (a.has_fwd) s.has_fwd = true, s.fwd = a.fwd, s.fwd_ws = a.fwd_ws, s.fwd_plan = a.fwd_plan;
    if (a.has_bwd_data)
      s.has_bwd_data = true, s.bwd_data = a.bwd_data, s.bwd_data_ws = a.bwd_data_ws, s.bwd_data_plan = a.bwd_data_plan;
    if (a.has_bwd_filter)
      s.has_bwd_filter = true, s.bwd_filter = a.bwd_filter, s.bwd_filter_ws = a.bwd_filter_ws,
      s.bwd_filter_plan = a.bwd_filter_plan;
  }
  // Fills in the directions of a that another op has measured since.
  void refresh(const ConvAlgoKey& key, ConvAlgos& a) {
    ConvAlgos s = get(key);
    if (!a.has_fwd && s.has_fwd) a.has_fwd = true, a.fwd = s.fwd, a.fwd_ws = s.fwd_ws, a.fwd_plan = s.fwd_plan;
    if (!a.has_bwd_data && s.has_bwd_data)
      a.has_bwd_data = true, a.bwd_data = s.bwd_data, a.bwd_data_ws = s.bwd_data_ws, a.bwd_data_plan = s.bwd_data_plan;
    if (!a.has_bwd_filter && s.has_bwd_filter)
      a.has_bwd_filter = true, a.bwd_filter = s.bwd_filter, a.bwd_filter_ws = s.bwd_filter_ws,
      a.bwd_filter_plan = s.bwd_filter_plan;
  }

 private:
  std::mutex mu_;
  std::map<ConvAlgoKey, ConvAlgos> map_;
};

inline ConvAlgoCache& conv_algo_cache() {
  static ConvAlgoCache cache;
  return cache;
}

}  // namespace dlt::cuda
