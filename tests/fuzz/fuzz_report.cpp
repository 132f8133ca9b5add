// Fuzz target: what `dltrain report` reads, a run's summary.json (lib/util/flat_json.cpp), and
// what it computes from it: the typed lookups and the Pareto front (lib/train/draw/pareto.cpp).
// The same reader parses model metadata (train/checkpoint.cpp). A DataError is a clean refusal.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "train/draw/pareto.h"
#include "util/error.h"
#include "util/flat_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const dlt::FlatJson j = dlt::parse_flat_json(text, "summary.json");
    std::vector<dlt::ParetoPoint> pts;
    std::vector<std::string> names;
    for (const auto& [key, value] : j) {  // every key as a run, as a sweep folder would give
      names.push_back(key);
      pts.push_back({key, dlt::json_number_or(j, key, NAN), dlt::json_number_or(j, "validation_accuracy", NAN)});
      dlt::json_string_or(j, key, "");
      (void)value;
    }
    dlt::pareto_front(pts);
    std::string keys;
    dlt::pareto_labels(names, &keys);
  } catch (const dlt::DataError&) {
  }
  return 0;
}
