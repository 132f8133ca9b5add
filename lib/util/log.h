// Rank-aware logging on spdlog: only rank 0 prints INFO; warnings and errors from every
// rank, prefixed with the rank when the world has more than one process.
#pragma once
#include <spdlog/spdlog.h>

namespace dlt::log {

void init(int rank, int world_size, bool verbose);
int rank();

template <typename... Args>
void info(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  if (rank() == 0) spdlog::info(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void warn(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  spdlog::warn(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void debug(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  spdlog::debug(fmt, std::forward<Args>(args)...);
}

}  // namespace dlt::log
