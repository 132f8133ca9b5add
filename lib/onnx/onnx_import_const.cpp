// Folding of constant tensors of any rank (onnx_import_const.h).
#include "onnx/onnx_import_const.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace dlt::onnxu {

namespace {

constexpr double kMaxExactInt = 9007199254740992.0;  // 2^53
// The most multiply-adds one folded MatMul may cost.
constexpr int64_t kMaxFoldMatMulWork = int64_t{1} << 30;

[[noreturn]] void refuse(const std::string& why) { throw FoldError(why); }

std::string dims_text(const std::vector<int64_t>& d) {
  if (d.empty()) return "a scalar";
  std::string s;
  for (int64_t x : d) s += (s.empty() ? "" : "x") + std::to_string(x);
  return s;
}

// The number of values of dims, refused past kMaxFoldTensorValues.
int64_t count(const std::vector<int64_t>& d) {
  if (d.size() > 16) refuse("a result of rank " + std::to_string(d.size()) + " (dltrain folds up to rank 16)");
  int64_t n = 1;
  for (int64_t x : d) {
    if (x < 0) refuse("a dimension of " + std::to_string(x));
    if (x != 0 && n > kMaxFoldTensorValues / x)
      refuse("a result of " + dims_text(d) + " values, more than the " + std::to_string(kMaxFoldTensorValues) +
             " dltrain folds");
    n *= x;
  }
  if (n > kMaxFoldTensorValues)
    refuse("a result of " + dims_text(d) + ", more than the " + std::to_string(kMaxFoldTensorValues) +
           " values dltrain folds");
  return n;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& d) {
  std::vector<int64_t> s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}

TensorConst make(TensorConst::Type type, std::vector<int64_t> dims) {
  TensorConst t;
  t.type = type;
  t.v.assign(static_cast<size_t>(count(dims)), 0.0);
  t.dims = std::move(dims);
  return t;
}

const TensorConst& need(const std::vector<const TensorConst*>& in, size_t i, const char* role) {
  if (in.size() <= i || !in[i]) refuse(std::string("has no ") + role + " input");
  return *in[i];
}

// An integer list (a shape, axes, indices) from a constant of rank 0 or 1.
std::vector<int64_t> int_list(const TensorConst& t, const char* role) {
  if (t.type == TensorConst::kFloat) refuse(std::string("its ") + role + " is a float tensor");
  if (t.dims.size() > 1) refuse(std::string("its ") + role + " is " + dims_text(t.dims) + ", not a list");
  std::vector<int64_t> out;
  for (double x : t.v) out.push_back(static_cast<int64_t>(x));
  return out;
}

int64_t axis_of(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    refuse("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// numpy's broadcast of several shapes.
std::vector<int64_t> broadcast(const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      const int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o != 1) {
        std::string all;
        for (const auto& t : shapes) all += (all.empty() ? "" : " and ") + dims_text(t);
        refuse("shapes " + all + " do not broadcast");
      }
      o = d;
    }
  return out;
}

// The offset into a tensor of dims `d` (aligned right, size-1 dimensions repeated) of each
// index of `out`.
std::vector<int64_t> broadcast_offsets(const std::vector<int64_t>& d, const std::vector<int64_t>& out) {
  const std::vector<int64_t> s = strides_of(d), os = strides_of(out);
  const int64_t n = count(out);
  std::vector<int64_t> offsets(static_cast<size_t>(n), 0);
  const size_t lead = out.size() - d.size();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, off = 0;
    for (size_t k = 0; k < out.size(); ++k) {
      const int64_t idx = rest / os[k];
      rest %= os[k];
      if (k >= lead && d[k - lead] != 1) off += idx * s[k - lead];
    }
    offsets[static_cast<size_t>(i)] = off;
  }
  return offsets;
}

TensorConst elementwise(const std::vector<const TensorConst*>& xs, TensorConst::Type type,
                        const std::function<double(const std::vector<double>&)>& f) {
  std::vector<std::vector<int64_t>> shapes;
  for (const TensorConst* x : xs) shapes.push_back(x->dims);
  TensorConst out = make(type, broadcast(shapes));
  std::vector<std::vector<int64_t>> offsets;
  for (const TensorConst* x : xs) offsets.push_back(broadcast_offsets(x->dims, out.dims));
  std::vector<double> args(xs.size());
  for (size_t i = 0; i < out.v.size(); ++i) {
    for (size_t k = 0; k < xs.size(); ++k) args[k] = xs[k]->v[static_cast<size_t>(offsets[k][i])];
    out.v[i] = f(args);
  }
  return out;
}

// An integer result stays an integer; refused where it no longer fits a double exactly.
void check_ints(const TensorConst& t) {
  if (t.type != TensorConst::kInt) return;
  for (double x : t.v)
    if (!(std::fabs(x) <= kMaxExactInt)) refuse("an integer result beyond 2^53");
}

TensorConst binary(const std::string& op, const TensorConst& a, const TensorConst& b) {
  const bool ints = a.type != TensorConst::kFloat && b.type != TensorConst::kFloat;
  if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual") {
    return elementwise({&a, &b}, TensorConst::kBool, [&](const std::vector<double>& x) {
      if (op == "Equal") return double(x[0] == x[1]);
      if (op == "Less") return double(x[0] < x[1]);
      if (op == "Greater") return double(x[0] > x[1]);
      if (op == "LessOrEqual") return double(x[0] <= x[1]);
      return double(x[0] >= x[1]);
    });
  }
  if (op == "And" || op == "Or" || op == "Xor") {
    return elementwise({&a, &b}, TensorConst::kBool, [&](const std::vector<double>& x) {
      const bool p = x[0] != 0, q = x[1] != 0;
      return double(op == "And" ? p && q : op == "Or" ? p || q : p != q);
    });
  }
  TensorConst out =
      elementwise({&a, &b}, ints ? TensorConst::kInt : TensorConst::kFloat, [&](const std::vector<double>& x) {
        if (op == "Add") return x[0] + x[1];
        if (op == "Sub") return x[0] - x[1];
        if (op == "Mul") return x[0] * x[1];
        if (op == "Pow") return std::pow(x[0], x[1]);
        if (op == "Max") return std::max(x[0], x[1]);
        if (op == "Min") return std::min(x[0], x[1]);
        // Div: integers truncate toward zero (as C and onnxruntime do)
        if (ints) {
          if (x[1] == 0) refuse("divides an integer by 0");
          return std::trunc(x[0] / x[1]);
        }
        return x[0] / x[1];
      });
  if (!ints)
    for (double& x : out.v) x = static_cast<float>(x);  // float32 arithmetic's rounding
  check_ints(out);
  return out;
}

