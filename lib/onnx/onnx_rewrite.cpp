// The import's rewrite of activation decompositions into single nodes (onnx_rewrite.h).
// Nodes are matched from the last one backwards, so a pattern is claimed by its outermost
// node; every value inside a pattern has exactly one use (graph outputs count as uses), so
// removing the pattern's inner nodes leaves no reference behind.
#include "onnx/onnx_rewrite.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "onnx/onnx_proto_util.h"
#include "util/error.h"

namespace dlt {

using namespace onnxu;

namespace {

constexpr double kSqrt2 = 1.41421356237309505;
constexpr double kGeluTanhBeta = 0.79788456080286536;  // sqrt(2 / pi)
constexpr double kGeluTanhKappa = 0.044715;
constexpr size_t kMaxFactors = 8;  // a product of more leaves is none of the patterns

bool near(double v, double want) { return std::fabs(v - want) <= 1e-5 * std::fabs(want); }

class Rewriter {
 public:
  explicit Rewriter(onnx::GraphProto& g) : g_(g), removed_(static_cast<size_t>(g.node_size()), false) {
    for (const auto& t : g.initializer()) consts_[t.name()] = &t;
    for (int i = 0; i < g.node_size(); ++i) {
      const onnx::NodeProto& n = g.node(i);
      if (n.op_type() == "Constant" && standard(n) && n.output_size() == 1)
        if (const auto* a = find_attr(n, "value"); a && a->has_t()) consts_[n.output(0)] = &a->t();
      if (n.op_type() == "Identity" && standard(n) && n.input_size() == 1 && n.output_size() == 1)
        if (auto c = consts_.find(n.input(0)); c != consts_.end()) consts_[n.output(0)] = c->second;  // an alias
      for (const auto& o : n.output())
        if (!o.empty()) producer_[o] = i;
      for (const auto& in : n.input())
        if (!in.empty()) {
          ++uses_[in];
          consumer_[in] = i;
        }
    }
    for (const auto& o : g.output()) ++uses_[o.name()];
    if (g.input_size() > 0 && g.input(0).type().tensor_type().shape().dim_size() > 0)
      batch_ = g.input(0).type().tensor_type().shape().dim(0).dim_value();
  }

  int run() {
    int replaced = 0;
    for (int i = g_.node_size() - 1; i >= 0; --i) {
      const onnx::NodeProto& n = g_.node(i);
      if (removed_[static_cast<size_t>(i)] || n.op_type() != "Mul" || !standard(n) || n.input_size() != 2 ||
          n.output_size() != 1)
        continue;
      if (gelu(i) || gated(i, "Sigmoid", "Swish") || gated(i, "HardSigmoid", "HardSwish")) ++replaced;
    }
    for (int i = g_.node_size() - 1; i >= 0; --i) {
      const onnx::NodeProto& n = g_.node(i);
      if (removed_[static_cast<size_t>(i)] || !standard(n) || n.output_size() != 1) continue;
      if ((n.op_type() == "Div" && layer_norm_decomposed(i)) ||
          (n.op_type() == "InstanceNormalization" && layer_norm_by_instances(i)))
        ++replaced;
    }
    if (replaced) apply();
    return replaced;
  }

