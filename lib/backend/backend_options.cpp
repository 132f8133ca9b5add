// The process-wide backend options (backend_options.h).
#include "backend/backend_options.h"

namespace dlt {

namespace {
BackendOptions& current() {
  static BackendOptions options;
  return options;
}
}  // namespace

void set_backend_options(const BackendOptions& options) { current() = options; }

const BackendOptions& backend_options() { return current(); }

}  // namespace dlt
