#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

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
