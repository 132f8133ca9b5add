// Constant folding of shape arithmetic (onnx_import_fold.h).
#include "onnx/onnx_import_fold.h"

#include <algorithm>

namespace dlt::onnxu {

namespace {

[[noreturn]] void refuse(const std::string& why) { throw FoldError(why); }

const IntConst& need(const std::vector<const IntConst*>& in, size_t i, const std::string& role) {
  if (in.size() <= i || !in[i]) refuse("has no " + role + " input");
  return *in[i];
}

const IntConst& list(const std::vector<const IntConst*>& in, size_t i, const std::string& role) {
  const IntConst& c = need(in, i, role);
  if (c.scalar) refuse(role + " is a scalar, expected a 1-D list");
  return c;
}

int64_t wrap(int64_t i, int64_t n, const std::string& role) {
  if (i < -n || i >= n)
    refuse(role + " " + std::to_string(i) + " is out of range for " + std::to_string(n) + " values");
  return i < 0 ? i + n : i;
}

void cap(size_t n) {
  if (static_cast<int64_t>(n) > kMaxFoldValues)
    refuse("folds to " + std::to_string(n) + " values, more than the " + std::to_string(kMaxFoldValues) +
           " of a shape (the file is corrupt)");
}

int64_t arith(const std::string& op, int64_t a, int64_t b) {
  if (a == kBatchDim || b == kBatchDim)
    refuse("computes with the batch size N, which dltrain does not fix in the model");
  int64_t r = 0;
  bool overflow = false;
  if (op == "Add") overflow = __builtin_add_overflow(a, b, &r);
  if (op == "Sub") overflow = __builtin_sub_overflow(a, b, &r);
  if (op == "Mul") overflow = __builtin_mul_overflow(a, b, &r);
  if (op == "Div" || op == "Mod") {
    if (b == 0) refuse("divides by zero");
    overflow = a == INT64_MIN && b == -1;
    r = overflow ? 0 : op == "Div" ? a / b : a % b;
    if (op == "Mod" && r != 0 && (r < 0) != (b < 0)) r += b;  // fmod 0: the divisor's sign
  }
  if (op == "Equal") r = a == b;
  if (overflow) refuse("overflows int64 (" + std::to_string(a) + " " + op + " " + std::to_string(b) + ")");
  return r;
}

IntConst slice(const std::vector<const IntConst*>& in, const FoldAttrs& a, int opset) {
  const IntConst& data = list(in, 0, "data");
  const int64_t n = static_cast<int64_t>(data.v.size());
  std::vector<int64_t> starts = a.starts, ends = a.ends, axes{0}, steps{1};
  if (opset >= 10) {
    starts = list(in, 1, "starts").v;
    ends = list(in, 2, "ends").v;
    if (in.size() > 3 && in[3]) axes = list(in, 3, "axes").v;
    if (in.size() > 4 && in[4]) steps = list(in, 4, "steps").v;
  } else if (a.has_axes) {
    axes = a.axes;
  }
  if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || steps.size() != 1 ||
      (axes[0] != 0 && axes[0] != -1))
    refuse("only a slice of one axis of a 1-D shape list is folded");
  const int64_t step = steps[0];
  if (step == 0) refuse("has step 0");
  // ONNX: negative indices count from the end; then clamp to [0, n] (step > 0) or [-1, n-1].
  auto from_end = [n](int64_t v) { return v < 0 ? (v < -n ? -n - 1 : v + n) : v; };
  int64_t s = from_end(starts[0]), e = from_end(ends[0]);
  IntConst out;
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, n);
    e = std::clamp<int64_t>(e, 0, n);
    for (int64_t i = s; i < e; i += step) {  // no i + step past e: step may be INT64_MAX
      out.v.push_back(data.v[static_cast<size_t>(i)]);
      if (step >= e - i) break;
    }
  } else {
    s = std::clamp<int64_t>(s, -1, n - 1);
    e = std::clamp<int64_t>(e, -1, n - 1);
    for (int64_t i = s; i > e; i += step) {
      out.v.push_back(data.v[static_cast<size_t>(i)]);
      if (step <= e - i) break;
    }
  }
  return out;
}

}  // namespace

bool is_fold_op(const std::string& op) {
  for (const char* o : {"Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Add", "Sub", "Mul", "Div", "Mod",
                        "Equal", "Where", "Reshape", "ConstantOfShape"})
    if (op == o) return true;
  return false;
}

