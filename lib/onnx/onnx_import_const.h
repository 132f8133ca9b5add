// Import's folding of constant tensors of any rank, beyond shape arithmetic (onnx_import_fold.h):
// the exporters compute attention masks and position biases from constants inside the graph
// (Swin's shifted-window mask: ConstantOfShape, Slice, ScatterND, Sub, Equal, Not, Where; its
// relative position bias: a Gather (GatherND) of the table by an index, Reshape, Transpose, Unsqueeze;
// Swin V2's MLP on a coordinate table: MatMul, Add, Relu, Sigmoid, Mul; XCiT's Fourier position
// encoding: Range, Tile, Sin, Cos, a 1x1 Conv; EdgeNeXt's: CumSum). A node whose inputs are
// all constants becomes a constant. Values are held as doubles: float32 exactly, int64 up to
// 2^53 (an integer beyond that is refused), bool as 0 / 1. Plain vectors: lib/onnx turns the
// nodes into these calls and the results into initializers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "onnx/onnx_import_fold.h"

namespace dlt::onnxu {

// The most values one folded tensor may hold (16 M: 128 MiB as doubles).
inline constexpr int64_t kMaxFoldTensorValues = int64_t{1} << 24;

struct TensorConst {
  enum Type { kFloat, kInt, kBool } type = kFloat;
  std::vector<int64_t> dims;  // empty: a scalar
  std::vector<double> v;      // row-major, product(dims) values
  int64_t size() const;
};

// The operators tensor_fold() takes.
bool is_tensor_fold_op(const std::string& op);

struct TensorFoldAttrs {
  int64_t axis = 0;           // Gather, Concat
  std::vector<int64_t> perm;  // Transpose (empty: reversed)
  std::vector<int64_t> axes;  // Squeeze / Unsqueeze before axes became an input
  bool has_axes = false;
  std::vector<int64_t> starts, ends;  // Slice before opset 10
  int64_t to = 1;                     // Cast: the ONNX data type
  TensorConst value;                  // ConstantOfShape (default a float 0)
  bool has_value = false;
  std::string reduction = "none";  // ScatterND
  int64_t allowzero = 0;           // Reshape
  int64_t batch_dims = 0;          // GatherND
  std::string equation;            // Einsum
  double alpha = 1, beta = 1;      // Gemm
  int64_t trans_a = 0, trans_b = 0;
  std::vector<int64_t> strides, pads, dilations;  // Conv
  int64_t group = 1;
  std::string auto_pad = "NOTSET";
  int64_t exclusive = 0, reverse = 0;  // CumSum
  int64_t flatten_axis = 1;            // Flatten
  int64_t softmax_axis = -1;           // Softmax (its default by opset)
};

// Split of a constant along axis into outputs parts of the given sizes (empty: equal parts, the
// last one smaller, as opset 18's num_outputs). Throws FoldError when the sizes do not add up.
std::vector<TensorConst> split_fold(const TensorConst& data, int64_t axis, std::vector<int64_t> sizes, int64_t outputs);

// One node of those on constant inputs (nullptr: an absent optional input). Throws FoldError
// saying why it cannot (shapes that do not broadcast, an index out of range, a result over
// kMaxFoldTensorValues, ...).
TensorConst tensor_fold(const std::string& op, const std::vector<const TensorConst*>& in, const TensorFoldAttrs& a,
                        int opset);

}  // namespace dlt::onnxu