TensorConst unary(const std::string& op, const TensorConst& a) {
  if (op == "Not") {
    TensorConst out = a;
    out.type = TensorConst::kBool;
    for (double& x : out.v) x = x == 0 ? 1 : 0;
    return out;
  }
  TensorConst out = a;
  const bool keeps_type = op == "Neg" || op == "Abs" || op == "Relu" || op == "Floor" || op == "Ceil";
  if (!keeps_type || out.type == TensorConst::kBool) out.type = TensorConst::kFloat;
  for (double& x : out.v) {
    if (op == "Neg") x = -x;
    if (op == "Abs") x = std::fabs(x);
    if (op == "Relu") x = std::max(x, 0.0);
    if (op == "Floor") x = std::floor(x);
    if (op == "Ceil") x = std::ceil(x);
    if (op == "Sigmoid") x = 1.0 / (1.0 + std::exp(-x));
    if (op == "Exp") x = std::exp(x);
    if (op == "Log") x = std::log(x);
    if (op == "Sqrt") x = std::sqrt(x);
    if (op == "Tanh") x = std::tanh(x);
    if (op == "Sin") x = std::sin(x);
    if (op == "Cos") x = std::cos(x);
    if (out.type == TensorConst::kFloat) x = static_cast<float>(x);
  }
  return out;
}

TensorConst cast(const TensorConst& a, int64_t to) {
  TensorConst out = a;
  if (to == 1 || to == 11) {  // FLOAT, DOUBLE
    out.type = TensorConst::kFloat;
    for (double& x : out.v) x = static_cast<float>(x);
  } else if (to == 6 || to == 7) {  // INT32, INT64
    out.type = TensorConst::kInt;
    for (double& x : out.v) {
      if (!(std::fabs(x) <= kMaxExactInt)) refuse("casts " + std::to_string(x) + " to an integer");
      x = std::trunc(x);
    }
  } else if (to == 9) {  // BOOL
    out.type = TensorConst::kBool;
    for (double& x : out.v) x = x != 0 ? 1 : 0;
  } else {
    refuse("casts to data type " + std::to_string(to) + " (dltrain folds float, int32, int64 and bool)");
  }
  return out;
}

TensorConst gather(const TensorConst& data, const TensorConst& idx, int64_t axis_attr) {
  if (data.dims.empty()) refuse("gathers from a scalar");
  if (idx.type == TensorConst::kFloat) refuse("its indices are floats");
  const int64_t rank = static_cast<int64_t>(data.dims.size()), axis = axis_of(axis_attr, rank);
  const int64_t len = data.dims[static_cast<size_t>(axis)];
  std::vector<int64_t> dims(data.dims.begin(), data.dims.begin() + axis);
  dims.insert(dims.end(), idx.dims.begin(), idx.dims.end());
  dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  TensorConst out = make(data.type, dims);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= data.dims[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= data.dims[static_cast<size_t>(i)];
  const int64_t k = static_cast<int64_t>(idx.v.size());
  for (int64_t j = 0; j < k; ++j) {
    int64_t at = static_cast<int64_t>(idx.v[static_cast<size_t>(j)]);
    if (at < -len || at >= len)
      refuse("index " + std::to_string(at) + " is out of range for a dimension of " + std::to_string(len));
    if (at < 0) at += len;
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(data.v.begin() + (o * len + at) * inner, inner, out.v.begin() + (o * k + j) * inner);
  }
  return out;
}

TensorConst reshape(const TensorConst& data, const std::vector<int64_t>& target, bool allowzero) {
  std::vector<int64_t> dims = target;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == kBatchDim) refuse("reshapes a constant to the batch size");
    if (dims[i] == 0 && !allowzero) {
      if (i >= data.dims.size()) refuse("a 0 in the target names no dimension of " + dims_text(data.dims));
      dims[i] = data.dims[i];
    }
    if (dims[i] == -1) {
      if (infer >= 0) refuse("two -1 in the target");
      infer = static_cast<int>(i);
      continue;
    }
    if (dims[i] < 0) refuse("a target dimension of " + std::to_string(dims[i]));
    if (dims[i] > kMaxFoldTensorValues / known) refuse("a target of more values than the tensor");
    known *= std::max<int64_t>(dims[i], 1);
  }
  const int64_t n = static_cast<int64_t>(data.v.size());
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      refuse("cannot infer the -1 of " + ints_str(target) + " from " + dims_text(data.dims));
    dims[static_cast<size_t>(infer)] = n / known;
  }
  if (count(dims) != n) refuse("reshapes " + dims_text(data.dims) + " to " + dims_text(dims));
  TensorConst out = data;
  out.dims = dims;
  return out;
}

TensorConst transpose(const TensorConst& data, std::vector<int64_t> perm) {
  const size_t rank = data.dims.size();
  if (perm.empty())
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  std::set<int64_t> seen(perm.begin(), perm.end());
  if (perm.size() != rank || seen.size() != rank || *seen.begin() != 0 || *seen.rbegin() != int64_t(rank) - 1)
    refuse("perm " + ints_str(perm) + " is not a permutation of " + std::to_string(rank) + " axes");
  std::vector<int64_t> dims(rank);
  for (size_t i = 0; i < rank; ++i) dims[i] = data.dims[static_cast<size_t>(perm[i])];
  TensorConst out = make(data.type, dims);
  const std::vector<int64_t> in_s = strides_of(data.dims), out_s = strides_of(dims);
  for (size_t i = 0; i < out.v.size(); ++i) {
    int64_t rest = static_cast<int64_t>(i), off = 0;
    for (size_t k = 0; k < rank; ++k) {
      off += (rest / out_s[k]) * in_s[static_cast<size_t>(perm[k])];
      rest %= out_s[k];
    }
    out.v[i] = data.v[static_cast<size_t>(off)];
  }
  return out;
}

