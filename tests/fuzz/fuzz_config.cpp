// Fuzz target: the YAML config loader with --set overrides (lib/config). The input is YAML text,
// optionally followed by a line "#--set" and one override ("section.path=value") per line.
// Any dlt::Error (ConfigError) is a clean refusal; anything else escaping is a finding. A config
// that loads must load again from its dump_config text (config.h's contract): an exception
// from that second load escapes and is reported.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  static const std::string kSplit = "\n#--set\n";
  const size_t split = input.find(kSplit);
  const std::string yaml = input.substr(0, split);
  std::vector<std::string> overrides;
  if (split != std::string::npos) {
    const std::string rest = input.substr(split + kSplit.size());
    for (size_t start = 0; start < rest.size();) {
      size_t end = rest.find('\n', start);
      if (end == std::string::npos) end = rest.size();
      if (end > start) overrides.push_back(rest.substr(start, end - start));
      start = end + 1;
    }
  }
  dlt::Config config;
  try {
    config = dlt::load_config_text(yaml, "fuzz.yaml", overrides);
  } catch (const dlt::Error&) {
    return 0;
  }
  dlt::load_config_text(dlt::dump_config(config), "fuzz.yaml dumped");
  dlt::network_spec_from_yaml(dlt::network_spec_to_yaml(config.network), "fuzz network");
  return 0;
}
