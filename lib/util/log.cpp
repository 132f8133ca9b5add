#include "util/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace dlt::log {
namespace {
int g_rank = 0;
}

void init(int rank, int world_size, bool verbose) {
  g_rank = rank;
  auto logger = spdlog::stderr_color_mt("dltrain");
  if (world_size > 1)
    logger->set_pattern("[rank " + std::to_string(rank) + "] %^%l%$: %v");
  else
    logger->set_pattern("%^%l%$: %v");
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  spdlog::set_default_logger(logger);
}

int rank() { return g_rank; }

}  // namespace dlt::log
