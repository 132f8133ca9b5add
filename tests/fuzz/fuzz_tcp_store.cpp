// Fuzz target: the TCP rendezvous store's messages (lib/dist/store_protocol.h) as the server
// reads requests and the client reads answers. The first byte picks the side; the rest is the
// stream. A request that parses must encode back to the bytes it came from.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "dist/store_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const char* bytes = reinterpret_cast<const char*>(data) + 1;
  dlt::StoreByteReader reader(bytes, size - 1);
  if (data[0] & 1) {  // the client reading answers to gets
    std::optional<std::string> value;
    while (dlt::read_store_get_reply(std::ref(reader), value)) {
    }
    return 0;
  }
  std::map<std::string, std::string> store;  // the server: requests until the stream ends
  dlt::StoreRequest request;
  for (size_t at = 0; dlt::read_store_request(std::ref(reader), request);) {
    const std::string again = dlt::encode_store_request(request);
    const size_t end = (size - 1) - reader.left();
    if (again != std::string(bytes + at, end - at)) std::abort();
    at = end;
    if (request.op == 'S')
      store[request.key] = request.value;
    else
      dlt::encode_store_get_reply(store.count(request.key) ? std::optional(store[request.key]) : std::nullopt);
  }
  return 0;
}
