// The TCP rendezvous store's wire format (tcp_store.h), apart from the sockets so that tests
// and the fuzzer (tests/fuzz/fuzz_tcp_store.cpp) feed it bytes. All integers little-endian u32:
// the client opens with "DLT1" and the server answers "DLT1"; then requests 'S' klen key vlen
// value (answer 'K') and 'G' klen key (answer 'Y' vlen value, or 'N').
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace dlt {

inline constexpr char kStoreMagic[4] = {'D', 'L', 'T', '1'};
// Bounds checked before anything is allocated: a key over 1 KiB or a value over 16 MiB is
// malformed (the rendezvous stores short host names and ids).
inline constexpr uint32_t kStoreMaxKey = 1024, kStoreMaxValue = 16u << 20;

// Reads exactly n bytes into p; false when the stream ends or fails first.
using StoreReadFn = std::function<bool(char* p, size_t n)>;

struct StoreRequest {
  char op = 0;  // 'S' set or 'G' get
  std::string key, value;
};

// The bytes of a request and of the answer to a get.
std::string encode_store_request(const StoreRequest& request);
std::string encode_store_get_reply(const std::optional<std::string>& value);

// One request from the stream. False when the stream ends or the request is malformed (an
// unknown operation, a key or value over its bound); the server then closes the connection.
bool read_store_request(const StoreReadFn& read, StoreRequest& out);

// The answer to a get: nothing for 'N', the value for 'Y'. False when the stream ends or the
// answer is malformed (another first byte, a value over kStoreMaxValue).
bool read_store_get_reply(const StoreReadFn& read, std::optional<std::string>& out);

// A StoreReadFn over bytes in memory, consuming them from the front.
class StoreByteReader {
 public:
  StoreByteReader(const char* data, size_t size) : p_(data), left_(size) {}
  bool operator()(char* p, size_t n);
  size_t left() const { return left_; }

 private:
  const char* p_;
  size_t left_;
};

}  // namespace dlt
