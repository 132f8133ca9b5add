// The op registry's table (op_registry.h): filled by the registrations at program start and
// when the CUDA plugin loads, read when ops are made and light kernels first looked up.
#include "backend/op_registry.h"

#include <cxxabi.h>
#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "util/error.h"

namespace dlt::op_registry {

namespace {

struct Table {
  std::mutex mu;
  std::vector<Entry> entries;  // by op, device, then priority (highest first)
};

Table& table() {
  static Table t;
  return t;
}

bool before(const Entry& a, const Entry& b) {
  if (a.op != b.op) return a.op < b.op;
  if (a.device != b.device) return a.device < b.device;
  return a.priority > b.priority;
}

}  // namespace

std::string type_name(const std::type_info& t) {
  int status = 0;
  char* name = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
  std::string r = status == 0 && name ? name : t.name();
  std::free(name);
  return r;
}

void add(Entry e) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  for (const Entry& o : t.entries)
    if (o.op == e.op && o.type != e.type)
      throw std::logic_error("op registry: op '" + e.op + "' registered as " + e.type + " and as " + o.type);
  t.entries.insert(std::upper_bound(t.entries.begin(), t.entries.end(), e, before), std::move(e));
}

std::vector<Entry> find(std::string_view op, DeviceType device) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  std::vector<Entry> r;
  for (const Entry& e : t.entries)
    if (e.op == op && e.device == device) r.push_back(e);
  return r;
}

std::vector<Entry> all() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.entries;
}

void no_kernel(std::string_view op, DeviceType device) {
  const std::string dev = device == DeviceType::kCpu ? "cpu" : "cuda";
  std::string others;
  for (const Entry& e : all())
    if (e.op == op && e.device != device) others = e.device == DeviceType::kCpu ? "cpu" : "cuda";
  throw DeviceError("no kernel for op '" + std::string(op) + "' on " + dev +
                    (others.empty() ? std::string(" (no device has one with these attributes)")
                                    : " with these attributes (" + others + " has one)"));
}

}  // namespace dlt::op_registry
