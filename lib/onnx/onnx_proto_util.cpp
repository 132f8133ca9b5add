// Protobuf tensor / attribute helpers and the layout permutations for ONNX import and export.
#include "onnx/onnx_proto_util.h"

#include <cstring>

#include "util/error.h"

namespace dlt::onnxu {

std::vector<int64_t> dims_of(const onnx::TensorProto& t) { return {t.dims().begin(), t.dims().end()}; }

namespace {

// The number of values the dims declare. A negative dimension, or a product over 2^40 (no
// tensor that large fits in the 2 GiB protobuf reads), is a corrupt file.
int64_t count_of(const onnx::TensorProto& t, const std::string& what) {
  constexpr int64_t kMax = int64_t(1) << 40;
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > kMax / d))
      throw ModelError(what + ": tensor '" + t.name() + "' has dimension " + std::to_string(d) +
                       (d < 0 ? "" : " making it over 2^40 values") + " (the file is corrupt)");
    n *= d;
  }
  return n;
}

template <typename T>
std::vector<T> raw_values(const onnx::TensorProto& t, const std::string& what) {
  const std::string& raw = t.raw_data();
  const int64_t count = count_of(t, what);
  if (raw.size() != static_cast<size_t>(count) * sizeof(T))
    throw ModelError(what + ": tensor '" + t.name() + "' has " + std::to_string(raw.size()) + " bytes of data for " +
                     std::to_string(count) + " values (the file is corrupt)");
  std::vector<T> v(raw.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), raw.data(), raw.size());
  return v;
}

// Values stored in a repeated field (float_data, int64_data, ...), as many as the dims declare.
template <typename T, typename Field>
std::vector<T> field_values(const onnx::TensorProto& t, const Field& field, const std::string& what) {
  const int64_t count = count_of(t, what);
  if (static_cast<int64_t>(field.size()) != count)
    throw ModelError(what + ": tensor '" + t.name() + "' has " + std::to_string(field.size()) + " values but its " +
                     "dimensions make " + std::to_string(count) + " (the file is corrupt)");
  return std::vector<T>(field.begin(), field.end());
}

void check_local(const onnx::TensorProto& t, const std::string& what) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    throw ModelError(
        what + ": tensor '" + t.name() +
        "' keeps its data in an external file, which dltrain does not "
        "read (save the model with its weights inside, e.g. onnx.save(m, f, save_as_external_data=False))");
}

}  // namespace

std::vector<float> floats_of(const onnx::TensorProto& t, const std::string& what) {
  check_local(t, what);
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    if (t.has_raw_data()) return raw_values<float>(t, what);
    return field_values<float>(t, t.float_data(), what);
  }
  if (t.data_type() == onnx::TensorProto::DOUBLE) {
    std::vector<double> d =
        t.has_raw_data() ? raw_values<double>(t, what) : field_values<double>(t, t.double_data(), what);
    return {d.begin(), d.end()};
  }
  throw ModelError(what + ": tensor '" + t.name() + "' has data type " + std::to_string(t.data_type()) +
                   ", expected float (convert the model to float32)");
}

std::vector<int64_t> ints_of(const onnx::TensorProto& t, const std::string& what) {
  check_local(t, what);
  if (t.data_type() == onnx::TensorProto::INT64) {
    if (t.has_raw_data()) return raw_values<int64_t>(t, what);
    return field_values<int64_t>(t, t.int64_data(), what);
  }
  if (t.data_type() == onnx::TensorProto::INT32) {
    std::vector<int32_t> d =
        t.has_raw_data() ? raw_values<int32_t>(t, what) : field_values<int32_t>(t, t.int32_data(), what);
    return {d.begin(), d.end()};
  }
  throw ModelError(what + ": tensor '" + t.name() + "' has data type " + std::to_string(t.data_type()) +
                   ", expected int64");
}

void set_floats(onnx::TensorProto& t, const std::string& name, const std::vector<int64_t>& dims,
                const std::vector<float>& values) {
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t def) {
  const auto* a = find_attr(n, name);
  return a ? a->i() : def;
}

float attr_float(const onnx::NodeProto& n, const std::string& name, float def) {
  const auto* a = find_attr(n, name);
  return a ? a->f() : def;
}

std::string attr_string(const onnx::NodeProto& n, const std::string& name, const std::string& def) {
  const auto* a = find_attr(n, name);
  return a ? a->s() : def;
}

std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name, std::vector<int64_t> def) {
  const auto* a = find_attr(n, name);
  if (!a) return def;
  return {a->ints().begin(), a->ints().end()};
}

void add_attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void add_attr(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void add_attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

}  // namespace dlt::onnxu
