// LogCsv (log_csv.h): log.csv growing by one whole row per iteration.
#include "train/log_csv.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/error.h"
#include "util/files.h"

namespace dlt {

LogCsv::LogCsv(const std::string& dir, const IterationLog& log)
    : path_((std::filesystem::path(dir) / "log.csv").string()), metric_columns_(log.metric_columns()) {
  make_dirs(dir);
  write_file_atomic(path_, log.csv());
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) throw Error(path_ + ": cannot open for appending (" + std::strerror(errno) + ")");
}

LogCsv::~LogCsv() {
  if (fd_ >= 0) ::close(fd_);
}

void LogCsv::append(const IterationRecord& r) {
  const std::string line = log_csv_line(r, metric_columns_);
  const off_t before = ::lseek(fd_, 0, SEEK_END);
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // a short write is followed by this one, which says why (ENOSPC)
      const int err = n < 0 ? errno : EIO;
      // No partial row is left behind (best effort: the run's final log.csv is written whole).
      if (before >= 0 && ::ftruncate(fd_, before) != 0) (void)0;
      throw Error(path_ + ": cannot append a row (" + std::strerror(err) + ")");
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace dlt
