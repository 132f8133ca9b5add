// Typed exceptions thrown by the library. Only apps/ maps them to exit codes:
// ConfigError/UsageError -> 2, DeviceError/CommError -> 3, everything else -> 1.
// Messages name the object, the fact and the fix.
#pragma once
#include <stdexcept>
#include <string>

namespace dlt {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class ConfigError : public Error {  // bad YAML, option, layer spec, --set override
 public:
  using Error::Error;
};
class UsageError : public Error {  // bad command-line use
 public:
  using Error::Error;
};
class ShapeError : public ConfigError {  // shapes that do not fit together
 public:
  using ConfigError::ConfigError;
};
class DataError : public Error {  // unreadable images, empty folders, corrupt files
 public:
  using Error::Error;
};
class ModelError : public Error {  // corrupt, truncated or foreign model files
 public:
  using Error::Error;
};
class DeviceError : public Error {  // CUDA, cuDNN, out of memory, no device
 public:
  using Error::Error;
};
class CommError : public Error {  // collectives, rendezvous, lost workers
 public:
  using Error::Error;
};
class TrainingError : public Error {  // NaN loss and the like
 public:
  using Error::Error;
};

}  // namespace dlt