TensorConst unsqueeze(const TensorConst& data, const std::vector<int64_t>& axes) {
  const int64_t rank = static_cast<int64_t>(data.dims.size() + axes.size());
  if (rank > 16) refuse("a result of rank " + std::to_string(rank) + " (dltrain folds up to rank 16)");
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    const int64_t x = axis_of(a, rank);
    if (inserted[static_cast<size_t>(x)]) refuse("axis " + std::to_string(a) + " twice");
    inserted[static_cast<size_t>(x)] = true;
  }
  TensorConst out = data;
  out.dims.clear();
  size_t k = 0;
  for (int64_t i = 0; i < rank; ++i) out.dims.push_back(inserted[static_cast<size_t>(i)] ? 1 : data.dims[k++]);
  return out;
}

TensorConst squeeze(const TensorConst& data, const std::vector<int64_t>& axes, bool has_axes) {
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  std::vector<bool> drop(static_cast<size_t>(rank), false);
  for (int64_t i = 0; i < rank; ++i) drop[static_cast<size_t>(i)] = !has_axes && data.dims[static_cast<size_t>(i)] == 1;
  for (int64_t a : axes) {
    const int64_t x = axis_of(a, rank);
    if (data.dims[static_cast<size_t>(x)] != 1)
      refuse("squeezes axis " + std::to_string(a) + " of size " + std::to_string(data.dims[static_cast<size_t>(x)]));
    drop[static_cast<size_t>(x)] = true;
  }
  TensorConst out = data;
  out.dims.clear();
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[static_cast<size_t>(i)]) out.dims.push_back(data.dims[static_cast<size_t>(i)]);
  return out;
}

TensorConst concat(const std::vector<const TensorConst*>& in, int64_t axis_attr) {
  if (in.empty() || !in[0]) refuse("has no inputs");
  const std::vector<int64_t>& first = in[0]->dims;
  const int64_t axis = axis_of(axis_attr, static_cast<int64_t>(first.size()));
  std::vector<int64_t> dims = first;
  dims[static_cast<size_t>(axis)] = 0;
  TensorConst::Type type = in[0]->type;
  for (const TensorConst* t : in) {
    if (!t) refuse("has an absent input");
    if (t->dims.size() != first.size()) refuse("joins tensors of different ranks");
    for (size_t i = 0; i < first.size(); ++i)
      if (int64_t(i) != axis && t->dims[i] != first[i])
        refuse("joins " + dims_text(first) + " and " + dims_text(t->dims) + " along axis " + std::to_string(axis));
    dims[static_cast<size_t>(axis)] += t->dims[static_cast<size_t>(axis)];
    if (t->type == TensorConst::kFloat) type = TensorConst::kFloat;
  }
  TensorConst out = make(type, dims);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= first[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < first.size(); ++i) inner *= first[i];
  int64_t at = 0;
  const int64_t total = dims[static_cast<size_t>(axis)];
  for (const TensorConst* t : in) {
    const int64_t len = t->dims[static_cast<size_t>(axis)];
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(t->v.begin() + o * len * inner, len * inner, out.v.begin() + (o * total + at) * inner);
    at += len;
  }
  return out;
}

TensorConst slice(const TensorConst& data, std::vector<int64_t> starts, std::vector<int64_t> ends,
                  std::vector<int64_t> axes, std::vector<int64_t> steps) {
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  if (starts.size() != ends.size())
    refuse("has " + std::to_string(starts.size()) + " starts and " + std::to_string(ends.size()) + " ends");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) refuse("has lists of different lengths");
  std::vector<int64_t> first(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1), dims = data.dims;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t ax = axis_of(axes[i], rank), len = data.dims[static_cast<size_t>(ax)];
    if (seen[static_cast<size_t>(ax)]) refuse("slices axis " + std::to_string(axes[i]) + " twice");
    seen[static_cast<size_t>(ax)] = true;
    const int64_t s = steps[i];
    if (s == 0) refuse("a step of 0");
    // ONNX's clamping: negative from the end, then start into [0, len] and end into [0, len]
    // (steps > 0), or start into [0, len - 1] and end into [-1, len - 1] (steps < 0).
    auto from_end = [&](int64_t x) { return x < 0 ? (x < -len ? -1 : x + len) : x; };
    if (len == 0) {  // nothing to take
      dims[static_cast<size_t>(ax)] = 0;
      continue;
    }
    const int64_t b =
        s > 0 ? std::clamp<int64_t>(from_end(starts[i]), 0, len) : std::clamp<int64_t>(from_end(starts[i]), 0, len - 1);
    const int64_t e =
        s > 0 ? std::clamp<int64_t>(from_end(ends[i]), 0, len) : std::clamp<int64_t>(from_end(ends[i]), -1, len - 1);
    const int64_t n = s > 0 ? (e > b ? (e - b + s - 1) / s : 0) : (b > e ? (b - e + (-s) - 1) / (-s) : 0);
    first[static_cast<size_t>(ax)] = b;
    step[static_cast<size_t>(ax)] = s;
    dims[static_cast<size_t>(ax)] = n;
  }
  TensorConst out = make(data.type, dims);
  const std::vector<int64_t> in_s = strides_of(data.dims), out_s = strides_of(dims);
  for (size_t i = 0; i < out.v.size(); ++i) {
    int64_t rest = static_cast<int64_t>(i), off = 0;
    for (size_t k = 0; k < dims.size(); ++k) {
      off += (first[k] + (rest / out_s[k]) * step[k]) * in_s[k];
      rest %= out_s[k];
    }
    out.v[i] = data.v[static_cast<size_t>(off)];
  }
  return out;
}

