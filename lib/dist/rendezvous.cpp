// File rendezvous: atomic publish (temporary file + rename) and polling with a deadline.
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
                      "DLT_RENDEZVOUS to a shared directory; env DLT_COMM_TIMEOUT)");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace dlt
