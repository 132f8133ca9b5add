// terminal_columns: ioctl(TIOCGWINSZ), then $COLUMNS, then 80.
#include "util/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "util/numbers.h"

namespace dlt {

namespace {
constexpr int kDefaultColumns = 80;
}  // namespace

bool is_terminal(FILE* stream) { return stream && ::isatty(::fileno(stream)) != 0; }

int terminal_columns(FILE* stream) {
  if (is_terminal(stream)) {
    struct winsize ws {};
    if (::ioctl(::fileno(stream), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  }
  if (const char* env = std::getenv("COLUMNS")) {
    int64_t v = 0;
    if (parse_int(env, &v) && v > 0 && v < 100000) return static_cast<int>(v);
  }
  return kDefaultColumns;
}

}  // namespace dlt
