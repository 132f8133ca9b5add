#include "util/files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace dlt {

std::string temporary_name(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const std::string prefix = target.filename().string() + ".tmp-";
  std::error_code ec;
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) ::unlink(it->path().c_str());
  }
  return path + ".tmp-" + std::to_string(::getpid());
}

namespace {

namespace fs = std::filesystem;

// The descriptor of this process that `path` names through its chain of links (/dev/stdout ->
// /proc/self/fd/1 -> 1, /dev/fd/3 -> 3), or -1: each step's folder is resolved, so /proc/self
// and /dev/fd read as /proc/<this pid>/fd.
int own_descriptor(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) return -1;
  const std::string own = "/proc/" + std::to_string(::getpid()) + "/fd/";
  for (int hop = 0; hop < 40; ++hop) {  // Linux's limit on links followed
    const fs::path folder = fs::canonical(p.parent_path(), ec);
    if (ec || p.filename().empty()) return -1;
    const fs::path at = folder / p.filename();
    const std::string s = at.string();
    if (s.size() > own.size() && s.compare(0, own.size(), own) == 0) {
      const std::string digits = s.substr(own.size());
      if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
      return std::stoi(digits);
    }
    if (!fs::is_symlink(at, ec)) return -1;
    const fs::path next = fs::read_symlink(at, ec);
    if (ec) return -1;
    p = next.is_absolute() ? next : folder / next;
  }
  return -1;
}

}  // namespace

OutputTarget output_target(const std::string& path) {
  using Kind = OutputTarget::Kind;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) return {Kind::kReplace, path, -1};
  const int fd = own_descriptor(path);
  if (fd >= 0) return {Kind::kDescriptor, path, fd};
  if (!S_ISREG(st.st_mode)) return {Kind::kThrough, path, -1};
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0 || !S_ISLNK(link.st_mode)) return {Kind::kReplace, path, -1};
  std::error_code ec;
  const fs::path target = fs::canonical(path, ec);  // a link to a regular file: replace that file
  if (ec || target.string().rfind("/proc/", 0) == 0) return {Kind::kThrough, path, -1};
  return {Kind::kReplace, target.string(), -1};
}

void write_through(const OutputTarget& target, const std::string& path, const void* data, size_t size) {
  int fd = target.fd;
  if (target.kind == OutputTarget::Kind::kThrough) {
    fd = ::open(target.path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw Error(path + ": cannot write (" + std::strerror(errno) + ")");
  } else if (fd == STDOUT_FILENO || fd == STDERR_FILENO) {
    std::fflush(fd == STDOUT_FILENO ? stdout : stderr);  // what was printed before comes first
  }
  const auto* bytes = static_cast<const char*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : EIO;
      if (target.kind == OutputTarget::Kind::kThrough) ::close(fd);
      throw Error(path + ": write failed (" + std::strerror(e) + ")");
    }
    done += static_cast<size_t>(n);
  }
  if (target.kind == OutputTarget::Kind::kThrough && ::close(fd) != 0)
    throw Error(path + ": write failed (" + std::strerror(errno) + ")");
}

bool is_standard_output(const std::string& path) {
  struct stat out {
  }, at{};
  return ::fstat(STDOUT_FILENO, &out) == 0 && ::stat(path.c_str(), &at) == 0 && out.st_dev == at.st_dev &&
         out.st_ino == at.st_ino;
}

void write_file_atomic(const std::string& path, const std::string& contents) {
  const OutputTarget target = output_target(path);
  if (target.kind != OutputTarget::Kind::kReplace) return write_through(target, path, contents.data(), contents.size());
  const std::string tmp = temporary_name(target.path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(path + ": cannot write (" + std::strerror(errno) + ")");
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(path + ": write failed (" + std::strerror(e) + ")");
    }
    done += static_cast<size_t>(n);
  }
  // A full disk often shows only here (delayed allocation, NFS): the old file stays.
  if (::fsync(fd) != 0) {
    int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw Error(path + ": write failed (" + std::strerror(e) + ")");
  }
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw Error(path + ": write failed (" + std::strerror(e) + ")");
  }
  if (std::rename(tmp.c_str(), target.path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw Error(path + ": cannot rename into place (" + std::strerror(e) + ")");
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open (" + std::strerror(errno) + ")");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void make_dirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw Error(path + ": cannot create folder (" + ec.message() + ")");
}

}  // namespace dlt
