// ONNX import and export of trained models (docs/transfer.md). Always declared; a build
// without libonnx-dev compiles onnx_stub.cpp, whose functions throw one clear UsageError.
// Layouts: ONNX is NCHW with OIHW conv weights and CHW-order flattening; dltrain is NHWC
// with OHWI conv weights and HWC-order flattening. Both directions permute the weights.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "net/model_file.h"

namespace dlt {

// The metadata_props key under which export_onnx writes the class names, one per line.
inline constexpr const char* kOnnxClassNamesKey = "class_names";

struct OnnxImportOptions {
  std::vector<std::string> classes;             // empty: the file's class_names metadata, else class_1 .. class_K
  std::vector<int64_t> input_size;              // (H, W, C) when the graph input has symbolic sizes
  std::string classes_from = "the class list";  // where `classes` came from, for errors
};

// The most nodes import reads (the largest model-zoo classifiers have a few thousand); a
// larger graph is refused before any node is looked at.
inline constexpr int kMaxOnnxNodes = 100000;

// True when this build reads and writes ONNX.
bool onnx_available();
// ONNX file -> model (network spec with imageInput first and softmax + classification last,
// weights in dltrain's layout). Throws ModelError naming the file, the node and the operator.
ModelData import_onnx(const std::string& path, const OnnxImportOptions& options);
// The same from the file's bytes already in memory; `name` stands for the path in errors.
ModelData import_onnx_bytes(const std::string& bytes, const std::string& name, const OnnxImportOptions& options);
struct OnnxExportOptions {
  // true: every initializer of 1 KiB or more is written to PATH.data beside PATH (ONNX's
  // external data, as onnx.save(..., save_as_external_data=True) writes it). Without it a
  // model is written in one file unless it passes protobuf's 2 GB limit, which needs the same.
  bool external_data = false;
};

// Model -> ONNX file (opset 13, NCHW input "input" (N, C, H, W), output "prob" (N, K)),
// written atomically (with external data: PATH.data first, then PATH). Throws ModelError
// naming the layer that has no ONNX form.
void export_onnx(const ModelData& model, const std::string& path, const OnnxExportOptions& options = {});

}  // namespace dlt
