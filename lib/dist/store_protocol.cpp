// The rendezvous store's messages as bytes (store_protocol.h); tcp_store.cpp moves them over
// sockets. Lengths are checked against their bounds before any buffer is sized.
#include "dist/store_protocol.h"

#include <cstring>

namespace dlt {

namespace {

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

// A u32 length, then that many bytes; false past `bound` (nothing is allocated then).
bool read_sized(const StoreReadFn& read, uint32_t bound, std::string& out) {
  char len[4];
  if (!read(len, 4)) return false;
  const uint32_t n = get_u32(len);
  if (n > bound) return false;
  out.assign(n, '\0');
  return read(out.data(), n);
}

}  // namespace

std::string encode_store_request(const StoreRequest& request) {
  std::string out(1, request.op);
  put_u32(out, static_cast<uint32_t>(request.key.size()));
  out += request.key;
  if (request.op == 'S') {
    put_u32(out, static_cast<uint32_t>(request.value.size()));
    out += request.value;
  }
  return out;
}

std::string encode_store_get_reply(const std::optional<std::string>& value) {
  if (!value) return "N";
  std::string out = "Y";
  put_u32(out, static_cast<uint32_t>(value->size()));
  return out + *value;
}

bool read_store_request(const StoreReadFn& read, StoreRequest& out) {
  if (!read(&out.op, 1) || (out.op != 'S' && out.op != 'G')) return false;
  if (!read_sized(read, kStoreMaxKey, out.key)) return false;
  out.value.clear();
  return out.op == 'G' || read_sized(read, kStoreMaxValue, out.value);
}

bool read_store_get_reply(const StoreReadFn& read, std::optional<std::string>& out) {
  char found = 0;
  if (!read(&found, 1)) return false;
  if (found == 'N') {
    out.reset();
    return true;
  }
  std::string value;
  if (found != 'Y' || !read_sized(read, kStoreMaxValue, value)) return false;
  out = std::move(value);
  return true;
}

bool StoreByteReader::operator()(char* p, size_t n) {
  if (n > left_) return false;
  if (n > 0) std::memcpy(p, p_, n);
  p_ += n, left_ -= n;
  return true;
}

}  // namespace dlt
