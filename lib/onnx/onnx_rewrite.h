// Internal to lib/onnx: a pass over an ONNX graph's nodes before import that turns the
// decompositions exporters write for activations and layer normalization into the single
// nodes the layer types read:
//   Mul(x, Sigmoid(x))                          -> Swish(x)        (SiLU; either operand order)
//   Mul(x, HardSigmoid(x; alpha 1/6, beta 1/2)) -> HardSwish(x)    (opset < 14)
//   x * (1 + Erf(x / sqrt 2)) * 0.5             -> Gelu(x)         (Div by sqrt 2 or Mul by 1/sqrt 2)
//   x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) * 0.5 -> Gelu(x, approximate "tanh")
//   d = x - ReduceMean(x), d / Sqrt(ReduceMean(d^2) + eps) * scale [+ offset]
//                                               -> LayerNormalization (PyTorch below opset 17)
//   [Transpose] Reshape InstanceNormalization Reshape [Transpose] Mul Add
//                                               -> LayerNormalization (dltrain's own export)
// Products and sums may come in any operand order and association; constants may be
// initializers, Constant nodes or Identity aliases of them. A pattern is replaced only when
// every value inside it has its one consumer within the pattern (x - mean of LayerNorm: its
// two) and is no graph output; the new nodes take the place (and the name and output) of the
// pattern's last node, so the order stays topological.
// Anything else is left as it is, for the importer to read or refuse.
#pragma once
#include <onnx/onnx_pb.h>

namespace dlt {

// Rewrites g's nodes in place; returns the number of patterns replaced.
int rewrite_for_import(onnx::GraphProto& g);

}  // namespace dlt
