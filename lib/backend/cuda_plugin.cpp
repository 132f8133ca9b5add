// Loading the CUDA plugin (cuda_plugin.h) and the core's GPU entry points of backend.h, which
// forward to its table or, without a usable plugin, report no GPU and throw DeviceError when a
// GPU is used anyway. A loaded plugin's allocator and copies are registered with the tensor
// layer (tensor/device.h's register_device_memory). A CPU-only build never looks for the plugin.
#include "backend/cuda_plugin.h"

#include <dlfcn.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "backend/backend.h"
#include "build_config.h"
#include "util/error.h"

namespace dlt {

namespace {

namespace fs = std::filesystem;

struct Loaded {
  const CudaPluginApi* api = nullptr;
  std::string error;  // why api is null
};

// The folder of this executable (/proc/self/exe), "" when unknown.
fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// Where the plugin may be, in search order.
std::vector<fs::path> plugin_candidates() {
  const fs::path dir = executable_dir();
  if (dir.empty()) return {};
  return {dir / kCudaPluginFile, (dir / ".." / "lib" / kCudaPluginFile).lexically_normal()};
}

// dlerror() as one line.
std::string dl_error() {
  const char* e = dlerror();
  std::string s = e ? e : "unknown dlopen error";
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

Loaded load_plugin() {
  Loaded l;
  if (!DLT_HAVE_CUDA) {
    l.error = "this build has no CUDA backend (configure with -DDLTRAIN_CUDA=ON)";
    return l;
  }
  void* handle = dlopen(kCudaPluginFile, RTLD_NOW | RTLD_NOLOAD);  // linked into a test binary
  std::string path = kCudaPluginFile;
  if (!handle) {
    const std::vector<fs::path> candidates = plugin_candidates();
    std::error_code ec;
    for (const fs::path& c : candidates) {
      if (!fs::exists(c, ec)) continue;
      path = c.string();
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        l.error = "cannot load the CUDA backend: " + dl_error() +
                  " (install the CUDA runtime, cuDNN, cuBLAS and NCCL, or put them on LD_LIBRARY_PATH)";
        return l;
      }
      break;
    }
    if (!handle) {
      l.error = std::string("the CUDA backend ") + kCudaPluginFile + " is not installed (looked in " +
                (candidates.empty() ? std::string("the executable's folder, which is unknown")
                                    : candidates[0].parent_path().string() + " and " +
                                          candidates[1].parent_path().string()) +
                "; it comes with a build of dltrain with CUDA)";
      return l;
    }
  }
  using Entry = const CudaPluginApi* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kCudaPluginEntry));
  if (!entry) {
    l.error = "cannot load the CUDA backend: " + path + " has no " + kCudaPluginEntry + " (" + dl_error() + ")";
    return l;
  }
  const CudaPluginApi* api = entry();
  if (!api || api->abi != kCudaPluginAbi || api->api_size != sizeof(CudaPluginApi) ||
      api->backend_options_size != sizeof(BackendOptions) || std::strcmp(api->version, DLT_VERSION) != 0) {
    l.error = "cannot load the CUDA backend: " + path + " is from another dltrain build (" +
              (api ? std::string("version ") + api->version + ", ABI " + std::to_string(api->abi) : "no table") +
              "; this is dltrain " + DLT_VERSION + ", ABI " + std::to_string(kCudaPluginAbi) + ")";
    return l;
  }
  l.api = api;
  register_device_memory(DeviceType::kCuda, DeviceMemory{api->allocator, api->copy_bytes});
  return l;  // the handle stays open for the life of the process
}

const Loaded& loaded() {
  static const Loaded l = load_plugin();
  return l;
}

[[noreturn]] void no_plugin() {
  if (!DLT_HAVE_CUDA)
    throw DeviceError(
        "this dltrain was built without CUDA: rebuild on a machine with the CUDA toolkit and "
        "cuDNN (cmake -DDLTRAIN_CUDA=ON), or use ExecutionEnvironment: cpu");
  throw DeviceError(loaded().error + "; or use ExecutionEnvironment: cpu");
}

}  // namespace

const CudaPluginApi* cuda_plugin() { return loaded().api; }
const std::string& cuda_plugin_error() { return loaded().error; }

const CudaPluginApi& cuda_plugin_or_throw() {
  if (!cuda_plugin()) no_plugin();
  return *cuda_plugin();
}

std::string cuda_plugin_summary() {
  if (!DLT_HAVE_CUDA) return "CUDA backend: none (built without CUDA)";
  std::error_code ec;
  for (const fs::path& c : plugin_candidates())
    if (fs::exists(c, ec)) return "CUDA backend: " + c.string() + " (loaded when a GPU is asked for)";
  return "CUDA backend: " + std::string(kCudaPluginFile) + " not found next to the executable or in ../lib";
}

// backend.h.
int cuda_device_count() { return cuda_plugin() ? cuda_plugin()->device_count() : 0; }
std::string cuda_unavailable_reason() {
  return cuda_plugin() ? cuda_plugin()->unavailable_reason() : cuda_plugin_error();
}
std::string cuda_library_versions() { return cuda_plugin() ? cuda_plugin()->library_versions() : ""; }
Backend& cuda_backend(int index, const BackendOptions& options) {
  return cuda_plugin_or_throw().backend(index, options);
}

}  // namespace dlt
