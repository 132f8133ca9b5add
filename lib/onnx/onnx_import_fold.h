// Import's constant folding of shape arithmetic: Shape of a computed value, then Gather,
// Unsqueeze, Squeeze, Concat, Slice, Cast, Reshape, ConstantOfShape, Equal, Where and integer
// Add / Sub / Mul / Div / Mod on the results, as TorchScript writes `x.view(x.size(0), -1)` and
// the unflatten of an attention's joint projection. The values are scalars or 1-D lists of int64;
// the batch size N is symbolic (kBatchDim), and arithmetic on it is refused. Plain vectors:
// lib/onnx/onnx_import.cpp turns the nodes into these calls and the results into constants.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace dlt::onnxu {

// The batch size N in a folded shape (dltrain's batch is not fixed by the model).
inline constexpr int64_t kBatchDim = INT64_MIN;
// The longest list a folded value may be (shapes have a handful of entries).
inline constexpr int64_t kMaxFoldValues = 64;

// A scalar (rank 0) or 1-D integer constant.
struct IntConst {
  bool scalar = false;
  std::vector<int64_t> v;
};

// Why a node cannot be folded; the importer adds the file and node.
struct FoldError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The operators fold() takes.
bool is_fold_op(const std::string& op);
// One node of those: `in` its inputs in order (nullptr: an absent optional input), attrs read
// through `attr_ints` (name -> values, empty when absent) and `attr_int`. Throws FoldError.
struct FoldAttrs {
  int64_t axis = 0;           // Gather, Concat
  int64_t to = 7;             // Cast: the data type (7 = INT64)
  std::vector<int64_t> axes;  // Squeeze / Unsqueeze / Slice before axes became an input
  bool has_axes = false;
  std::vector<int64_t> starts, ends;  // Slice before opset 10
  int64_t value = 0;                  // ConstantOfShape: the (integer) value
};
IntConst fold(const std::string& op, const std::vector<const IntConst*>& in, const FoldAttrs& attrs, int opset);

// The shape of a value as Shape reports it, [start, end) of `dims` (opset 15 attributes).
IntConst shape_slice(const std::vector<int64_t>& dims, int64_t start, int64_t end);

// "[N, -1]": a folded list for messages (the first 16 values of a longer one, and its length).
std::string ints_str(const std::vector<int64_t>& v);

}  // namespace dlt::onnxu
