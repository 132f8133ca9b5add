// Fuzz target: model.bin decoding (lib/net/model_file.cpp), the bytes load_model reads. The
// harness rewrites the payload length and both CRC-32s of inputs of 32 bytes or more (unless
// byte 12's top bit is set) so that mutations reach the section parser instead of stopping at
// the checksums. A dlt::Error is a clean refusal. A model that decodes must encode and decode
// again; an exception from that second decode escapes and is reported.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "net/model_file.h"
#include "util/error.h"

namespace {

void put_le(std::vector<uint8_t>& b, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  if (size >= 32 && !(bytes[12] & 0x80)) {
    put_le(bytes, 16, size - 32, 8);
    put_le(bytes, 28, dlt::crc32(bytes.data() + 32, size - 32), 4);
    put_le(bytes, 24, dlt::crc32(bytes.data(), 24), 4);
  }
  dlt::ModelData model;
  try {
    model = dlt::decode_model(bytes, "fuzz.bin");
  } catch (const dlt::Error&) {
    return 0;
  }
  dlt::decode_model(dlt::encode_model(model), "fuzz.bin re-encoded");
  return 0;
}
