// Accuracy-versus-memory sweep report (like seed 001's Figure 4): the Pareto front of a set of
// trained networks and a scatter plot with the front drawn in red. No choice of "the best" model.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace dlt {

struct ParetoPoint {
  std::string label;
  double memory_bytes;
  double accuracy;  // percent
};

// Indices of the Pareto-optimal points, sorted by memory (ties by index): those for which no
// other point has <= memory and >= accuracy with one of the two strict. Identical points are
// all kept; points with a non-finite memory or accuracy are never on the front.
std::vector<size_t> pareto_front(const std::vector<ParetoPoint>& pts);

// Writes a PNG scatter of accuracy (%) against memory footprint (bytes) with the front as a red
// line; points are labelled when there are at most 40 of them. Writes path + ".tmp", then
// renames; throws Error naming the path when the file cannot be written.
void write_pareto_png(const std::string& path, const std::vector<ParetoPoint>& pts,
                      const std::string& title);

}  // namespace dlt