TensorConst expand(const TensorConst& data, const std::vector<int64_t>& shape) {
  for (int64_t d : shape)
    if (d == kBatchDim) refuse("expands a constant to the batch size");
  const std::vector<int64_t> dims = broadcast({data.dims, shape});
  TensorConst out = make(data.type, dims);
  const std::vector<int64_t> off = broadcast_offsets(data.dims, dims);
  for (size_t i = 0; i < out.v.size(); ++i) out.v[i] = data.v[static_cast<size_t>(off[i])];
  return out;
}

// Tile: each dimension repeated (XCiT's Fourier position encoding, repeat over the batch of one).
TensorConst tile(const TensorConst& data, const std::vector<int64_t>& repeats) {
  if (repeats.size() != data.dims.size())
    refuse("repeats " + dims_text(repeats) + " for a constant of rank " + std::to_string(data.dims.size()));
  std::vector<int64_t> dims = data.dims;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (repeats[i] == kBatchDim) refuse("tiles a constant by the batch size");
    if (repeats[i] < 0) refuse("a repeat count of " + std::to_string(repeats[i]));
    dims[i] *= repeats[i];
  }
  TensorConst out = make(data.type, dims);
  const std::vector<int64_t> s = strides_of(data.dims), os = strides_of(dims);
  for (int64_t i = 0; i < out.size(); ++i) {
    int64_t rest = i, off = 0;
    for (size_t k = 0; k < dims.size(); ++k) {
      off += (rest / os[k]) % data.dims[k] * s[k];
      rest %= os[k];
    }
    out.v[static_cast<size_t>(i)] = data.v[static_cast<size_t>(off)];
  }
  return out;
}

// Softmax along axis (ConViT's positional attention weights, a softmax of a Linear of constant
// offsets): each slice along the axis exp(x - max) over its sum, in double.
TensorConst softmax(const TensorConst& x, int64_t axis_in) {
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (rank == 0 || x.type != TensorConst::kFloat) refuse("a Softmax of a scalar or of integers");
  const int64_t axis = axis_of(axis_in, rank), len = x.dims[static_cast<size_t>(axis)];
  const int64_t inner = strides_of(x.dims)[static_cast<size_t>(axis)],
                outer = x.size() / std::max<int64_t>(1, len * inner);
  TensorConst out = x;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return static_cast<size_t>((o * len + k) * inner + i); };
      double top = -INFINITY, sum = 0;
      for (int64_t k = 0; k < len; ++k) top = std::max(top, x.v[at(k)]);
      for (int64_t k = 0; k < len; ++k) sum += std::exp(x.v[at(k)] - top);
      for (int64_t k = 0; k < len; ++k) out.v[at(k)] = static_cast<float>(std::exp(x.v[at(k)] - top) / sum);
    }
  return out;
}

// CumSum along axis (EdgeNeXt's Fourier position encoding sums a mask of ones): exclusive leaves
// each value out of its own sum, reverse sums from the end.
TensorConst cumsum(const TensorConst& x, int64_t axis_in, bool exclusive, bool reverse) {
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (rank == 0) refuse("a CumSum of a scalar");
  const int64_t axis = axis_of(axis_in, rank), len = x.dims[static_cast<size_t>(axis)];
  const int64_t inner = strides_of(x.dims)[static_cast<size_t>(axis)],
                outer = x.size() / std::max<int64_t>(1, len * inner);
  TensorConst out = x;
  if (out.type == TensorConst::kBool) out.type = TensorConst::kInt;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) {
        const int64_t j = reverse ? len - 1 - k : k;
        const size_t at = static_cast<size_t>((o * len + j) * inner + i);
        const double v = x.v[at];
        if (!exclusive) sum += v;
        out.v[at] = out.type == TensorConst::kFloat ? static_cast<float>(sum) : sum;
        if (exclusive) sum += v;
      }
    }
  check_ints(out);
  return out;
}

// A 2-D Conv of constants (N, C, H, W) by (M, C / group, kh, kw), plus a bias of M (XCiT's 1x1
// projection of its Fourier features), in double, rounded to float32 at the end.
TensorConst conv(const TensorConst& x, const TensorConst& w, const TensorConst* b, const TensorFoldAttrs& a) {
  if (x.dims.size() != 4 || w.dims.size() != 4)
    refuse("a Conv of " + dims_text(x.dims) + " by " + dims_text(w.dims) + " (dltrain folds 2-D ones)");
  if (a.auto_pad != "NOTSET" && a.auto_pad != "VALID") refuse("a Conv with auto_pad " + a.auto_pad);
  auto pair = [](const std::vector<int64_t>& v, int64_t d, const char* what) {
    if (v.empty()) return std::vector<int64_t>{d, d};
    if (v.size() != 2 || v[0] < 1 || v[1] < 1) refuse(std::string("Conv ") + what + " " + dims_text(v));
    return v;
  };
  const std::vector<int64_t> st = pair(a.strides, 1, "strides"), dl = pair(a.dilations, 1, "dilations");
  std::vector<int64_t> pad = a.pads.empty() ? std::vector<int64_t>{0, 0, 0, 0} : a.pads;
  if (pad.size() != 4 || *std::min_element(pad.begin(), pad.end()) < 0) refuse("Conv pads " + dims_text(a.pads));
  const int64_t n = x.dims[0], c = x.dims[1], h = x.dims[2], wd = x.dims[3];
  const int64_t m = w.dims[0], cg = w.dims[1], kh = w.dims[2], kw = w.dims[3], g = a.group;
  if (g < 1 || c % g != 0 || m % g != 0 || cg != c / g)
    refuse("a Conv of " + dims_text(x.dims) + " by " + dims_text(w.dims) + " in " + std::to_string(g) + " groups");
  if (b && (b->dims.size() != 1 || b->dims[0] != m)) refuse("a Conv bias of " + dims_text(b->dims));
  const int64_t oh = (h + pad[0] + pad[2] - dl[0] * (kh - 1) - 1) / st[0] + 1;
  const int64_t ow = (wd + pad[1] + pad[3] - dl[1] * (kw - 1) - 1) / st[1] + 1;
  if (oh < 1 || ow < 1) refuse("a Conv whose output is empty");
  TensorConst out = make(TensorConst::kFloat, {n, m, oh, ow});
  if (cg * kh * kw > kMaxFoldMatMulWork / out.size())
    refuse("a Conv of more than " + std::to_string(kMaxFoldMatMulWork) + " multiply-adds");
  const int64_t mg = m / g;
  for (int64_t img = 0; img < n; ++img)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double sum = b ? b->v[static_cast<size_t>(o)] : 0.0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t yy = y * st[0] - pad[0] + i * dl[0], zz = z * st[1] - pad[1] + j * dl[1];
                if (yy < 0 || yy >= h || zz < 0 || zz >= wd) continue;
                const int64_t ch = o / mg * cg + ci;
                sum += x.v[static_cast<size_t>(((img * c + ch) * h + yy) * wd + zz)] *
                       w.v[static_cast<size_t>(((o * cg + ci) * kh + i) * kw + j)];
              }
          out.v[static_cast<size_t>(((img * m + o) * oh + y) * ow + z)] = static_cast<float>(sum);
        }
  return out;
}

