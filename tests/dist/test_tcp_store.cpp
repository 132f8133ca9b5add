// The TCP rendezvous (lib/dist/tcp_store.h) over loopback: addresses parse or are refused by
// name; a client reads what rank 0's server holds, waits for rank 0 to start, and fails with
// one clear CommError when nobody, a stranger, or a dead server answers; rank 0's bytes and a
// Gloo world reach every rank through it; the launcher picks it from DLT_RENDEZVOUS or
// torchrun's MASTER_ADDR / MASTER_PORT.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "build_config.h"
#include "dist/communicator.h"
#include "dist/join_world.h"
#include "dist/rendezvous.h"
#include "dist/tcp_store.h"
#include "tensor/tensor.h"
#include "util/error.h"

using namespace dlt;
using namespace std::chrono_literals;

namespace {

// A port nobody listens on right now (bound once, then closed).
int free_port() {
  int port = 0;
  serve_tcp_store(0, "test", &port);
  return port;
}

TcpAddress loopback(int port) { return TcpAddress{"127.0.0.1", port}; }

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

CommOptions tcp_options(int rank, int size, int port) {
  CommOptions o;
  o.rank = rank;
  o.size = size;
  o.rendezvous_tcp = "127.0.0.1:" + std::to_string(port);
  o.timeout = 10s;
  return o;
}

}  // namespace

TEST_CASE("tcp store: addresses are HOST:PORT or [IPv6]:PORT; bad ones name the variable", "[dist]") {
  TcpAddress a = parse_tcp_address("node001:29400", "DLT_RENDEZVOUS");
  CHECK(a.host == "node001");
  CHECK(a.port == 29400);
  CHECK(a.str() == "node001:29400");
  a = parse_tcp_address("[fe80::1]:1", "X");
  CHECK(a.host == "fe80::1");
  CHECK(a.port == 1);
  CHECK(a.str() == "[fe80::1]:1");
  CHECK(parse_tcp_address("::1:65535", "X").host == "::1");  // MASTER_ADDR=::1 joined with ':' + port
  for (const char* bad :
       {"node001", "node001:", ":29400", "node001:0", "node001:65536", "node001:29a", "[::1]29400", "node001:123456"}) {
    INFO(bad);
    const std::string m = message_of([&] { parse_tcp_address(bad, "DLT_RENDEZVOUS"); });
    CHECK(m.find("DLT_RENDEZVOUS is '") == 0);
    CHECK(m.find("HOST:PORT") != std::string::npos);
  }
}

TEST_CASE("tcp store: a client sets and reads keys of rank 0's server, binary values included", "[dist]") {
  int port = 0;
  auto server = serve_tcp_store(0, "rank 0 of 2", &port);
  REQUIRE(port > 0);
  auto client = connect_tcp_store(loopback(port), 5s, "rank 1 of 2");
  CHECK_FALSE(client->try_get("a").has_value());
  server->set("a", "from rank 0");
  CHECK(client->try_get("a").value() == "from rank 0");
  std::string binary(1 << 20, '\0');
  for (size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i * 7 + 3);
  client->set("blob", binary);
  CHECK(server->try_get("blob").value() == binary);
  CHECK(client->try_get("blob").value() == binary);
  client->set("a", "");  // set again: the last value wins, empty is a value
  CHECK(server->try_get("a").value().empty());
  // A second client sees what the first wrote.
  auto other = connect_tcp_store(loopback(port), 5s, "rank 2 of 3");
  CHECK(other->try_get("blob").value() == binary);
}

