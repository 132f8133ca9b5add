// DLT_CHECK: internal invariants (programming errors), not user input validation.
#pragma once
#include <sstream>
#include "util/error.h"

#define DLT_CHECK(cond, msg)                                                                   \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::ostringstream dlt_check_os_;                                                        \
      dlt_check_os_ << __FILE__ << ":" << __LINE__ << ": check failed: " #cond << ": " << msg; \
      throw ::dlt::Error(dlt_check_os_.str());                                                 \
    }                                                                                          \
  } while (0)
