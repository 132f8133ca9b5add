#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "support/skip.h"
#include "util/files.h"

using namespace dlt;
namespace fs = std::filesystem;

namespace {

// The pid of a child that has exited and been reaped: no process has it (until reused).
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  REQUIRE(pid > 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return pid;
}

void touch(const fs::path& p) { std::ofstream(p) << "partial"; }

}  // namespace

TEST_CASE("an atomic write removes its target's temporaries left by dead processes only", "[util]") {
  const fs::path dir = fs::temp_directory_path() / ("dlt-files-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string dead = std::to_string(dead_pid());
  touch(dir / ("model.bin.tmp-" + dead));  // a kill -9 during model.bin's write
  touch(dir / "model.bin.tmp-1");          // pid 1 is alive: maybe another writer
  touch(dir / ("other.bin.tmp-" + dead));  // another target's
  touch(dir / "model.bin.tmp-notapid");    // not ours to judge
  write_file_atomic((dir / "model.bin").string(), "whole");

  CHECK_FALSE(fs::exists(dir / ("model.bin.tmp-" + dead)));
  CHECK(fs::exists(dir / "model.bin.tmp-1"));
  CHECK(fs::exists(dir / ("other.bin.tmp-" + dead)));
  CHECK(fs::exists(dir / "model.bin.tmp-notapid"));
  CHECK_FALSE(fs::exists(dir / ("model.bin.tmp-" + std::to_string(::getpid()))));
  CHECK(read_file((dir / "model.bin").string()) == "whole");
  fs::remove_all(dir);
}

namespace {

// A fresh scratch folder for one case, removed by the destructor.
struct Scratch {
  fs::path dir;
  explicit Scratch(const std::string& name)
      : dir(fs::temp_directory_path() / ("dlt-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  // The names in the folder, sorted: what a write left behind.
  std::vector<std::string> names() const {
    std::vector<std::string> n;
    for (const auto& e : fs::directory_iterator(dir)) n.push_back(e.path().filename().string());
    std::sort(n.begin(), n.end());
    return n;
  }
};

struct stat stat_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st;
}

}  // namespace

TEST_CASE("an output that is a regular file is replaced atomically by a new file", "[util]") {
  Scratch s("replace");
  const fs::path out = s.dir / "preds.csv";
  std::ofstream(out) << "old contents, longer than the new";
  const ino_t before = stat_of(out).st_ino;
  CHECK(output_target(out.string()).kind == OutputTarget::Kind::kReplace);
  write_file_atomic(out.string(), "new");
  CHECK(read_file(out.string()) == "new");
  CHECK(stat_of(out).st_ino != before);  // renamed over, not rewritten in place
  CHECK(s.names() == std::vector<std::string>{"preds.csv"});
  write_file_atomic((s.dir / "absent.csv").string(), "made");  // an absent path: the same way
  CHECK(read_file((s.dir / "absent.csv").string()) == "made");
}

TEST_CASE("an output that is a FIFO is written through: its reader gets the bytes, it stays a FIFO", "[util]") {
  Scratch s("fifo");
  const fs::path fifo = s.dir / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(output_target(fifo.string()).kind == OutputTarget::Kind::kThrough);
  std::string got;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);  // blocks until the writer opens
    got.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  const std::string bytes = std::string("class,score\n") + std::string(100000, 'x');  // more than a pipe holds
  write_file_atomic(fifo.string(), bytes);
  reader.join();
  CHECK(got == bytes);
  CHECK(S_ISFIFO(stat_of(fifo).st_mode));
  CHECK(s.names() == std::vector<std::string>{"pipe"});  // no temporary beside it
}

TEST_CASE("an output that is a character device stays that device and a full one fails naming the path",
          "[util][skippable]") {
  Scratch s("chardev");
  const fs::path null = s.dir / "null", full = s.dir / "full";
  const bool made = ::mknod(null.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0;  // as /dev/null
  DLT_SKIP_IF(!made, "mknod is not permitted here (" << std::strerror(errno) << "); CI runs it as root");
  REQUIRE(::mknod(full.c_str(), S_IFCHR | 0666, ::makedev(1, 7)) == 0);  // as /dev/full
  CHECK(output_target(null.string()).kind == OutputTarget::Kind::kThrough);
  write_file_atomic(null.string(), "discarded");
  const struct stat st = stat_of(null);
  CHECK(S_ISCHR(st.st_mode));
  CHECK(st.st_rdev == ::makedev(1, 3));
  CHECK_THROWS_WITH(write_file_atomic(full.string(), "x"), full.string() + ": write failed (No space left on device)");
  CHECK(S_ISCHR(stat_of(full).st_mode));
  CHECK(s.names() == std::vector<std::string>{"full", "null"});
}

TEST_CASE("an output path naming one of this process's descriptors writes to that descriptor", "[util]") {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  const std::string via_dev = "/dev/fd/" + std::to_string(p[1]);
  const std::string via_proc = "/proc/self/fd/" + std::to_string(p[1]);
  for (const std::string& path : {via_dev, via_proc}) {
    const OutputTarget t = output_target(path);
    CHECK(t.kind == OutputTarget::Kind::kDescriptor);
    CHECK(t.fd == p[1]);
  }
  write_file_atomic(via_dev, "one,");
  write_file_atomic(via_proc, "two");
  ::close(p[1]);
  std::string got(16, '\0');
  const ssize_t n = ::read(p[0], got.data(), got.size());
  ::close(p[0]);
  REQUIRE(n >= 0);
  got.resize(static_cast<size_t>(n));
  CHECK(got == "one,two");
  CHECK(output_target("/dev/stdout").kind == OutputTarget::Kind::kDescriptor);
  CHECK(output_target("/dev/stdout").fd == 1);
}

TEST_CASE("an output that is a link to a regular file replaces that file and keeps the link", "[util]") {
  Scratch s("link");
  fs::create_directories(s.dir / "models");
  const fs::path target = s.dir / "models" / "v3.onnx", link = s.dir / "model.onnx";
  std::ofstream(target) << "old";
  fs::create_symlink("models/v3.onnx", link);
  const OutputTarget t = output_target(link.string());
  CHECK(t.kind == OutputTarget::Kind::kReplace);
  CHECK(t.path == fs::canonical(target).string());
  write_file_atomic(link.string(), "new");
  CHECK(fs::is_symlink(link));
  CHECK(read_file(target.string()) == "new");
  CHECK(s.names() == std::vector<std::string>{"model.onnx", "models"});
}
