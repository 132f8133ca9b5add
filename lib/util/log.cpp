#include "util/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include "util/env.h"

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
  // DLT_LOG=debug shows the debug lines too (e.g. each convolution's cuDNN algorithm).
  const bool debug = verbose || env_text("DLT_LOG") == "debug";
  logger->set_level(debug ? spdlog::level::debug : spdlog::level::info);
  spdlog::set_default_logger(logger);
}

int rank() { return g_rank; }

}  // namespace dlt::log
