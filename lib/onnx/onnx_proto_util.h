// Internal to lib/onnx: protobuf tensors and attributes <-> plain vectors. The weight-layout
// permutations are in layers/onnx_graph.h (the layers use them).
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dlt::onnxu {

// Limits on what a tensor may claim, checked before anything is allocated from its dims.
inline constexpr int kMaxTensorRank = 8;
inline constexpr int64_t kMaxTensorValues = int64_t{1} << 32;  // 16 GiB of float32, more than protobuf's 2 GiB

// Throws ModelError naming `what` and the tensor unless it is safe to read: data inside the
// protobuf (external data is read into raw_data first, onnx_import_external.h; a tensor still marked
// external is refused, its location never opened), dims of 0 or more, each and their product
// at most kMaxTensorValues, and a data length (raw_data or the typed field) that matches the
// dims. Every other helper here may then trust the dims.
void check_tensor(const onnx::TensorProto& t, const std::string& what);
// The dims checks alone: the number of values the dims claim.
int64_t checked_values(const onnx::TensorProto& t, const std::string& what);
// Bytes per element of a data type with a fixed size; 0 for the others (STRING, UNDEFINED).
size_t element_bytes(int type);
// "4x12", "scalar".
std::string dims_str(const onnx::TensorProto& t);
void set_ints(onnx::TensorProto& t, const std::string& name, const std::vector<int64_t>& dims,
              const std::vector<int64_t>& values);
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
void add_attr(onnx::NodeProto& n, const std::string& name, const std::string& v);

}  // namespace dlt::onnxu
