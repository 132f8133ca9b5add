// A small key-value store over TCP, for ranks that share no directory: rank 0 serves it on a
// port (torchrun's MASTER_ADDR:MASTER_PORT, or DLT_RENDEZVOUS=tcp://HOST:PORT), the other ranks
// reach it as clients. Keys are read by polling (a later set replaces the value: PeerWatch's
// heartbeats); every call has a deadline, so a rank 0 that never comes or dies is a CommError
// naming the address, never a hang.
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace dlt {

struct TcpAddress {
  std::string host;
  int port = 0;
  std::string str() const;  // "host:port" ("[v6]:port" for an IPv6 literal)
};

// "HOST:PORT" or "[IPV6]:PORT" (port 1..65535). Throws ConfigError naming `what` (the variable
// it came from) and the expected form.
TcpAddress parse_tcp_address(const std::string& text, const std::string& what);

class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  // The value, or nothing when no rank has set key yet.
  virtual std::optional<std::string> try_get(const std::string& key) = 0;
  // Polls until key is set and returns its value. Throws CommError "<who>: timed out after S s
  // waiting for '<key>' from <where()> ..." when it is not set within timeout.
  std::string wait_get(const std::string& key, std::chrono::milliseconds timeout, const std::string& who);
  // Where the store is, for messages: "the rendezvous server at host:port".
  virtual std::string where() const = 0;
};

// Rank 0's side: serves the store on every interface at `port` (0: a free port, see port())
// from background threads until destroyed; set / try_get act on it directly. Throws CommError
// naming who and the port when it cannot listen (e.g. the port is taken).
std::unique_ptr<KeyValueStore> serve_tcp_store(int port, const std::string& who, int* bound_port = nullptr);

// Another rank's side: connects to address, retrying while nobody listens yet (rank 0 may start
// later) until the timeout, which also bounds every later call. Throws CommError naming who and
// the address when nobody answers in time, or when what answers is not a dltrain store.
std::unique_ptr<KeyValueStore> connect_tcp_store(const TcpAddress& address, std::chrono::milliseconds timeout,
                                                 const std::string& who);

}  // namespace dlt
