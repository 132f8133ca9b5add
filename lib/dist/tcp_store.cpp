// TCP key-value store for the rendezvous (tcp_store.h). The wire format is store_protocol.h's;
// this file moves it over sockets. One thread per connection on the server; anything malformed
// closes that connection.
#include "dist/tcp_store.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "dist/store_protocol.h"
#include "util/error.h"
#include "util/numbers.h"

namespace dlt {

namespace {

using Clock = std::chrono::steady_clock;

std::string seconds(std::chrono::milliseconds t) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", static_cast<double>(t.count()) / 1000.0);
  return buf;
}

// Blocking full read/write on the server side; false on EOF or error.
bool read_all(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r, n -= static_cast<size_t>(r);
  }
  return true;
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r, n -= static_cast<size_t>(r);
  }
  return true;
}

class StoreServer final : public KeyValueStore {
 public:
  StoreServer(int port, const std::string& who) {
    listen_fd_ = open_listener(port, who);
    sockaddr_storage sa{};
    socklen_t len = sizeof(sa);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&sa)->sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~StoreServer() override {
    stop_ = true;
    acceptor_.join();
    std::vector<std::thread> handlers;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int fd : conns_) ::shutdown(fd, SHUT_RDWR);  // wakes the handlers' recv
      handlers.swap(handlers_);
    }
    for (std::thread& t : handlers) t.join();
    ::close(listen_fd_);
  }

  int port() const { return port_; }

  void set(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    data_[key] = value;
  }

  std::optional<std::string> try_get(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = data_.find(key);
    if (it == data_.end()) return std::nullopt;
    return it->second;
  }

  std::string where() const override { return "this rank's rendezvous server on port " + std::to_string(port_); }

 private:
  static int open_listener(int port, const std::string& who) {
    // IPv6 with IPv4-mapped addresses when the host has IPv6, else IPv4: every interface.
    for (int family : {AF_INET6, AF_INET}) {
      int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) continue;
      int one = 1, zero = 0;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      sockaddr_storage sa{};
      socklen_t len;
      if (family == AF_INET6) {
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
        auto* a = reinterpret_cast<sockaddr_in6*>(&sa);
        a->sin6_family = AF_INET6, a->sin6_addr = in6addr_any, a->sin6_port = htons(static_cast<uint16_t>(port));
        len = sizeof(sockaddr_in6);
      } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&sa);
        a->sin_family = AF_INET, a->sin_addr.s_addr = htonl(INADDR_ANY),
        a->sin_port = htons(static_cast<uint16_t>(port));
        len = sizeof(sockaddr_in);
      }
      if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), len) == 0 && ::listen(fd, 512) == 0) return fd;
      const int err = errno;
      ::close(fd);
      if (family == AF_INET6 && err != EADDRINUSE && err != EACCES) continue;  // no IPv6 here: try IPv4
      throw CommError(who + ": cannot serve the rendezvous on port " + std::to_string(port) + ": " +
                      std::strerror(err) +
                      (err == EADDRINUSE ? " (another program holds it, e.g. torchrun's own store; set "
                                           "DLT_RENDEZVOUS=tcp://HOST:PORT with a port free on rank 0's host)"
                                         : " (set DLT_RENDEZVOUS=tcp://HOST:PORT with a port above 1023)"));
    }
    throw CommError(who + ": cannot create a TCP socket for the rendezvous: " + std::strerror(errno));
  }

  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      std::lock_guard<std::mutex> lock(mu_);
      conns_.push_back(fd);
      handlers_.emplace_back([this, fd] { serve(fd); });
    }
  }

  void serve(int fd) {
    char hello[4];
    if (read_all(fd, hello, 4) && std::memcmp(hello, kStoreMagic, 4) == 0 && write_all(fd, kStoreMagic, 4)) {
      while (serve_one(fd)) {
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    conns_.erase(std::find(conns_.begin(), conns_.end(), fd));
    ::close(fd);
  }

  // One request; false when the connection ends or misbehaves.
  bool serve_one(int fd) {
    StoreRequest request;
    if (!read_store_request([fd](char* p, size_t n) { return read_all(fd, p, n); }, request)) return false;
    if (request.op == 'S') {
      set(request.key, request.value);
      return write_all(fd, "K", 1);
    }
    const std::string reply = encode_store_get_reply(try_get(request.key));
    return write_all(fd, reply.data(), reply.size());
  }

  int listen_fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::map<std::string, std::string> data_;
  std::vector<int> conns_;
  std::vector<std::thread> handlers_;
};

class StoreClient final : public KeyValueStore {
 public:
  StoreClient(const TcpAddress& a, std::chrono::milliseconds timeout, const std::string& who)
      : address_(a), timeout_(timeout), who_(who) {
    const auto deadline = Clock::now() + timeout;
    auto pause = std::chrono::milliseconds(10);
    std::string last = "nobody listened";
    for (;;) {
      fd_ = try_connect(deadline, last);
      if (fd_ >= 0) break;
      if (Clock::now() + pause > deadline)
        throw CommError(who_ + ": no rendezvous server at " + address_.str() + " within " + seconds(timeout) + " s (" +
                        last + "; did rank 0 start, and is its address right? training.CommunicationTimeout)");
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(500));
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char hello[4];
    if (!send_all(kStoreMagic, 4, deadline) || !recv_all(hello, 4, deadline) ||
        std::memcmp(hello, kStoreMagic, 4) != 0) {
      ::close(fd_);
      throw CommError(who_ + ": " + address_.str() +
                      " answered, but not as a dltrain rendezvous server (is another program on that port, "
                      "e.g. torchrun's own store? set DLT_RENDEZVOUS=tcp://HOST:PORT with a free port)");
    }
  }

  ~StoreClient() override { ::close(fd_); }

  void set(const std::string& key, const std::string& value) override {
    const std::string req = encode_store_request({'S', key, value});
    const auto deadline = Clock::now() + timeout_;
    char ack = 0;
    if (!send_all(req.data(), req.size(), deadline) || !recv_all(&ack, 1, deadline) || ack != 'K')
      throw lost("setting '" + key + "'");
  }

  std::optional<std::string> try_get(const std::string& key) override {
    const std::string req = encode_store_request({'G', key, {}});
    const auto deadline = Clock::now() + timeout_;
    std::optional<std::string> value;
    if (!send_all(req.data(), req.size(), deadline) ||
        !read_store_get_reply([&](char* p, size_t n) { return recv_all(p, n, deadline); }, value))
      throw lost("reading '" + key + "'");
    return value;
  }

  std::string where() const override { return "the rendezvous server at " + address_.str(); }

 private:
  // One connection attempt to any address of host, bounded by deadline; -1 (and why) on failure.
  int try_connect(Clock::time_point deadline, std::string& why) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    const int rc = ::getaddrinfo(address_.host.c_str(), std::to_string(address_.port).c_str(), &hints, &list);
    if (rc != 0) {
      why = "cannot resolve '" + address_.host + "': " + gai_strerror(rc);
      return -1;
    }
    int fd = -1;
    for (addrinfo* ai = list; ai && fd < 0; ai = ai->ai_next) {
      fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
      if (fd < 0) continue;
      int err = ::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
      if (err == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        const int wait_ms = static_cast<int>(std::max<int64_t>(
            1, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
        socklen_t len = sizeof(err);
        if (::poll(&p, 1, std::min(wait_ms, 5000)) == 1)
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        else
          err = ETIMEDOUT;
      }
      if (err != 0) {
        why = std::strerror(err);
        ::close(fd);
        fd = -1;
      }
    }
    ::freeaddrinfo(list);
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
  }

  // Waits for fd to be ready for events until deadline.
  bool ready(short events, Clock::time_point deadline) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd_, events, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
      if (r > 0) return true;
      if (r < 0 && errno != EINTR) return false;
    }
  }

  bool send_all(const char* p, size_t n, Clock::time_point deadline) {
    while (n > 0) {
      if (!ready(POLLOUT, deadline)) return false;
      ssize_t r = ::send(fd_, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r <= 0) return false;
      p += r, n -= static_cast<size_t>(r);
    }
    return true;
  }

  bool recv_all(char* p, size_t n, Clock::time_point deadline) {
    while (n > 0) {
      if (!ready(POLLIN, deadline)) return false;
      ssize_t r = ::recv(fd_, p, n, MSG_DONTWAIT);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r <= 0) return false;
      p += r, n -= static_cast<size_t>(r);
    }
    return true;
  }

  CommError lost(const std::string& doing) const {
    return CommError(who_ + ": lost " + where() + " while " + doing + " (did rank 0 exit? its own error says why)");
  }

  TcpAddress address_;
  std::chrono::milliseconds timeout_;
  std::string who_;
  int fd_ = -1;
};

}  // namespace

