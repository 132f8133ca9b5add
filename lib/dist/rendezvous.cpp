// Rendezvous of small blobs: atomic file publish (temporary file + rename) and polling with a
// deadline, or rank 0's TCP store.
#include "dist/rendezvous.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "util/error.h"

namespace dlt {

namespace fs = std::filesystem;

void publish_file(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path final_path = fs::path(dir) / name;
  const fs::path tmp = fs::path(dir) / (name + ".tmp-" + std::to_string(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out)
      throw CommError("cannot write the rendezvous file " + tmp.string() + ": " + std::strerror(errno) +
                      " (set DLT_RENDEZVOUS to a directory every worker can write)");
  }
  fs::rename(tmp, final_path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw CommError("cannot publish the rendezvous file " + final_path.string() + ": " + ec.message() +
                    " (set DLT_RENDEZVOUS to a directory every worker can write)");
  }
}

std::string wait_for_file(const std::string& dir, const std::string& name, size_t bytes,
                          std::chrono::milliseconds timeout, const std::string& who) {
  const fs::path path = fs::path(dir) / name;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    std::error_code ec;
    if (fs::file_size(path, ec) == bytes && !ec) {
      std::ifstream in(path, std::ios::binary);
      std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (data.size() == bytes) return data;
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw CommError(who + ": timed out after " + std::to_string(timeout.count() / 1000.0).substr(0, 5) +
                      " s waiting for " + path.string() +
                      " from rank 0 (did rank 0 start, and do all ranks see the same rendezvous directory? set "
                      "DLT_RENDEZVOUS to a shared directory; training.CommunicationTimeout)");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

std::unique_ptr<KeyValueStore> open_rendezvous_store(const CommOptions& o) {
  const TcpAddress a = parse_tcp_address(o.rendezvous_tcp, "the TCP rendezvous address");
  if (o.rank == 0) return serve_tcp_store(a.port, rank_of(o));
  return connect_tcp_store(a, o.timeout, rank_of(o));
}

std::string share_from_rank0(const CommOptions& o, const std::string& name, const std::string& bytes, size_t size,
                             std::unique_ptr<KeyValueStore>& keep) {
  if (o.rendezvous_tcp.empty()) {
    if (o.rank != 0) return wait_for_file(o.rendezvous_dir, name, size, o.timeout, rank_of(o));
    publish_file(o.rendezvous_dir, name, bytes);
    return bytes;
  }
  std::unique_ptr<KeyValueStore> store = open_rendezvous_store(o);
  std::string got = bytes;
  if (o.rank == 0) {
    store->set(name, bytes);
    keep = std::move(store);
  } else {
    got = store->wait_get(name, o.timeout, rank_of(o));
  }
  if (got.size() != size)
    throw CommError(rank_of(o) + ": '" + name + "' from " + rendezvous_place(o) + " has " + std::to_string(got.size()) +
                    " bytes, not " + std::to_string(size) + " (do all ranks run the same dltrain build?)");
  return got;
}

std::string rank_of(const CommOptions& o) { return "rank " + std::to_string(o.rank) + " of " + std::to_string(o.size); }

std::string rendezvous_place(const CommOptions& o) {
  return o.rendezvous_tcp.empty() ? "the rendezvous directory " + o.rendezvous_dir
                                  : "the rendezvous server at " + o.rendezvous_tcp;
}

}  // namespace dlt