// The index tuples of ScatterND / GatherND: idx (..., k) addresses the first k dimensions of
// data; each tuple names a slice of the remaining dimensions' values.
struct NdIndex {
  int64_t k = 1, slice = 1, tuples = 0;
  std::vector<int64_t> lead;     // idx's dimensions before the last: the tuples' shape
  std::vector<int64_t> strides;  // data's
};

NdIndex nd_index(const TensorConst& data, const TensorConst& idx) {
  if (idx.type == TensorConst::kFloat) refuse("its indices are floats");
  if (idx.dims.empty()) refuse("its indices are a scalar");
  NdIndex x;
  x.k = idx.dims.back();
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  if (x.k < 1 || x.k > rank) refuse("index tuples of " + std::to_string(x.k) + " for rank " + std::to_string(rank));
  for (int64_t i = x.k; i < rank; ++i) x.slice *= data.dims[static_cast<size_t>(i)];
  x.tuples = static_cast<int64_t>(idx.v.size()) / x.k;
  x.lead.assign(idx.dims.begin(), idx.dims.end() - 1);
  x.strides = strides_of(data.dims);
  return x;
}

// The offset in data of tuple t's slice; an index outside its dimension is refused.
int64_t tuple_offset(const TensorConst& data, const TensorConst& idx, const NdIndex& x, int64_t t) {
  int64_t off = 0;
  for (int64_t j = 0; j < x.k; ++j) {
    int64_t at = static_cast<int64_t>(idx.v[static_cast<size_t>(t * x.k + j)]);
    const int64_t len = data.dims[static_cast<size_t>(j)];
    if (at < -len || at >= len)
      refuse("index " + std::to_string(at) + " is out of range for a dimension of " + std::to_string(len));
    if (at < 0) at += len;
    off += at * x.strides[static_cast<size_t>(j)];
  }
  return off;
}

TensorConst scatter_nd(const TensorConst& data, const TensorConst& idx, const TensorConst& upd,
                       const std::string& reduction) {
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    refuse("reduction '" + reduction + "' (dltrain folds none, add and mul)");
  const NdIndex x = nd_index(data, idx);
  std::vector<int64_t> want = x.lead;
  want.insert(want.end(), data.dims.begin() + x.k, data.dims.end());
  if (upd.dims != want) refuse("updates of " + dims_text(upd.dims) + ", expected " + dims_text(want));
  TensorConst out = data;
  if (upd.type == TensorConst::kFloat) out.type = TensorConst::kFloat;
  for (int64_t t = 0; t < x.tuples; ++t) {
    const int64_t off = tuple_offset(data, idx, x, t);
    for (int64_t e = 0; e < x.slice; ++e) {
      double& v = out.v[static_cast<size_t>(off + e)];
      const double u = upd.v[static_cast<size_t>(t * x.slice + e)];
      v = reduction == "add" ? v + u : reduction == "mul" ? v * u : u;
    }
  }
  return out;
}

// ScatterElements along axis (ConViT's offsets table built by slice assignments): each update
// goes to its own position with the axis coordinate replaced by its index (negative from the end).
TensorConst scatter_elements(const TensorConst& data, const TensorConst& idx, const TensorConst& upd, int64_t axis_in,
                             const std::string& reduction) {
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    refuse("reduction '" + reduction + "' (dltrain folds none, add and mul)");
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  if (rank == 0 || idx.dims.size() != data.dims.size() || upd.dims != idx.dims)
    refuse("indices of " + dims_text(idx.dims) + " and updates of " + dims_text(upd.dims) + " for data of " +
           dims_text(data.dims) + " (the same rank, the updates the indices' shape)");
  const int64_t axis = axis_of(axis_in, rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && idx.dims[static_cast<size_t>(d)] > data.dims[static_cast<size_t>(d)])
      refuse("indices of " + dims_text(idx.dims) + " larger than the data " + dims_text(data.dims));
  const std::vector<int64_t> from = strides_of(idx.dims), to = strides_of(data.dims);
  const int64_t len = data.dims[static_cast<size_t>(axis)];
  TensorConst out = data;
  if (upd.type == TensorConst::kFloat) out.type = TensorConst::kFloat;
  for (int64_t e = 0; e < idx.size(); ++e) {
    int64_t at = 0, rest = e;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t c = rest / from[static_cast<size_t>(d)];
      rest %= from[static_cast<size_t>(d)];
      if (d == axis) {
        const double i = idx.v[static_cast<size_t>(e)];
        if (i < -len || i >= len) refuse("index " + std::to_string(static_cast<int64_t>(i)) + " is out of range");
        c = static_cast<int64_t>(i < 0 ? i + len : i);
      }
      at += c * to[static_cast<size_t>(d)];
    }
    double& v = out.v[static_cast<size_t>(at)];
    const double u = upd.v[static_cast<size_t>(e)];
    v = reduction == "add" ? v + u : reduction == "mul" ? v * u : u;
  }
  return out;
}

