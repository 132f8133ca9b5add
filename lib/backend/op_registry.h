// The op registry: ops as data, kernels registered by the backends that have them.
//
// An op kind is a descriptor type that names its interface (ops.h) and its registry name:
//   struct ConvDesc { using Op = ConvOp; static constexpr const char* kOp = "convolution"; ... };
// Backend::make(desc) asks the kernels registered for that name on the backend's device type,
// best first: each kernel may decline a descriptor (its `accepts` says no, or its factory
// returns null) and the next is asked. Backend::supports(desc) says whether one accepts it, which
// is how the network asks for a fused op (a ConvDesc with a depthwise post-op, a BnReluMaxPoolDesc)
// without knowing which backend it runs on.
// A light kernel kind (element-wise work, losses, optimizer updates) is a function signature:
//   struct FillKernel { using Fn = void(Backend&, Tensor&, float); static constexpr const char* kOp = "fill"; };
// backend.cpp checks the arguments once and calls the device's kernel (kernel_kinds.h).
//
// Each backend registers its kernels in the file that implements them, at load time:
//   DLT_REGISTER_OP(ConvDesc, DeviceType::kCpu, "onednn", 0, make_conv, nullptr);
//   DLT_REGISTER_KERNEL(FillKernel, DeviceType::kCpu, fill);
// The core's registrations run at program start (the core is linked whole: CMake's
// dlt_link_core), the CUDA plugin's when the core loads it. Ops are made when a network is set
// up; light kernels are looked up once per device type and kept (backend.cpp). The tests
// iterate over what is registered (tests/backend/test_op_agreement.cpp): a kernel without its
// agreement and gradient rows fails them.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "tensor/device.h"

namespace dlt {

class Backend;

namespace op_registry {

// One registered kernel. The function pointers are stored type-erased and cast back by the
// typed callers below (one descriptor or signature type per op name, checked at registration).
using AnyFn = void (*)();
struct Entry {
  std::string op;    // the op kind's kOp
  std::string type;  // its descriptor or signature type (typeid name), for the check
  DeviceType device = DeviceType::kCpu;
  std::string impl;         // which implementation ("onednn", "cudnn", "own"), for listings
  int priority = 0;         // higher is asked first
  AnyFn accepts = nullptr;  // bool(const Backend&, const Desc&); null: every descriptor
  AnyFn fn = nullptr;       // heavy: std::unique_ptr<Desc::Op>(Backend&, const Desc&); light: K::Fn
  bool heavy = false;       // a heavy op (DLT_REGISTER_OP), not a light kernel
};

// Adds a kernel; throws std::logic_error when op is registered with another type.
void add(Entry e);
// The kernels of op on device, highest priority first (a copy: the plugin may add more later).
std::vector<Entry> find(std::string_view op, DeviceType device);
// Every registered kernel, by op name, device and priority.
std::vector<Entry> all();

// The registration helpers behind the macros.
struct Registration {
  explicit Registration(Entry e) { add(std::move(e)); }
};
std::string type_name(const std::type_info& t);

template <class Desc>
Entry op_entry(DeviceType device, const char* impl, int priority,
               std::unique_ptr<typename Desc::Op> (*make)(Backend&, const Desc&),
               bool (*accepts)(const Backend&, const Desc&)) {
  return Entry{Desc::kOp,
               type_name(typeid(Desc)),
               device,
               impl,
               priority,
               reinterpret_cast<AnyFn>(accepts),
               reinterpret_cast<AnyFn>(make),
               true};
}

template <class K>
Entry kernel_entry(DeviceType device, typename K::Fn* fn) {
  return Entry{K::kOp, type_name(typeid(K)), device, "", 0, nullptr, reinterpret_cast<AnyFn>(fn), false};
}

// "no kernel for <op> on <device>" as a DeviceError (the op exists on another device, or needs
// what this descriptor asks for).
[[noreturn]] void no_kernel(std::string_view op, DeviceType device);

}  // namespace op_registry

}  // namespace dlt

#define DLT_REGISTRY_CONCAT_(a, b) a##b
#define DLT_REGISTRY_CONCAT(a, b) DLT_REGISTRY_CONCAT_(a, b)
// A heavy op's kernel: make(Backend&, const Desc&) -> std::unique_ptr<Desc::Op> (null: declined),
// accepts(const Backend&, const Desc&) -> bool or nullptr.
#define DLT_REGISTER_OP(Desc, device, impl, priority, make, accepts)                                   \
  static const ::dlt::op_registry::Registration DLT_REGISTRY_CONCAT(dlt_registered_op_, __COUNTER__) { \
    ::dlt::op_registry::op_entry<Desc>(device, impl, priority, make, accepts)                          \
  }
// A light kernel: fn of type K::Fn.
#define DLT_REGISTER_KERNEL(K, device, fn)                                                                 \
  static const ::dlt::op_registry::Registration DLT_REGISTRY_CONCAT(dlt_registered_kernel_, __COUNTER__) { \
    ::dlt::op_registry::kernel_entry<K>(device, fn)                                                        \
  }
