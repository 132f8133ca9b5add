#include "backend/backend.h"

namespace dlt {

Backend& cpu_backend();            // backend/cpu/cpu_backend.cpp
Backend& cuda_backend(int index);  // backend/cuda or cuda_stub.cpp

Backend& backend_for(Device device) {
  if (device.is_cpu()) return cpu_backend();
  return cuda_backend(device.index);
}

}  // namespace dlt
