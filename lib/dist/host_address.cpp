// The numeric address a Gloo rank announces (host_address.h): an interface's address, a
// resolved host name that this machine can bind, or loopback when every rank is local.
#include "dist/host_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "dist/launcher_env.h"
#include "util/error.h"
#include "util/log.h"
#include "util/numbers.h"

namespace dlt {

namespace {

using Env = std::map<std::string, std::string>;

std::string get(const Env& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

// The value of an integer variable, or -1 when unset or not a plain integer.
long get_int(const Env& env, const std::string& key) {
  const std::string v = get(env, key);
  int64_t n = 0;
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos || !parse_int(v, &n))
    return -1;
  return static_cast<long>(n);
}

std::string numeric(const sockaddr* a, socklen_t len) {
  char host[NI_MAXHOST] = {0};
  if (getnameinfo(a, len, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0) return {};
  return host;
}

bool can_bind(const sockaddr* a, socklen_t len) {
  int fd = socket(a->sa_family, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_storage s{};
  std::memcpy(&s, a, len);
  if (a->sa_family == AF_INET) reinterpret_cast<sockaddr_in*>(&s)->sin_port = 0;
  if (a->sa_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&s)->sin6_port = 0;
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&s), len) == 0;
  close(fd);
  return ok;
}

bool is_loopback_host(std::string host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string interface_address(const std::string& iface, const std::string& variable, const std::string& who) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0)
    throw CommError(who + ": cannot list the network interfaces for " + variable + "=" + iface + ": " +
                    std::strerror(errno));
  std::string v4, v6;
  bool seen = false;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_name || iface != i->ifa_name) continue;
    seen = true;
    if (!i->ifa_addr) continue;
    if (i->ifa_addr->sa_family == AF_INET && v4.empty()) {
      v4 = numeric(i->ifa_addr, sizeof(sockaddr_in));
    } else if (i->ifa_addr->sa_family == AF_INET6 && v6.empty()) {
      auto* a6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      if (!IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr)) v6 = numeric(i->ifa_addr, sizeof(sockaddr_in6));
    }
  }
  freeifaddrs(list);
  if (!v4.empty()) return v4;
  if (!v6.empty()) return v6;
  throw CommError(who + ": " + variable + " names the network interface '" + iface + "', which " +
                  (seen ? "has no IPv4 or global IPv6 address" : "this machine does not have") +
                  " (list them with 'ip -brief address'; set " + variable + " to one the other ranks reach)");
}

}  // namespace

bool world_on_this_host(const WorldInfo& world, const std::string& rendezvous_tcp, const Env& env) {
  if (world.size <= 1) return true;
  for (const char* local : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"})
    if (get_int(env, local) == world.size) return true;
  for (const char* nodes : {"SLURM_STEP_NUM_NODES", "SLURM_NNODES"}) {
    long n = get_int(env, nodes);
    if (n >= 0) return n == 1;
  }
  if (!rendezvous_tcp.empty()) return is_loopback_host(rendezvous_tcp.substr(0, rendezvous_tcp.rfind(':')));
  return false;
}

bool host_resolves(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return false;
  freeaddrinfo(res);
  return true;
}

std::string resolve_local_address(const std::string& name, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(name.c_str(), nullptr, &hints, &res);
  if (rc != 0) {
    if (why) *why = std::string("it does not resolve: ") + gai_strerror(rc);
    return {};
  }
  std::string found, others;
  for (addrinfo* a = res; a && found.empty(); a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6) continue;
    if (can_bind(a->ai_addr, a->ai_addrlen))
      found = numeric(a->ai_addr, a->ai_addrlen);
    else
      others += (others.empty() ? "" : ", ") + numeric(a->ai_addr, a->ai_addrlen);
  }
  freeaddrinfo(res);
  if (found.empty() && why) *why = "it resolves to " + others + ", not to an address of this machine";
  return found;
}

std::string gloo_address(const Env& env, bool on_this_host, const std::string& who) {
  for (const char* variable : {"DLT_GLOO_IFACE", "GLOO_SOCKET_IFNAME"}) {
    std::string iface = get(env, variable);
    iface = iface.substr(0, iface.find(','));  // PyTorch's variable may list several
    if (!iface.empty()) return interface_address(iface, variable, who);
  }
  std::string why;
  const std::string given = get(env, "DLT_GLOO_HOSTNAME");
  if (!given.empty()) {
    std::string a = resolve_local_address(given, &why);
    if (a.empty())
      throw CommError(who + ": DLT_GLOO_HOSTNAME is '" + given + "', but " + why +
                      " (set it to a name or address of this machine that the other ranks reach)");
    return a;
  }
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "localhost");
  std::string a = resolve_local_address(host, &why);
  if (!a.empty()) return a;
  if (on_this_host) {
    log::debug(
        "{}: this host's name '{}' is of no use ({}); every rank is on this machine, so they meet "
        "over loopback (127.0.0.1)",
        who, host, why);
    return "127.0.0.1";
  }
  throw CommError(who + ": this host's name '" + host + "' cannot be announced to the other ranks: " + why +
                  " (set DLT_GLOO_HOSTNAME to this machine's address, or GLOO_SOCKET_IFNAME to the network "
                  "interface the ranks share, e.g. eth0; or add the name to /etc/hosts)");
}

}  // namespace dlt