 private:
  static bool standard(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

  // The value's one-element float constant, if it is one.
  std::optional<double> scalar(const std::string& v) const {
    auto it = consts_.find(v);
    if (it == consts_.end()) return std::nullopt;
    for (int64_t d : it->second->dims())  // a large tensor is never converted, however often it is asked
      if (d != 1) return std::nullopt;
    try {
      const std::vector<float> f = floats_of(*it->second, "constant");
      if (f.size() == 1) return f[0];
    } catch (const ModelError&) {  // not a readable float: no pattern; the importer reports it
    }
    return std::nullopt;
  }
  bool is_const(const std::string& v, double want) const {
    const auto c = scalar(v);
    return c && near(*c, want);
  }

  // The node (index) that makes v, when it is an `op` node not yet claimed, v's only use is
  // inside the pattern being matched, and it has the expected number of inputs; else -1.
  int inner(const std::string& v, const char* op, int inputs) const {  // inputs -1: any number
    auto it = producer_.find(v);
    if (it == producer_.end() || removed_[static_cast<size_t>(it->second)]) return -1;
    auto u = uses_.find(v);
    if (u == uses_.end() || u->second != 1) return -1;
    const onnx::NodeProto& n = g_.node(it->second);
    if (n.op_type() != op || !standard(n) || (inputs >= 0 && n.input_size() != inputs) || n.output_size() != 1)
      return -1;
    for (const auto& in : n.input())
      if (in.empty()) return -1;
    return it->second;
  }

  // The factors of a product of Mul nodes, starting at node `root` (any uses) and going into
  // inner Mul nodes; the Mul nodes are appended to `nodes`. False when it has too many factors.
  bool factors(int root, std::vector<std::string>& leaves, std::vector<int>& nodes) const {
    std::vector<std::string> todo{g_.node(root).input(1), g_.node(root).input(0)};
    const size_t first = nodes.size();
    nodes.push_back(root);
    while (!todo.empty()) {
      const std::string v = todo.back();
      todo.pop_back();
      if (const int m = inner(v, "Mul", 2); m >= 0 && nodes.size() - first < kMaxFactors) {
        nodes.push_back(m);
        todo.push_back(g_.node(m).input(1));
        todo.push_back(g_.node(m).input(0));
      } else {
        leaves.push_back(v);
      }
      if (leaves.size() > kMaxFactors) return false;
    }
    return true;
  }
  // factors() of the value v made by an inner Mul node; false when v is not one.
  bool factors_of(const std::string& v, std::vector<std::string>& leaves, std::vector<int>& nodes) const {
    const int m = inner(v, "Mul", 2);
    return m >= 0 && factors(m, leaves, nodes);
  }

  // Add(1, t) in either order: t, its node appended to nodes; "" when v is not that.
  std::string one_plus(const std::string& v, std::vector<int>& nodes) const {
    const int a = inner(v, "Add", 2);
    if (a < 0) return "";
    const onnx::NodeProto& n = g_.node(a);
    for (int k = 0; k < 2; ++k)
      if (is_const(n.input(k), 1.0)) {
        nodes.push_back(a);
        return n.input(1 - k);
      }
    return "";
  }

  // u = x / sqrt 2 or x * (1 / sqrt 2)?
  bool over_sqrt2(const std::string& u, const std::string& x, std::vector<int>& nodes) const {
    if (const int d = inner(u, "Div", 2); d >= 0) {
      if (g_.node(d).input(0) != x || !is_const(g_.node(d).input(1), kSqrt2)) return false;
      nodes.push_back(d);
      return true;
    }
    std::vector<std::string> f;
    return factors_of(u, f, nodes) && f.size() == 2 &&
           ((f[0] == x && is_const(f[1], 1 / kSqrt2)) || (f[1] == x && is_const(f[0], 1 / kSqrt2)));
  }

  // i = sqrt(2/pi) * (x + 0.044715 * x^3), x^3 as x * x * x or Pow(x, 3)?
  bool tanh_inner(const std::string& i, const std::string& x, std::vector<int>& nodes) const {
    std::vector<std::string> f;
    if (!factors_of(i, f, nodes) || f.size() != 2) return false;
    const std::string sum = is_const(f[0], kGeluTanhBeta) ? f[1] : is_const(f[1], kGeluTanhBeta) ? f[0] : "";
    const int s = sum.empty() ? -1 : inner(sum, "Add", 2);
    if (s < 0) return false;
    nodes.push_back(s);
    const onnx::NodeProto& add = g_.node(s);
    const int k = add.input(0) == x ? 1 : add.input(1) == x ? 0 : -1;
    std::vector<std::string> c;
    if (k < 0 || !factors_of(add.input(k), c, nodes)) return false;
    int kappas = 0, xs = 0;
    for (const std::string& v : c) {
      if (is_const(v, kGeluTanhKappa)) {
        ++kappas;
      } else if (v == x) {
        ++xs;
      } else if (const int p = inner(v, "Pow", 2);
                 p >= 0 && g_.node(p).input(0) == x && is_const(g_.node(p).input(1), 3)) {
        nodes.push_back(p);
        xs += 3;
      } else {
        return false;
      }
    }
    return kappas == 1 && xs == 3;
  }

  // Mul node `root` as the end of x * (1 + Erf(x / sqrt 2)) * 0.5 or the Tanh form.
  bool gelu(int root) {
    std::vector<std::string> f;
    std::vector<int> product;
    if (!factors(root, f, product) || f.size() != 3) return false;
    for (int h = 0; h < 3; ++h) {
      if (!is_const(f[h], 0.5)) continue;
      for (int e = 0; e < 3; ++e) {
        if (e == h) continue;
        const std::string& x = f[3 - h - e];
        std::vector<int> nodes = product;
        const std::string t = one_plus(f[e], nodes);
        if (t.empty()) continue;
        if (const int erf = inner(t, "Erf", 1); erf >= 0) {
          nodes.push_back(erf);
          if (over_sqrt2(g_.node(erf).input(0), x, nodes)) return replace(root, nodes, "Gelu", x, "none");
        } else if (const int th = inner(t, "Tanh", 1); th >= 0) {
          nodes.push_back(th);
          if (tanh_inner(g_.node(th).input(0), x, nodes)) return replace(root, nodes, "Gelu", x, "tanh");
        }
      }
    }
    return false;
  }

  // Mul(x, gate(x)) -> op(x): Sigmoid -> Swish; HardSigmoid with PyTorch's alpha 1/6 and beta
  // 1/2 (ONNX's default alpha is 0.2) -> HardSwish.
  bool gated(int root, const char* gate, const char* op) {
    const onnx::NodeProto& n = g_.node(root);
    for (int k = 0; k < 2; ++k) {
      const int s = inner(n.input(k), gate, 1);
      const std::string& x = n.input(1 - k);
      if (s < 0 || g_.node(s).input(0) != x) continue;
      const onnx::NodeProto& sn = g_.node(s);
      if (std::string(gate) == "HardSigmoid" &&
          (!near(attr_float(sn, "alpha", 0.2f), 1.0 / 6) || !near(attr_float(sn, "beta", 0.5f), 0.5)))
        continue;
      return replace(root, {root, s}, op, x, "");
    }
    return false;
  }

  // Marks `nodes` removed and records the node that takes root's place.
  bool replace(int root, const std::vector<int>& nodes, const char* op, const std::string& x,
               const std::string& approximate) {
    for (int i : nodes) removed_[static_cast<size_t>(i)] = true;
    const onnx::NodeProto& r = g_.node(root);
    onnx::NodeProto n;
    n.set_op_type(op);
    n.set_name(r.name());
    n.add_input(x);
    n.add_output(r.output(0));
    if (!approximate.empty()) {
      auto* a = n.add_attribute();
      a->set_name("approximate");
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(approximate);
    }
    replacement_[root].push_back(std::move(n));
    return true;
  }

  // The only node that reads v (an inner value of a pattern: one use, no graph output), or -1.
  int sole_consumer(const std::string& v, const char* op) const {
    auto u = uses_.find(v);
    auto c = consumer_.find(v);
    if (u == uses_.end() || u->second != 1 || c == consumer_.end() || removed_[static_cast<size_t>(c->second)])
      return -1;
    const onnx::NodeProto& n = g_.node(c->second);
    return n.op_type() == op && standard(n) && n.output_size() == 1 ? c->second : -1;
  }
  // A float constant other than a scalar (a learnable: scale or offset) with `rank` dims.
  bool is_tensor_const(const std::string& v, int rank) const {
    auto it = consts_.find(v);
    return it != consts_.end() && it->second->dims_size() == rank &&
           (it->second->data_type() == onnx::TensorProto::FLOAT ||
            it->second->data_type() == onnx::TensorProto::DOUBLE);
  }
  // A small int64 constant's values (shapes, axes), if v is one.
  std::optional<std::vector<int64_t>> ints(const std::string& v) const {
    auto it = consts_.find(v);
    if (it == consts_.end() || it->second->dims_size() > 1) return std::nullopt;
    try {
      if (checked_values(*it->second, "constant") <= 64) return ints_of(*it->second, "constant");
    } catch (const ModelError&) {
    }
    return std::nullopt;
  }
  // A ReduceMean node's axes (attribute, or the constant second input from opset 18), keepdims 1.
  std::optional<std::vector<int64_t>> mean_axes(int m) const {
    const onnx::NodeProto& n = g_.node(m);
    if (attr_int(n, "keepdims", 1) != 1) return std::nullopt;
    if (n.input_size() == 2) return ints(n.input(1));
    if (n.input_size() != 1 || !find_attr(n, "axes")) return std::nullopt;
    return attr_ints(n, "axes", {});
  }

  // Div node `root` as the middle of PyTorch's LayerNorm before opset 17 (and timm's channels-
  // first LayerNorm2d): d = Sub(x, ReduceMean(x)), Div(d, Sqrt(Add(ReduceMean(Pow(d, 2)), eps))),
  // then Mul by a scale constant and optionally Add an offset constant. The axes are trailing:
  // negative ending at -1 or positive ending at 3 (LayerNormalization's axis is the first), or
  // [1] of an NCHW image with a (C, 1, 1) scale: the channels of each pixel, which becomes
  // Transpose (0, 2, 3, 1), LayerNormalization over axis -1, Transpose (0, 3, 1, 2).
  bool layer_norm_decomposed(int div) {
    const onnx::NodeProto& dn = g_.node(div);
    if (dn.input_size() != 2) return false;
    const std::string& d = dn.input(0);
    std::vector<int> nodes{div};
    const int sq = inner(dn.input(1), "Sqrt", 1);
    const int add = sq < 0 ? -1 : inner(g_.node(sq).input(0), "Add", 2);
    if (add < 0) return false;
    const onnx::NodeProto& an = g_.node(add);
    const int k = scalar(an.input(1)) ? 1 : scalar(an.input(0)) ? 0 : -1;
    const int var = k < 0 ? -1 : inner(an.input(1 - k), "ReduceMean", -1);
    const int pow = var < 0 ? -1 : inner(g_.node(var).input(0), "Pow", 2);
    if (pow < 0 || g_.node(pow).input(0) != d || !is_const(g_.node(pow).input(1), 2.0)) return false;
    // d: Sub(x, mean) with two uses, the Pow and the Div
    auto p = producer_.find(d);
    auto u = uses_.find(d);
    if (p == producer_.end() || removed_[static_cast<size_t>(p->second)] || u == uses_.end() || u->second != 2)
      return false;
    const int sub = p->second;
    const onnx::NodeProto& sn = g_.node(sub);
    if (sn.op_type() != "Sub" || !standard(sn) || sn.input_size() != 2) return false;
    const std::string& x = sn.input(0);
    const int mean = inner(sn.input(1), "ReduceMean", -1);
    if (mean < 0 || g_.node(mean).input(0) != x) return false;
    const auto axes = mean_axes(mean), var_axes = mean_axes(var);
    if (!axes || !var_axes || *axes != *var_axes || axes->empty()) return false;
    for (size_t i = 1; i < axes->size(); ++i)
      if ((*axes)[i] != (*axes)[i - 1] + 1) return false;
    const bool per_pixel = *axes == std::vector<int64_t>{1};
    if (!per_pixel && axes->back() != -1 && axes->back() != 3) return false;
    // the affine part: Mul by a constant scale (required: LayerNormalization needs one), Add an offset
    const int mul = sole_consumer(dn.output(0), "Mul");
    if (mul < 0) return false;
    const onnx::NodeProto& mn = g_.node(mul);
    const int si = mn.input(0) == dn.output(0) ? 1 : 0;
    const int rank = per_pixel ? 3 : static_cast<int>(axes->size());
    if (mn.input_size() != 2 || !is_tensor_const(mn.input(si), rank)) return false;
    std::string scale = mn.input(si), offset;
    int root = mul;
    if (const int off = sole_consumer(mn.output(0), "Add"); off >= 0) {
      const onnx::NodeProto& on = g_.node(off);
      const int oi = on.input(0) == mn.output(0) ? 1 : 0;
      if (on.input_size() == 2 && is_tensor_const(on.input(oi), rank)) {
        offset = on.input(oi);
        root = off;
        nodes.push_back(off);
      }
    }
    nodes.insert(nodes.end(), {mul, sq, add, var, pow, sub, mean});
    for (int i : nodes) removed_[static_cast<size_t>(i)] = true;
    layer_norm_nodes(root, x, scale, offset, *scalar(an.input(k)), per_pixel ? -1 : (*axes)[0], per_pixel);
    return true;
  }

  // InstanceNormalization node `norm` as the middle of dltrain's own export of
  // layerNormalization (opset 13, layer_norm_layer.cpp): [Transpose (0, 2, 3, 1)],
  // Reshape (0, R, -1), InstanceNormalization with R ones and zeros, Reshape back to the input's
  // shape, [Transpose (0, 3, 1, 2)], Mul by the scale, Add the offset. Without the transposes
  // R is 1 (over axis 1: C, H and W, or the C of an (N, C) value); with them R is H * W (the
  // channels of each pixel). PyTorch's GroupNorm of one group (timm's PoolFormer and MetaFormer
  // GroupNorm1) is the same with R 1 and the Reshape back to Shape(x) of an image.
  bool layer_norm_by_instances(int norm) {
    const onnx::NodeProto& nn = g_.node(norm);
    if (nn.input_size() != 3) return false;
    const int rows = inner(nn.input(0), "Reshape", 2);
    const auto rows_shape = rows < 0 ? std::nullopt : ints(g_.node(rows).input(1));
    if (!rows_shape || rows_shape->size() != 3 || (*rows_shape)[0] != 0 || (*rows_shape)[2] != -1) return false;
    const int64_t instances = (*rows_shape)[1];
    if (instances < 1 || !all_equal(nn.input(1), instances, 1.f) || !all_equal(nn.input(2), instances, 0.f))
      return false;
    const int back = sole_consumer(nn.output(0), "Reshape");
    if (back < 0) return false;
    auto back_shape = ints(g_.node(back).input(1));
    std::vector<int> nodes{norm, rows, back};
    std::string x = g_.node(rows).input(0), tail = g_.node(back).output(0);
    if (!back_shape) {  // GroupNorm(G, C): back to Shape(x), an image
      const int shape = inner(g_.node(back).input(1), "Shape", 1);
      if (shape >= 0 && g_.node(shape).input(0) == x && !find_attr(g_.node(shape), "start") &&
          !find_attr(g_.node(shape), "end")) {
        back_shape = std::vector<int64_t>{0, 0, 0, 0};  // its rank; the scale's (C, 1, 1) says image
        nodes.push_back(shape);
      }
    }
    // The batch kept (0), or one image (the dynamo exporter's of a graph exported with one), or
    // the graph input's fixed batch (the dynamo exporter's of a graph exported with a batch).
    if (!back_shape || back_shape->empty() ||
        ((*back_shape)[0] != 0 && (*back_shape)[0] != 1 && (*back_shape)[0] != batch_))
      return false;
    // Tokens (N, S, C): the rows are the tokens already (dltrain's export of a per-token norm; of
    // one token too, PiT's class token).
    const bool tokens = back_shape->size() == 3 && (*back_shape)[1] == instances;
    // PyTorch's GroupNorm of G > 1 groups: the rows are the groups of an image's channels (no
    // Transposes around; back to Shape(x) or to (N, C, H, W) with C a multiple of G).
    if (instances > 1 && !tokens && inner(x, "Transpose", 1) < 0)
      return group_norm(nn, nodes, x, tail, instances, *back_shape);
    const bool per_pixel = instances > 1 && !tokens;
    if (per_pixel) {  // the transposes around it; the input of the pattern is the channels-last value
      const int to = inner(x, "Transpose", 1), from = sole_consumer(tail, "Transpose");
      if (to < 0 || from < 0 || back_shape->size() != 4 || (*back_shape)[1] * (*back_shape)[2] != instances ||
          attr_ints(g_.node(to), "perm", {}) != std::vector<int64_t>{0, 2, 3, 1} ||
          attr_ints(g_.node(from), "perm", {}) != std::vector<int64_t>{0, 3, 1, 2})
        return false;
      x = g_.node(to).input(0);
      tail = g_.node(from).output(0);
      nodes.insert(nodes.end(), {to, from});
    } else if (!tokens && back_shape->size() != 4 && back_shape->size() != 2) {
      return false;
    }
    const int mul = sole_consumer(tail, "Mul");
    if (mul < 0) return false;
    const onnx::NodeProto& mn = g_.node(mul);
    const int si = mn.input(0) == tail ? 1 : 0;
    const int rank = back_shape->size() == 4 ? 3 : 1;
    const int off = sole_consumer(mn.output(0), "Add");
    if (mn.input_size() != 2 || !is_tensor_const(mn.input(si), rank) || off < 0) return false;
    const onnx::NodeProto& on = g_.node(off);
    const int oi = on.input(0) == mn.output(0) ? 1 : 0;
    if (on.input_size() != 2 || !is_tensor_const(on.input(oi), rank)) return false;
    nodes.insert(nodes.end(), {mul, off});
    for (int i : nodes) removed_[static_cast<size_t>(i)] = true;
    layer_norm_nodes(off, x, mn.input(si), on.input(oi), attr_float(nn, "epsilon", 1e-5f), tokens ? -1 : 1, per_pixel);
    return true;
  }

  // The rest of PyTorch's GroupNorm after layer_norm_by_instances matched its Reshape (0, G, -1),
  // InstanceNormalization and Reshape back to back_shape ((0, 0, 0, 0) for Shape(x)) (`nodes`; x
  // its input, tail the image again): Mul by a
  // (C, 1, 1) scale and Add of a (C, 1, 1) offset, C a multiple of G; becomes GroupNormalization
  // (num_groups G, the scale and bias per channel, as opset 21 reads them).
  bool group_norm(const onnx::NodeProto& nn, std::vector<int>& nodes, const std::string& x, const std::string& tail,
                  int64_t groups, const std::vector<int64_t>& back_shape) {
    if (back_shape.size() != 4) return false;
    const int mul = sole_consumer(tail, "Mul");
    if (mul < 0) return false;
    const onnx::NodeProto& mn = g_.node(mul);
    const int si = mn.input(0) == tail ? 1 : 0;
    const int off = sole_consumer(mn.output(0), "Add");
    if (mn.input_size() != 2 || !is_tensor_const(mn.input(si), 3) || off < 0) return false;
    const onnx::NodeProto& on = g_.node(off);
    const int oi = on.input(0) == mn.output(0) ? 1 : 0;
    if (on.input_size() != 2 || !is_tensor_const(on.input(oi), 3)) return false;
    const std::vector<int64_t> sd = dims_of(*consts_.at(mn.input(si)));
    const int64_t c = sd.empty() ? 0 : sd[0];
    if (c % groups != 0 || (back_shape[1] != 0 && back_shape[1] != c)) return false;  // 0: the input's, Shape(x)
    nodes.insert(nodes.end(), {mul, off});
    for (int i : nodes) removed_[static_cast<size_t>(i)] = true;
    const onnx::NodeProto& r = g_.node(off);
    onnx::NodeProto& gn = replacement_[off].emplace_back();
    gn.set_op_type("GroupNormalization");
    gn.set_name(r.name());
    gn.add_input(x);
    gn.add_input(mn.input(si));
    gn.add_input(on.input(oi));
    gn.add_output(r.output(0));
    add_attr(gn, "num_groups", groups);
    add_attr(gn, "epsilon", attr_float(nn, "epsilon", 1e-5f));
    return true;
  }

  // v is a float constant of `count` values, each `want`.
  bool all_equal(const std::string& v, int64_t count, float want) const {
    auto it = consts_.find(v);
    if (it == consts_.end()) return false;
    try {
      if (checked_values(*it->second, "constant") != count || count > (int64_t{1} << 20)) return false;
      for (float f : floats_of(*it->second, "constant"))
        if (f != want) return false;
      return true;
    } catch (const ModelError&) {
    }
    return false;
  }

  // The LayerNormalization that takes root's place (its name and output): over `axis` of x, or,
  // per_pixel, over the channels of x's pixels (x an NCHW image) between two Transposes.
  void layer_norm_nodes(int root, const std::string& x, const std::string& scale, const std::string& offset,
                        double epsilon, int64_t axis, bool per_pixel) {
    const onnx::NodeProto& r = g_.node(root);
    std::vector<onnx::NodeProto>& out = replacement_[root];
    out.reserve(3);  // the references below stay valid
    std::string in = x;
    if (per_pixel) {
      onnx::NodeProto& t = out.emplace_back();
      t.set_op_type("Transpose");
      t.set_name(r.name() + "_to_nhwc");
      t.add_input(x);
      t.add_output(r.output(0) + "_nhwc");
      add_attr(t, "perm", std::vector<int64_t>{0, 2, 3, 1});
      in = t.output(0);
    }
    onnx::NodeProto& ln = out.emplace_back();
    ln.set_op_type("LayerNormalization");
    ln.set_name(r.name());
    ln.add_input(in);
    ln.add_input(scale);
    if (!offset.empty()) ln.add_input(offset);
    ln.add_output(per_pixel ? r.output(0) + "_normalized" : r.output(0));
    add_attr(ln, "axis", per_pixel ? int64_t{-1} : axis);
    add_attr(ln, "epsilon", static_cast<float>(epsilon));
    if (per_pixel) {
      onnx::NodeProto& t = out.emplace_back();
      t.set_op_type("Transpose");
      t.set_name(r.name() + "_to_nchw");
      t.add_input(ln.output(0));
      t.add_output(r.output(0));
      add_attr(t, "perm", std::vector<int64_t>{0, 3, 1, 2});
    }
  }

  void apply() {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    for (int i = 0; i < g_.node_size(); ++i) {
      auto it = replacement_.find(i);
      if (it != replacement_.end())
        for (auto& n : it->second) kept.Add()->Swap(&n);
      else if (!removed_[static_cast<size_t>(i)])
        kept.Add()->Swap(g_.mutable_node(i));
    }
    g_.mutable_node()->Swap(&kept);
  }

  onnx::GraphProto& g_;
  int64_t batch_ = 0;                                        // the graph input's fixed batch (0: symbolic or none)
  std::vector<bool> removed_;                                // per node index
  std::map<int, std::vector<onnx::NodeProto>> replacement_;  // root index -> its new nodes
  std::map<std::string, const onnx::TensorProto*> consts_;   // initializers and Constant outputs
  std::map<std::string, int> producer_;                      // value -> node index
  std::map<std::string, int> uses_;                          // value -> node inputs and graph outputs
  std::map<std::string, int> consumer_;                      // value -> the last node that reads it
};

}  // namespace

int rewrite_for_import(onnx::GraphProto& g) { return Rewriter(g).run(); }

}  // namespace dlt
