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
      for (const auto& o : n.output())
        if (!o.empty()) producer_[o] = i;
      for (const auto& in : n.input())
        if (!in.empty()) ++uses_[in];
    }
    for (const auto& o : g.output()) ++uses_[o.name()];
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
  int inner(const std::string& v, const char* op, int inputs) const {
    auto it = producer_.find(v);
    if (it == producer_.end() || removed_[static_cast<size_t>(it->second)]) return -1;
    auto u = uses_.find(v);
    if (u == uses_.end() || u->second != 1) return -1;
    const onnx::NodeProto& n = g_.node(it->second);
    if (n.op_type() != op || !standard(n) || n.input_size() != inputs || n.output_size() != 1) return -1;
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
    replacement_[root] = std::move(n);
    return true;
  }

  void apply() {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    for (int i = 0; i < g_.node_size(); ++i) {
      auto it = replacement_.find(i);
      if (it != replacement_.end())
        kept.Add()->Swap(&it->second);
      else if (!removed_[static_cast<size_t>(i)])
        kept.Add()->Swap(g_.mutable_node(i));
    }
    g_.mutable_node()->Swap(&kept);
  }

  onnx::GraphProto& g_;
  std::vector<bool> removed_;                               // per node index
  std::map<int, onnx::NodeProto> replacement_;              // root index -> its new node
  std::map<std::string, const onnx::TensorProto*> consts_;  // initializers and Constant outputs
  std::map<std::string, int> producer_;                     // value -> node index
  std::map<std::string, int> uses_;                         // value -> node inputs and graph outputs
};

}  // namespace

int rewrite_for_import(onnx::GraphProto& g) { return Rewriter(g).run(); }

}  // namespace dlt
