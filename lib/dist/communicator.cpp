// Communicator factory and options shared by every implementation.
#include "dist/communicator.h"

#include <algorithm>
#include <string>

#include "build_config.h"
#include "util/error.h"
#if DLT_HAVE_GLOO
#include "dist/gloo_communicator.h"
#endif

namespace dlt {

std::chrono::milliseconds comm_timeout(double s) {
  // Deadlines are steady_clock::now() + timeout in int64 nanoseconds: a huge value (or inf,
  // meant as "never") would overflow into a deadline in the past, so every wait would time out.
  return std::chrono::milliseconds(static_cast<int64_t>(std::min(s, kMaxCommTimeoutSeconds) * 1000));
}

std::unique_ptr<Communicator> make_cpu_communicator(const CommOptions& o) {
  if (o.size <= 1) return std::make_unique<LocalCommunicator>();
#if DLT_HAVE_GLOO
  return make_gloo_communicator(o);
#else
  throw CommError("rank " + std::to_string(o.rank) + ": this dltrain was built without Gloo, so CPU workers " +
                  "cannot communicate (install libgloo-dev and rebuild, or train in one process)");
#endif
}

}  // namespace dlt
