// Fuzz target: ONNX import (lib/onnx/onnx_import.cpp) from the file's bytes. A dlt::Error
// (ModelError naming the node, ConfigError, ShapeError) is a clean refusal.
#include <cstddef>
#include <cstdint>
#include <string>

#include "onnx/onnx.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    dlt::import_onnx_bytes(bytes, "fuzz.onnx", {});
  } catch (const dlt::Error&) {
  }
  return 0;
}