IntConst fold(const std::string& op, const std::vector<const IntConst*>& in, const FoldAttrs& a, int opset) {
  if (op == "Gather") {
    const IntConst& data = list(in, 0, "data");
    const IntConst& idx = need(in, 1, "indices");
    if (a.axis != 0 && a.axis != -1) refuse("gathers along axis " + std::to_string(a.axis) + " of a 1-D shape list");
    IntConst out;
    out.scalar = idx.scalar;
    const int64_t n = static_cast<int64_t>(data.v.size());
    for (int64_t i : idx.v) out.v.push_back(data.v[static_cast<size_t>(wrap(i, n, "index"))]);
    cap(out.v.size());
    return out;
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    const IntConst& data = need(in, 0, "data");
    std::vector<int64_t> axes = a.axes;
    bool has_axes = a.has_axes;
    if (opset >= 13 && in.size() > 1 && in[1]) axes = list(in, 1, "axes").v, has_axes = true;
    IntConst out = data;
    if (op == "Unsqueeze") {
      if (!data.scalar || axes != std::vector<int64_t>{0}) refuse("only unsqueezing a scalar to a 1-D list is folded");
      out.scalar = false;
    } else {
      if (data.scalar || data.v.size() != 1 ||
          (has_axes && axes != std::vector<int64_t>{0} && axes != std::vector<int64_t>{-1}))
        refuse("only squeezing a 1-value list to a scalar is folded");
      out.scalar = true;
    }
    return out;
  }
  if (op == "Concat") {
    if (a.axis != 0 && a.axis != -1) refuse("concatenates shape lists along axis " + std::to_string(a.axis));
    IntConst out;
    for (size_t i = 0; i < in.size(); ++i) {
      const IntConst& c = list(in, i, "input " + std::to_string(i));
      out.v.insert(out.v.end(), c.v.begin(), c.v.end());
      cap(out.v.size());
    }
    return out;
  }
  if (op == "Slice") return slice(in, a, opset);
  if (op == "Reshape") {  // a scalar or list to a scalar or list of the same values
    const IntConst& data = need(in, 0, "data");
    const IntConst& shape = list(in, 1, "shape");
    if (shape.v.size() > 1 ||
        (shape.v.size() == 1 && shape.v[0] != -1 && shape.v[0] != static_cast<int64_t>(data.v.size())))
      refuse("reshapes a shape list to " + ints_str(shape.v) + "; only to a scalar or a 1-D list is folded");
    if (shape.v.empty() && data.v.size() != 1)
      refuse("reshapes " + std::to_string(data.v.size()) + " values to a scalar");
    return IntConst{shape.v.empty(), data.v};
  }
  if (op == "ConstantOfShape") {
    const IntConst& shape = list(in, 0, "shape");
    if (shape.v.size() > 1)
      refuse("makes a constant of rank " + std::to_string(shape.v.size()) + "; only 1-D is folded");
    const int64_t count = shape.v.empty() ? 1 : shape.v[0];
    if (count < 0 || count > kMaxFoldValues) refuse("makes " + std::to_string(count) + " values");
    return IntConst{shape.v.empty(), std::vector<int64_t>(static_cast<size_t>(count), a.value)};
  }
  if (op == "Where") {
    const IntConst &c = need(in, 0, "condition"), &x = need(in, 1, "X"), &y = need(in, 2, "Y");
    size_t count = std::max({c.v.size(), x.v.size(), y.v.size()});
    for (const IntConst* t : {&c, &x, &y})
      if (t->v.size() != count && t->v.size() != 1) refuse("has operands that do not broadcast");
    IntConst out;
    out.scalar = c.scalar && x.scalar && y.scalar;
    for (size_t i = 0; i < count; ++i) {
      auto at = [i](const IntConst& t) { return t.v[t.v.size() == 1 ? 0 : i]; };
      out.v.push_back(at(c) ? at(x) : at(y));
    }
    return out;
  }
  if (op == "Cast") {
    if (a.to != 7 && a.to != 6)  // INT64, INT32
      refuse("casts a shape to data type " + std::to_string(a.to) + "; only integer casts of shapes are folded");
    return need(in, 0, "input");
  }
  // Add, Sub, Mul, Div with broadcasting of one value.
  const IntConst& x = need(in, 0, "A");
  const IntConst& y = need(in, 1, "B");
  const size_t nx = x.v.size(), ny = y.v.size();
  if (nx == 0 || ny == 0 || (nx != ny && nx != 1 && ny != 1))
    refuse("has operands of " + std::to_string(nx) + " and " + std::to_string(ny) + " values");
  IntConst out;
  out.scalar = x.scalar && y.scalar;
  for (size_t i = 0; i < std::max(nx, ny); ++i) out.v.push_back(arith(op, x.v[nx == 1 ? 0 : i], y.v[ny == 1 ? 0 : i]));
  return out;
}

IntConst shape_slice(const std::vector<int64_t>& dims, int64_t start, int64_t end) {
  const int64_t n = static_cast<int64_t>(dims.size());
  auto at = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? (v < -n ? 0 : v + n) : v, 0, n); };
  IntConst out;
  for (int64_t i = at(start); i < at(end); ++i) out.v.push_back(dims[static_cast<size_t>(i)]);
  return out;
}

std::string ints_str(const std::vector<int64_t>& v) {
  constexpr size_t kShown = 16;  // a hostile list stays one short line
  std::string s = "[";
  for (size_t i = 0; i < v.size() && i < kShown; ++i)
    s += (i ? ", " : "") + (v[i] == kBatchDim ? std::string("N") : std::to_string(v[i]));
  if (v.size() > kShown) s += ", ... (" + std::to_string(v.size()) + " values)";
  return s + "]";
}

}  // namespace dlt::onnxu
