// A build without libonnx-dev: import and export say so in one line.
#include "onnx/onnx.h"
#include "util/error.h"

namespace dlt {

namespace {
[[noreturn]] void no_onnx(const std::string& path) {
  throw UsageError(path +
                   ": this dltrain was built without ONNX support (install libonnx-dev and "
                   "libprotobuf-dev, then re-run cmake)");
}
}  // namespace

bool onnx_available() { return false; }
ModelData import_onnx(const std::string& path, const OnnxImportOptions&) { no_onnx(path); }
ModelData import_onnx_bytes(const std::string&, const std::string& name, const OnnxImportOptions&) { no_onnx(name); }
void export_onnx(const ModelData&, const std::string& path, const OnnxExportOptions&) { no_onnx(path); }

}  // namespace dlt