TensorConst gather_nd(const TensorConst& data, const TensorConst& idx, int64_t batch_dims) {
  if (batch_dims != 0) refuse("batch_dims " + std::to_string(batch_dims) + " (dltrain folds batch_dims 0)");
  const NdIndex x = nd_index(data, idx);
  std::vector<int64_t> dims = x.lead;
  dims.insert(dims.end(), data.dims.begin() + x.k, data.dims.end());
  TensorConst out = make(data.type, dims);
  for (int64_t t = 0; t < x.tuples; ++t)
    std::copy_n(data.v.begin() + tuple_offset(data, idx, x, t), x.slice, out.v.begin() + t * x.slice);
  return out;
}

TensorConst range(const TensorConst& start, const TensorConst& limit, const TensorConst& delta) {
  for (const TensorConst* t : {&start, &limit, &delta})
    if (t->v.size() != 1) refuse("its start, limit and delta must be scalars");
  const double a = start.v[0], b = limit.v[0], d = delta.v[0];
  if (d == 0) refuse("a delta of 0");
  const double n = std::max(std::ceil((b - a) / d), 0.0);
  if (!(n <= double(kMaxFoldTensorValues)))
    refuse("a range of more than " + std::to_string(kMaxFoldTensorValues) + " values");
  TensorConst out = make(
      start.type == TensorConst::kFloat || delta.type == TensorConst::kFloat ? TensorConst::kFloat : TensorConst::kInt,
      {static_cast<int64_t>(n)});
  for (size_t i = 0; i < out.v.size(); ++i) out.v[i] = a + static_cast<double>(i) * d;
  return out;
}

// numpy's matmul: 1-D operands promoted and their axis removed again, batch dimensions broadcast.
// Einsum of constants in explicit form ("nixw,jyw->nijxy": one letter per axis, no ellipsis, a
// letter's size the same wherever it appears): every combination of the letters visited once,
// the product of the operands added into the output's element (timm's MaxViT computes its
// relative position bias so).
TensorConst einsum(std::string eq, const std::vector<const TensorConst*>& in) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  if (arrow == std::string::npos || eq.find('.') != std::string::npos)
    refuse("an Einsum '" + eq + "'; dltrain folds the explicit form (inputs -> output) without ellipsis");
  std::vector<std::string> terms;
  for (size_t at = 0;;) {
    const size_t comma = eq.find(',', at);
    terms.push_back(eq.substr(at, std::min(comma, arrow) - at));
    if (comma == std::string::npos || comma > arrow) break;
    at = comma + 1;
  }
  const std::string out_labels = eq.substr(arrow + 2);
  if (terms.size() != in.size()) refuse("an Einsum '" + eq + "' of " + std::to_string(in.size()) + " inputs");
  std::string labels;  // the output's letters first, then the summed ones
  std::map<char, int64_t> size;
  for (size_t k = 0; k < terms.size(); ++k) {
    const TensorConst& t = need(in, k, "operand");
    if (terms[k].size() != t.dims.size())
      refuse("an Einsum term '" + terms[k] + "' for an operand of " + dims_text(t.dims));
    for (size_t d = 0; d < t.dims.size(); ++d) {
      const char c = terms[k][d];
      if (!std::isalpha(static_cast<unsigned char>(c))) refuse("an Einsum '" + eq + "'");
      auto [it, fresh] = size.emplace(c, t.dims[d]);
      if (!fresh && it->second != t.dims[d]) refuse("an Einsum whose '" + std::string(1, c) + "' has two sizes");
    }
  }
  std::vector<int64_t> dims;
  for (char c : out_labels) {
    if (!size.count(c) || labels.find(c) != std::string::npos) refuse("an Einsum output '" + out_labels + "'");
    labels += c;
    dims.push_back(size.at(c));
  }
  for (const auto& [c, n] : size)
    if (labels.find(c) == std::string::npos) labels += c;
  TensorConst out = make(TensorConst::kFloat, dims);
  int64_t work = 1;
  for (char c : labels) {
    const int64_t n = size.at(c);
    if (n == 0) return out;
    if (work > kMaxFoldMatMulWork / n)
      refuse("an Einsum of more than " + std::to_string(kMaxFoldMatMulWork) + " multiply-adds");
    work *= n;
  }
  // The step of each letter in each operand and in the output.
  std::vector<std::vector<int64_t>> step(in.size() + 1, std::vector<int64_t>(labels.size(), 0));
  auto fill = [&](std::vector<int64_t>& st, const std::string& term, const std::vector<int64_t>& d) {
    const std::vector<int64_t> s = strides_of(d);
    for (size_t i = 0; i < term.size(); ++i) st[labels.find(term[i])] += s[i];
  };
  for (size_t k = 0; k < in.size(); ++k) fill(step[k], terms[k], in[k]->dims);
  fill(step[in.size()], out_labels, dims);
  std::vector<int64_t> idx(labels.size(), 0), off(in.size() + 1, 0);
  for (int64_t it = 0; it < work; ++it) {
    double p = 1;
    for (size_t k = 0; k < in.size(); ++k) p *= in[k]->v[static_cast<size_t>(off[k])];
    out.v[static_cast<size_t>(off[in.size()])] += p;
    for (size_t l = labels.size(); l-- > 0;) {  // the odometer: the last letter turns fastest
      for (size_t k = 0; k <= in.size(); ++k) off[k] += step[k][l];
      if (++idx[l] < size.at(labels[l])) break;
      for (size_t k = 0; k <= in.size(); ++k) off[k] -= step[k][l] * idx[l];
      idx[l] = 0;
    }
  }
  return out;
}

