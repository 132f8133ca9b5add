// Internal to lib/net's network_*.cpp: naming the layer or buffer in an out-of-memory error.
#pragma once
#include <string>

#include "layers/layer.h"
#include "util/error.h"

namespace dlt::net_internal {

// Runs f; an out-of-memory DeviceError then starts with where() (a layer, a buffer's layers);
// the allocator's message already suggests a smaller MiniBatchSize.
template <class Where, class F>
inline void out_of_memory_in(Where where, F f) {
  try {
    f();
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    if (what.rfind("out of GPU memory", 0) != 0) throw;
    throw DeviceError(where() + ": " + what);
  }
}

template <class F>
inline void for_layer(const Layer& l, F f) {
  out_of_memory_in([&] { return "layer '" + l.name() + "' (" + l.type() + ")"; }, f);
}

}  // namespace dlt::net_internal
