// current_failure(): the exception -> exit code map (exit_codes.h).
#include "exit_codes.h"

#include <exception>
#include <new>

#include "util/error.h"
#include "util/one_line.h"

namespace dlt::app {

namespace {

Failure classify_current() {
  try {
    throw;
  } catch (const ConfigError& e) {
    return {2, "error", e.what()};
  } catch (const UsageError& e) {
    return {2, "error", e.what()};
  } catch (const DeviceError& e) {
    return {3, "device error", e.what()};
  } catch (const CommError& e) {
    return {3, "communication error", e.what()};
  } catch (const std::bad_alloc&) {
    return {1, "error", "out of memory (try a smaller MiniBatchSize)"};
  } catch (const std::exception& e) {
    return {1, "error", e.what()};
  } catch (...) {
    return {1, "error", "unknown exception"};
  }
}

}  // namespace

// One line whatever the message quotes (a model file's names may hold line breaks or
// terminal escapes).
Failure current_failure() {
  Failure f = classify_current();
  f.message = one_line(f.message);
  return f;
}

}  // namespace dlt::app
