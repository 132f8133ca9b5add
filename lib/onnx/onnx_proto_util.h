// Internal to lib/onnx: protobuf tensors and attributes <-> plain vectors, and the two
// weight-layout permutations (OIHW <-> OHWI conv weights, CHW <-> HWC flattened FC columns).
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dlt::onnxu {

std::vector<int64_t> dims_of(const onnx::TensorProto& t);
// FLOAT / DOUBLE tensors as floats; INT64 / INT32 as int64. Throws ModelError naming `what`.
std::vector<float> floats_of(const onnx::TensorProto& t, const std::string& what);
std::vector<int64_t> ints_of(const onnx::TensorProto& t, const std::string& what);
void set_floats(onnx::TensorProto& t, const std::string& name, const std::vector<int64_t>& dims,
                const std::vector<float>& values);

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name);
int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t def);
float attr_float(const onnx::NodeProto& n, const std::string& name, float def);
std::string attr_string(const onnx::NodeProto& n, const std::string& name, const std::string& def);
std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name, std::vector<int64_t> def);
void add_attr(onnx::NodeProto& n, const std::string& name, int64_t v);
void add_attr(onnx::NodeProto& n, const std::string& name, float v);
void add_attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v);

// (K, C, kh, kw) -> (K, kh, kw, C) and back.
std::vector<float> oihw_to_ohwi(const std::vector<float>& w, int64_t k, int64_t c, int64_t kh, int64_t kw);
std::vector<float> ohwi_to_oihw(const std::vector<float>& w, int64_t k, int64_t c, int64_t kh, int64_t kw);
// FC weights (K, H*W*C): columns in CHW order -> HWC order, and back.
std::vector<float> chw_cols_to_hwc(const std::vector<float>& w, int64_t k, int64_t h, int64_t wd, int64_t c);
std::vector<float> hwc_cols_to_chw(const std::vector<float>& w, int64_t k, int64_t h, int64_t wd, int64_t c);
// (H, W, C) image -> (C, H, W).
std::vector<float> hwc_to_chw(const std::vector<float>& x, int64_t h, int64_t w, int64_t c);
std::vector<float> chw_to_hwc(const std::vector<float>& x, int64_t h, int64_t w, int64_t c);

}  // namespace dlt::onnxu