TensorConst matmul(const TensorConst& a0, const TensorConst& b0) {
  if (a0.dims.empty() || b0.dims.empty()) refuse("multiplies a scalar");
  TensorConst a = a0, b = b0;
  const bool a_vec = a.dims.size() == 1, b_vec = b.dims.size() == 1;
  if (a_vec) a.dims.insert(a.dims.begin(), 1);
  if (b_vec) b.dims.push_back(1);
  const int64_t m = a.dims[a.dims.size() - 2], k = a.dims.back(), n = b.dims.back();
  if (b.dims[b.dims.size() - 2] != k) refuse("multiplies " + dims_text(a0.dims) + " by " + dims_text(b0.dims));
  const std::vector<int64_t> ab(a.dims.begin(), a.dims.end() - 2), bb(b.dims.begin(), b.dims.end() - 2);
  std::vector<int64_t> batch = broadcast({ab, bb});
  const int64_t batches = count(batch);
  std::vector<int64_t> dims = batch;
  dims.push_back(m);
  dims.push_back(n);
  const int64_t results = count(dims);  // refused past kMaxFoldTensorValues before any product
  if (results > 0 && k > kMaxFoldMatMulWork / results)
    refuse("a product of more than " + std::to_string(kMaxFoldMatMulWork) + " multiply-adds");
  TensorConst out = make(
      a.type == TensorConst::kFloat || b.type == TensorConst::kFloat ? TensorConst::kFloat : TensorConst::kInt, dims);
  const std::vector<int64_t> ao = broadcast_offsets(ab, batch), bo = broadcast_offsets(bb, batch);
  for (int64_t p = 0; p < batches; ++p) {
    const double* x = a.v.data() + ao[static_cast<size_t>(p)] * m * k;
    const double* y = b.v.data() + bo[static_cast<size_t>(p)] * k * n;
    double* z = out.v.data() + p * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t t = 0; t < k; ++t) s += x[i * k + t] * y[t * n + j];
        z[i * n + j] = s;
      }
  }
  if (out.type == TensorConst::kFloat)
    for (double& v : out.v) v = static_cast<float>(v);
  check_ints(out);
  if (b_vec) out.dims.pop_back();
  if (a_vec) out.dims.erase(out.dims.end() - (b_vec ? 1 : 2));
  return out;
}

const std::set<std::string>& binary_ops() {
  static const std::set<std::string> ops{"Add", "Sub",   "Mul",  "Div",     "Pow",         "Max",
                                         "Min", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
                                         "And", "Or",    "Xor"};
  return ops;
}
const std::set<std::string>& unary_ops() {
  static const std::set<std::string> ops{"Not", "Neg", "Abs",  "Relu", "Floor", "Ceil", "Sigmoid",
                                         "Exp", "Log", "Sqrt", "Tanh", "Sin",   "Cos"};
  return ops;
}

}  // namespace

int64_t TensorConst::size() const { return static_cast<int64_t>(v.size()); }

bool is_tensor_fold_op(const std::string& op) {
  static const std::set<std::string> other{"Cast",
                                           "Gather",
                                           "Reshape",
                                           "Transpose",
                                           "Unsqueeze",
                                           "Squeeze",
                                           "Concat",
                                           "Slice",
                                           "Expand",
                                           "ConstantOfShape",
                                           "Range",
                                           "ScatterND",
                                           "ScatterElements",
                                           "MatMul",
                                           "Where",
                                           "Identity",
                                           "GatherND",
                                           "Clip",
                                           "Einsum",
                                           "Gemm",
                                           "Split",
                                           "Tile",
                                           "Conv",
                                           "CumSum",
                                           "Softmax",
                                           "Flatten"};
  return binary_ops().count(op) || unary_ops().count(op) || other.count(op);
}

std::vector<TensorConst> split_fold(const TensorConst& data, int64_t axis_attr, std::vector<int64_t> sizes,
                                    int64_t outputs) {
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  const int64_t axis = axis_of(axis_attr, rank), len = data.dims[static_cast<size_t>(axis)];
  if (outputs < 1) refuse("a Split into no outputs");
  if (sizes.empty()) {  // equal parts, the last one smaller (opset 18's num_outputs)
    const int64_t part = (len + outputs - 1) / outputs;
    for (int64_t i = 0, left = len; i < outputs; ++i, left -= part)
      sizes.push_back(std::max<int64_t>(0, std::min(part, left)));
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) refuse("a Split size of " + std::to_string(s));
    total += s;
  }
  if (static_cast<int64_t>(sizes.size()) != outputs || total != len) {
    std::string list;
    for (int64_t s : sizes) list += (list.empty() ? "" : ", ") + std::to_string(s);
    refuse("splits " + std::to_string(len) + " values of axis " + std::to_string(axis_attr) + " into sizes [" + list +
           "] for " + std::to_string(outputs) + " outputs");
  }
  std::vector<TensorConst> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(data, {at}, {at + s}, {axis}, {}));
    at += s;
  }
  return out;
}