TEST_CASE("tcp store: wait_get waits for a later set; a client waits for a server that starts later", "[dist]") {
  const int port = free_port();
  auto late_server = std::async(std::launch::async, [port] {
    std::this_thread::sleep_for(300ms);
    auto s = serve_tcp_store(port, "rank 0 of 2");
    std::this_thread::sleep_for(200ms);
    s->set("id", "0123");
    std::this_thread::sleep_for(500ms);  // serve until the client has read it
    return 0;
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto client = connect_tcp_store(loopback(port), 10s, "rank 1 of 2");
  CHECK(client->wait_get("id", 10s, "rank 1 of 2") == "0123");
  CHECK(std::chrono::steady_clock::now() - t0 >= 450ms);
  late_server.get();
}

TEST_CASE("tcp store: nobody, a stranger or a dead server is one CommError naming the address", "[dist]") {
  const int port = free_port();
  std::string m = message_of([&] { connect_tcp_store(loopback(port), 300ms, "rank 3 of 4"); });
  CHECK(m.find("rank 3 of 4: no rendezvous server at 127.0.0.1:" + std::to_string(port)) == 0);
  CHECK(m.find("did rank 0 start") != std::string::npos);

  // A listener that speaks something else (torchrun's own store, a web server): it accepts and
  // answers with other bytes.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET, sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK), sa.sin_port = 0;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  socklen_t len = sizeof(sa);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  auto stranger = std::async(std::launch::async, [fd] {
    int c = ::accept(fd, nullptr, nullptr);
    char buf[4];
    (void)!::read(c, buf, 4);
    (void)!::write(c, "HTTP", 4);
    std::this_thread::sleep_for(200ms);
    ::close(c);
  });
  m = message_of([&] { connect_tcp_store(loopback(ntohs(sa.sin_port)), 2s, "rank 1 of 2"); });
  stranger.get();
  ::close(fd);
  CHECK(m.find("answered, but not as a dltrain rendezvous server") != std::string::npos);
  CHECK(m.find("DLT_RENDEZVOUS=tcp://") != std::string::npos);

  int live = 0;
  auto server = serve_tcp_store(0, "rank 0 of 2", &live);
  auto client = connect_tcp_store(loopback(live), 2s, "rank 1 of 2");
  m = message_of([&] { client->wait_get("never", 200ms, "rank 1 of 2"); });
  CHECK(m.find("rank 1 of 2: timed out after 0.2 s waiting for 'never' from the rendezvous server at 127.0.0.1:") == 0);
  server.reset();  // rank 0 exits
  m = message_of([&] { client->try_get("x"); });
  CHECK(m.find("rank 1 of 2: lost the rendezvous server at 127.0.0.1:" + std::to_string(live)) == 0);
}

TEST_CASE("tcp store: a port another program holds is refused with the way out", "[dist]") {
  int port = 0;
  auto first = serve_tcp_store(0, "first", &port);
  const std::string m = message_of([&] { serve_tcp_store(port, "rank 0 of 2"); });
  CHECK(m.find("rank 0 of 2: cannot serve the rendezvous on port " + std::to_string(port)) == 0);
  CHECK(m.find("DLT_RENDEZVOUS=tcp://HOST:PORT") != std::string::npos);
}

TEST_CASE("tcp store: rank 0's bytes reach every rank (the NCCL id's path)", "[dist]") {
  const int port = free_port();
  std::vector<std::future<std::string>> ranks;
  for (int r = 0; r < 4; ++r)
    ranks.push_back(std::async(std::launch::async, [r, port] {
      CommOptions o = tcp_options(r, 4, port);
      std::unique_ptr<KeyValueStore> keep;
      std::string mine = r == 0 ? std::string("\x00\x01id-bytes\xff", 11) : std::string();
      std::string got = share_from_rank0(o, "nccl-unique-id", mine, 11, keep);
      if (r == 0) std::this_thread::sleep_for(1s);  // as NCCL init would: serve until all joined
      return got;
    }));
  for (auto& f : ranks) CHECK(f.get() == std::string("\x00\x01id-bytes\xff", 11));
  // A size mismatch (another build) is refused.
  const int port2 = free_port();
  auto r0 = std::async(std::launch::async, [port2] {
    std::unique_ptr<KeyValueStore> keep;
    share_from_rank0(tcp_options(0, 2, port2), "nccl-unique-id", "12345", 5, keep);
    std::this_thread::sleep_for(1s);
  });
  std::unique_ptr<KeyValueStore> keep;
  const std::string m = message_of([&] { share_from_rank0(tcp_options(1, 2, port2), "nccl-unique-id", "", 8, keep); });
  r0.get();
  CHECK(m.find("rank 1 of 2: 'nccl-unique-id' from the rendezvous server at 127.0.0.1:") == 0);
  CHECK(m.find("has 5 bytes, not 8") != std::string::npos);
}

#if DLT_HAVE_GLOO
TEST_CASE("tcp store: three Gloo ranks meet through it and all-reduce", "[dist]") {
  const int port = free_port();
  std::vector<std::future<std::vector<float>>> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.push_back(std::async(std::launch::async, [r, port] {
      auto comm = make_cpu_communicator(tcp_options(r, 3, port));
      Tensor t(Shape{5});
      for (int i = 0; i < 5; ++i) t.data()[i] = static_cast<float>((r + 1) * (i + 1));
      comm->all_reduce_sum(t);
      comm->barrier();
      return std::vector<float>(t.data(), t.data() + 5);
    }));
  for (auto& f : ranks) CHECK(f.get() == std::vector<float>{6, 12, 18, 24, 30});
}

