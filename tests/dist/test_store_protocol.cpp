// The rendezvous store's messages as bytes (lib/dist/store_protocol.h): requests and answers
// round-trip; truncated, unknown and oversized messages are refused, a claimed length over its
// bound before anything is allocated (a 4 GiB value from a stranger on the port).
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "dist/store_protocol.h"

using namespace dlt;

namespace {

bool parse_request(const std::string& bytes, StoreRequest& out) {
  StoreByteReader reader(bytes.data(), bytes.size());
  return read_store_request(std::ref(reader), out);
}

bool parse_reply(const std::string& bytes, std::optional<std::string>& out) {
  StoreByteReader reader(bytes.data(), bytes.size());
  return read_store_get_reply(std::ref(reader), out);
}

}  // namespace

TEST_CASE("store requests and answers round-trip through their bytes", "[dist][store]") {
  StoreRequest r;
  REQUIRE(parse_request(encode_store_request({'S', "rank0/addr", "10.0.0.1:29500"}), r));
  CHECK(r.op == 'S');
  CHECK(r.key == "rank0/addr");
  CHECK(r.value == "10.0.0.1:29500");
  REQUIRE(parse_request(encode_store_request({'G', "nccl_id", ""}), r));
  CHECK(r.op == 'G');
  CHECK(r.key == "nccl_id");
  CHECK(r.value.empty());
  std::optional<std::string> v;
  REQUIRE(parse_reply(encode_store_get_reply(std::string("abc")), v));
  CHECK(v == std::optional<std::string>("abc"));
  REQUIRE(parse_reply(encode_store_get_reply(std::nullopt), v));
  CHECK(!v);
}

TEST_CASE("store messages that are truncated, unknown or oversized are refused", "[dist][store]") {
  StoreRequest r;
  const std::string set = encode_store_request({'S', "key", "value"});
  for (size_t n = 0; n < set.size(); ++n) CHECK_FALSE(parse_request(set.substr(0, n), r));
  CHECK_FALSE(parse_request("X" + set.substr(1), r));
  // Lengths over the bounds (a key over 1 KiB, a value over 16 MiB, here 4 GiB - 1) are refused
  // from the length field alone: no bytes follow, and nothing of that size is allocated.
  CHECK_FALSE(parse_request(std::string("G\x01\x04\x00\x00", 5), r));
  CHECK(parse_request(encode_store_request({'G', std::string(kStoreMaxKey, 'k'), ""}), r));
  CHECK_FALSE(parse_request(std::string("S\x01\x00\x00\x00k\xff\xff\xff\xff", 10), r));
  std::optional<std::string> v;
  CHECK_FALSE(parse_reply(std::string("Y\xff\xff\xff\xff", 5), v));
  CHECK_FALSE(parse_reply("Q", v));
  CHECK_FALSE(parse_reply("", v));
  CHECK_FALSE(parse_reply(std::string("Y\x05\x00\x00\x00"
                                      "abc",
                                      8),
                          v));
}