TensorConst tensor_fold(const std::string& op, const std::vector<const TensorConst*>& in, const TensorFoldAttrs& a,
                        int opset) {
  if (binary_ops().count(op)) return binary(op, need(in, 0, "first"), need(in, 1, "second"));
  if (unary_ops().count(op)) return unary(op, need(in, 0, "data"));
  if (op == "Identity") return need(in, 0, "data");
  if (op == "Cast") return cast(need(in, 0, "data"), a.to);
  if (op == "Where") {
    const TensorConst &c = need(in, 0, "condition"), &x = need(in, 1, "X"), &y = need(in, 2, "Y");
    const TensorConst::Type type =
        x.type == TensorConst::kFloat || y.type == TensorConst::kFloat ? TensorConst::kFloat : x.type;
    return elementwise({&c, &x, &y}, type, [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; });
  }
  if (op == "Gather") return gather(need(in, 0, "data"), need(in, 1, "indices"), a.axis);
  if (op == "GatherND") return gather_nd(need(in, 0, "data"), need(in, 1, "indices"), a.batch_dims);
  if (op == "Reshape") return reshape(need(in, 0, "data"), int_list(need(in, 1, "shape"), "shape"), a.allowzero != 0);
  if (op == "Transpose") return transpose(need(in, 0, "data"), a.perm);
  if (op == "Flatten") {  // (product of the dimensions before axis, product of the rest)
    const TensorConst& x = need(in, 0, "data");
    const int64_t rank = static_cast<int64_t>(x.dims.size());
    const int64_t axis = a.flatten_axis < 0 ? a.flatten_axis + rank : a.flatten_axis;
    if (axis < 0 || axis > rank)
      refuse("a Flatten of axis " + std::to_string(a.flatten_axis) + " of rank " + std::to_string(rank));
    int64_t rows = 1, cols = 1;
    for (int64_t i = 0; i < rank; ++i) (i < axis ? rows : cols) *= x.dims[static_cast<size_t>(i)];
    TensorConst out = x;
    out.dims = {rows, cols};
    return out;
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    std::vector<int64_t> axes = a.axes;
    bool has = a.has_axes;
    if (opset >= 13 && in.size() > 1 && in[1]) axes = int_list(*in[1], "axes"), has = true;
    if (op == "Unsqueeze") return unsqueeze(need(in, 0, "data"), axes);
    return squeeze(need(in, 0, "data"), axes, has);
  }
  if (op == "Concat") return concat(in, a.axis);
  if (op == "Slice") {
    const TensorConst& data = need(in, 0, "data");
    if (opset < 10) return slice(data, a.starts, a.ends, a.axes, {});
    auto list = [&](size_t i, const char* role) {
      return in.size() > i && in[i] ? int_list(*in[i], role) : std::vector<int64_t>{};
    };
    return slice(data, list(1, "starts"), list(2, "ends"), list(3, "axes"), list(4, "steps"));
  }
  if (op == "Expand") return expand(need(in, 0, "data"), int_list(need(in, 1, "shape"), "shape"));
  if (op == "ConstantOfShape") {
    const std::vector<int64_t> dims = int_list(need(in, 0, "shape"), "shape");
    for (int64_t d : dims)
      if (d == kBatchDim) refuse("a constant of the batch size");
    TensorConst value;
    value.v = {0.0};
    if (a.has_value) {
      if (a.value.v.size() != 1) refuse("a value of " + dims_text(a.value.dims) + "; expected one value");
      value = a.value;
    }
    TensorConst out = make(value.type, dims);
    std::fill(out.v.begin(), out.v.end(), value.v[0]);
    return out;
  }
  if (op == "Range") return range(need(in, 0, "start"), need(in, 1, "limit"), need(in, 2, "delta"));
  if (op == "ScatterElements")
    return scatter_elements(need(in, 0, "data"), need(in, 1, "indices"), need(in, 2, "updates"), a.axis, a.reduction);
  if (op == "ScatterND")
    return scatter_nd(need(in, 0, "data"), need(in, 1, "indices"), need(in, 2, "updates"), a.reduction);
  if (op == "MatMul") return matmul(need(in, 0, "A"), need(in, 1, "B"));
  if (op == "Einsum") return einsum(a.equation, in);
  if (op == "Gemm") {  // alpha A' B' + beta C of 2-D constants (a position MLP run on its coordinates)
    const TensorConst &x = need(in, 0, "A"), &y = need(in, 1, "B");
    if (x.dims.size() != 2 || y.dims.size() != 2) refuse("a Gemm of " + dims_text(x.dims) + " and " + dims_text(y.dims));
    TensorConst out = matmul(a.trans_a ? transpose(x, {1, 0}) : x, a.trans_b ? transpose(y, {1, 0}) : y);
    out.type = TensorConst::kFloat;
    for (double& v : out.v) v *= a.alpha;
    if (in.size() > 2 && in[2]) {
      TensorConst scaled = *in[2];
      for (double& v : scaled.v) v *= a.beta;
      out = binary("Add", out, scaled);
    }
    return out;
  }
  if (op == "Softmax") {
    const int64_t rank = static_cast<int64_t>(need(in, 0, "input").dims.size());
    // before opset 13 the rows are the axes from `axis` on flattened: the same for the last axis
    if (opset < 13 && axis_of(a.softmax_axis, rank) != rank - 1)
      refuse("a Softmax over axis " + std::to_string(a.softmax_axis) +
             " before opset 13 (only the last axis is folded)");
    return softmax(need(in, 0, "input"), a.softmax_axis);
  }
  if (op == "CumSum") {
    const std::vector<int64_t> axis = int_list(need(in, 1, "axis"), "axis");
    if (axis.size() != 1) refuse("a CumSum axis of " + dims_text(need(in, 1, "axis").dims));
    return cumsum(need(in, 0, "x"), axis[0], a.exclusive != 0, a.reverse != 0);
  }
  if (op == "Tile") return tile(need(in, 0, "input"), int_list(need(in, 1, "repeats"), "repeats"));
  if (op == "Conv") return conv(need(in, 0, "X"), need(in, 1, "W"), in.size() > 2 ? in[2] : nullptr, a);
  if (op == "Clip") {  // min and max: optional scalars (Swin V2's clamp of its logit scale)
    const TensorConst& x = need(in, 0, "input");
    auto bound = [&](size_t i, double none) {
      if (in.size() <= i || !in[i]) return none;
      if (in[i]->v.size() != 1) refuse("a Clip bound of " + dims_text(in[i]->dims) + "; expected one value");
      return in[i]->v[0];
    };
    const double lo = bound(1, -INFINITY), hi = bound(2, INFINITY);
    TensorConst out = x;
    for (double& v : out.v) v = std::min(std::max(v, lo), hi);
    return out;
  }
  refuse("operator '" + op + "' is not folded");
}

}  // namespace dlt::onnxu
