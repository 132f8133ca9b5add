// Protobuf tensor / attribute helpers and the layout permutations for ONNX import and export.
#include "onnx/onnx_proto_util.h"

#include <cstring>

#include "util/error.h"

namespace dlt::onnxu {

std::vector<int64_t> dims_of(const onnx::TensorProto& t) { return {t.dims().begin(), t.dims().end()}; }

// The data types whose raw_data length is fixed; 0 for the others (STRING, UNDEFINED, types
// newer than this list), whose data is not checked.
size_t element_bytes(int type) {
  switch (type) {
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::BOOL:
      return 1;
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      return 2;
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32:
      return 4;
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::COMPLEX64:
      return 8;
    case onnx::TensorProto::COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

namespace {

// How many values the typed field of this data type holds (-1: a type not checked).
int64_t typed_values(const onnx::TensorProto& t) {
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      return t.float_data_size();
    case onnx::TensorProto::COMPLEX64:
      return t.float_data_size() / 2;
    case onnx::TensorProto::DOUBLE:
      return t.double_data_size();
    case onnx::TensorProto::COMPLEX128:
      return t.double_data_size() / 2;
    case onnx::TensorProto::INT64:
      return t.int64_data_size();
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      return t.uint64_data_size();
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      return t.int32_data_size();
    default:
      return -1;
  }
}

template <typename T>
std::vector<T> raw_values(const onnx::TensorProto& t) {
  const std::string& raw = t.raw_data();
  std::vector<T> v(raw.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), raw.data(), v.size() * sizeof(T));
  return v;
}

}  // namespace

std::string dims_str(const onnx::TensorProto& t) {
  std::string s;
  for (int64_t d : t.dims()) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s.empty() ? "scalar" : s;
}

int64_t checked_values(const onnx::TensorProto& t, const std::string& what) {
  const std::string name = what + ": tensor '" + t.name() + "'";
  if (t.dims_size() > kMaxTensorRank)
    throw ModelError(name + " has " + std::to_string(t.dims_size()) + " dimensions, more than " +
                     std::to_string(kMaxTensorRank) + " (the file is corrupt)");
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0)
      throw ModelError(name + " has dimension " + std::to_string(d) + " in " + dims_str(t) + " (the file is corrupt)");
    if (d > kMaxTensorValues || (d != 0 && n > kMaxTensorValues / d))  // each dim too: 0 x 2^62 is refused
      throw ModelError(name + " claims " + dims_str(t) + " values, more than the " + std::to_string(kMaxTensorValues) +
                       " dltrain reads (the file is corrupt)");
    n *= d;
  }
  return n;
}

void check_tensor(const onnx::TensorProto& t, const std::string& what) {
  const std::string name = what + ": tensor '" + t.name() + "'";
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    for (const auto& e : t.external_data())
      if (e.key() == "location") location = e.value();
    // Never opened here: graph initializers are read by onnx_import_external.h, which checks where
    // the location points; other tensors (a Constant node's value) keep data inside.
    throw ModelError(name + " keeps its data in an external file ('" + location +
                     "'), which dltrain reads only for graph initializers (save the model with its weights "
                     "inside, e.g. onnx.save(m, f, save_as_external_data=False))");
  }
  const int64_t n = checked_values(t, what);
  if (t.has_raw_data()) {
    const size_t bytes = element_bytes(t.data_type());
    if (bytes != 0 && t.raw_data().size() != static_cast<uint64_t>(n) * bytes)
      throw ModelError(name + " has " + std::to_string(t.raw_data().size()) + " bytes of data for " + dims_str(t) +
                       " = " + std::to_string(n) + " values of " + std::to_string(bytes) +
                       " bytes (the file is corrupt)");
    return;
  }
  const int64_t have = typed_values(t);
  if (have >= 0 && have != n)
    throw ModelError(name + " has " + std::to_string(have) + " values for " + dims_str(t) + " = " + std::to_string(n) +
                     " (the file is corrupt)");
}

std::vector<float> floats_of(const onnx::TensorProto& t, const std::string& what) {
  check_tensor(t, what);
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    if (t.has_raw_data()) return raw_values<float>(t);
    return {t.float_data().begin(), t.float_data().end()};
  }
  if (t.data_type() == onnx::TensorProto::DOUBLE) {
    std::vector<double> d =
        t.has_raw_data() ? raw_values<double>(t) : std::vector<double>(t.double_data().begin(), t.double_data().end());
    return {d.begin(), d.end()};
  }
  throw ModelError(what + ": tensor '" + t.name() + "' has data type " + std::to_string(t.data_type()) +
                   ", expected float (convert the model to float32)");
}

std::vector<int64_t> ints_of(const onnx::TensorProto& t, const std::string& what) {
  check_tensor(t, what);
  if (t.data_type() == onnx::TensorProto::INT64) {
    if (t.has_raw_data()) return raw_values<int64_t>(t);
    return {t.int64_data().begin(), t.int64_data().end()};
  }
  if (t.data_type() == onnx::TensorProto::INT32) {
    std::vector<int32_t> d =
        t.has_raw_data() ? raw_values<int32_t>(t) : std::vector<int32_t>(t.int32_data().begin(), t.int32_data().end());
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

void set_ints(onnx::TensorProto& t, const std::string& name, const std::vector<int64_t>& dims,
              const std::vector<int64_t>& values) {
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t)));
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

void add_attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

}  // namespace dlt::onnxu