TEST_CASE("tcp store: a Gloo rank whose rank 0 never comes fails within the timeout", "[dist]") {
  CommOptions o = tcp_options(1, 2, free_port());
  o.timeout = 500ms;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string m = message_of([&] { make_cpu_communicator(o); });
  // A hang guard, not a speed limit: it failed rather than waiting on (the default timeout is 60 s).
  CHECK(std::chrono::steady_clock::now() - t0 < 30s);
  CHECK(m.find("rank 1 of 2: no rendezvous server at 127.0.0.1:") == 0);
}
#endif

TEST_CASE("launcher: the rendezvous comes from DLT_RENDEZVOUS, else torchrun's MASTER_ADDR:MASTER_PORT", "[dist]") {
  WorldInfo torch =
      parse_launcher_env({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29500"}});
  CommOptions o;
  set_cluster_rendezvous(o, torch, "out", {});
  CHECK(o.rendezvous_tcp == "node7:29500");
  CHECK(o.rendezvous_dir.empty());
  // torchrun's agent serves its own store on MASTER_PORT: ours takes the next port.
  o = CommOptions{};
  set_cluster_rendezvous(o, torch, "out", {{"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  CHECK(o.rendezvous_tcp == "node7:29501");
  o = CommOptions{};
  set_cluster_rendezvous(o, torch, "out", {{"TORCHELASTIC_USE_AGENT_STORE", "False"}});
  CHECK(o.rendezvous_tcp == "node7:29500");
  // An explicit DLT_RENDEZVOUS wins: a TCP address or a directory.
  o = CommOptions{};
  set_cluster_rendezvous(o, torch, "out", {{"DLT_RENDEZVOUS", "tcp://[::1]:4000"}});
  CHECK(o.rendezvous_tcp == "[::1]:4000");
  o = CommOptions{};
  set_cluster_rendezvous(o, torch, "out", {{"DLT_RENDEZVOUS", "/nfs/rdv"}});
  CHECK(o.rendezvous_dir == "/nfs/rdv");
  CHECK(o.rendezvous_tcp.empty());
  // srun has no address: the shared directory, unless DLT_RENDEZVOUS names a server.
  WorldInfo slurm = parse_launcher_env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "9"}});
  o = CommOptions{};
  set_cluster_rendezvous(o, slurm, "/shared/run", {});
  CHECK(o.rendezvous_dir == "/shared/run/.rendezvous/slurm-9");
  o = CommOptions{};
  set_cluster_rendezvous(o, slurm, "/shared/run", {{"DLT_RENDEZVOUS", "tcp://node001:29400"}});
  CHECK(o.rendezvous_tcp == "node001:29400");
  // torchrun --standalone names this machine; where that name does not resolve and every rank
  // is local, the ranks meet at loopback. A world over nodes keeps the name (its error names it).
  WorldInfo standalone = parse_launcher_env(
      {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "no-such-host.invalid"}, {"MASTER_PORT", "29500"}});
  o = CommOptions{};
  set_cluster_rendezvous(o, standalone, "out", {{"LOCAL_WORLD_SIZE", "2"}});
  CHECK(o.rendezvous_tcp == "127.0.0.1:29500");
  o = CommOptions{};
  set_cluster_rendezvous(o, standalone, "out", {{"LOCAL_WORLD_SIZE", "1"}});
  CHECK(o.rendezvous_tcp == "no-such-host.invalid:29500");
  o = CommOptions{};
  set_cluster_rendezvous(o, slurm, "out", {{"SLURM_NNODES", "1"}, {"DLT_RENDEZVOUS", "tcp://no-such-host.invalid:7"}});
  CHECK(o.rendezvous_tcp == "127.0.0.1:7");
  o = CommOptions{};
  set_cluster_rendezvous(o, standalone, "out", {{"LOCAL_WORLD_SIZE", "2"}, {"DLT_RENDEZVOUS", "tcp://127.0.0.1:9"}});
  CHECK(o.rendezvous_tcp == "127.0.0.1:9");
  // Bad values name the variable.
  CHECK(message_of([&] {
          set_cluster_rendezvous(o, slurm, "x", {{"DLT_RENDEZVOUS", "tcp://node001"}});
        }).find("DLT_RENDEZVOUS is 'node001': no port") == 0);
  WorldInfo bad_port =
      parse_launcher_env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "n"}, {"MASTER_PORT", "http"}});
  CHECK(message_of([&] { set_cluster_rendezvous(o, bad_port, "x", {}); }).find("MASTER_ADDR:MASTER_PORT is 'n:http'") ==
        0);
  WorldInfo top =
      parse_launcher_env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "n"}, {"MASTER_PORT", "65535"}});
  CHECK(message_of([&] {
          set_cluster_rendezvous(o, top, "x", {{"TORCHELASTIC_USE_AGENT_STORE", "True"}});
        }).find("MASTER_PORT is 65535") == 0);
}