std::string TcpAddress::str() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

TcpAddress parse_tcp_address(const std::string& text, const std::string& what) {
  const std::string form = " (expected HOST:PORT, e.g. node001:29400 or [fe80::1]:29400)";
  TcpAddress a;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw ConfigError(what + " is '" + text + "'" + form);
    a.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) throw ConfigError(what + " is '" + text + "': no port" + form);
    a.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  const bool digits = !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
  int64_t p = 0;
  a.port = digits && parse_int(port, &p) ? static_cast<int>(p) : 0;
  if (a.host.empty() || a.port < 1 || a.port > 65535)
    throw ConfigError(what + " is '" + text + "'" + (a.host.empty() ? ": no host" : ": port not in 1..65535") + form);
  return a;
}

std::string KeyValueStore::wait_get(const std::string& key, std::chrono::milliseconds timeout, const std::string& who) {
  const auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    if (std::optional<std::string> v = try_get(key)) return *v;
    if (Clock::now() > deadline)
      throw CommError(who + ": timed out after " + seconds(timeout) + " s waiting for '" + key + "' from " + where() +
                      " (did every rank start, with the same world size? training.CommunicationTimeout)");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

std::unique_ptr<KeyValueStore> serve_tcp_store(int port, const std::string& who, int* bound_port) {
  auto s = std::make_unique<StoreServer>(port, who);
  if (bound_port) *bound_port = s->port();
  return s;
}

std::unique_ptr<KeyValueStore> connect_tcp_store(const TcpAddress& address, std::chrono::milliseconds timeout,
                                                 const std::string& who) {
  return std::make_unique<StoreClient>(address, timeout, who);
}

}  // namespace dlt
