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
// lower_is_better: `accuracy` holds an error (regression's RMSE), the lower the better.
std::vector<size_t> pareto_front(const std::vector<ParetoPoint>& pts, bool lower_is_better = false);

// The labels drawn next to the points. Sweep point names are key=value parts joined by '_'
// (scripts/sweep.sh: "InitialLearnRate=0.01_conv1.NumFilters=20"); a key that every name has
// is left out and only its value shown ("0.01 20"), with *keys listing the keys left out in
// order ("InitialLearnRate, conv1.NumFilters"; empty when none). Other names stay whole; a
// label over 24 characters loses its middle ("net_very_lo...variant_12"), never its end.
std::vector<std::string> pareto_labels(const std::vector<std::string>& names, std::string* keys);

// Writes a PNG scatter of accuracy (%) against memory footprint (bytes) with the front as a red
// line; points are labelled (pareto_labels, the keys under the title) when there are at most 40. Writes path + ".tmp",
// then renames; throws Error naming the path when the file cannot be written.
// ylabel names the y axis; lower_is_better as pareto_front's.
void write_pareto_png(const std::string& path, const std::vector<ParetoPoint>& pts, const std::string& title,
                      const std::string& ylabel = "Accuracy (%)", bool lower_is_better = false);

}  // namespace dlt
