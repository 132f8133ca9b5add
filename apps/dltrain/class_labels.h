// Which label values mean which class for `dltrain segment`: --label-ids, else the LabelIDs the
// model was trained with (stored in the model file), else class c is the value c (index labels).
#pragma once
#include <string>
#include <vector>

#include "data/label_images.h"
#include "data/pixel_labels.h"
#include "net/model_file.h"

namespace dlt::app {

struct ClassLabels {
  PixelLabelIds ids;            // decodes ground-truth label images
  std::vector<Colour> colours;  // the class colours: RGB LabelIDs' own, else distinct_colours
  std::string source;           // "--label-ids", "model" or "index"
};

// Parses --label-ids for `classes` as the config's data.LabelIDs (docs/config.md): one entry per
// class, each an integer, an RGB triplet [r, g, b] or a list of those, e.g. "[0, 1, 2]" or
// "[[128,0,0], [0,128,0]]" (the outer brackets may be left out). Throws UsageError naming
// --label-ids and what is wrong.
std::vector<std::vector<std::vector<int64_t>>> parse_label_ids(const std::string& text,
                                                               const std::vector<std::string>& classes);

// The labels for `classes` (the model's): from label_ids_flag when not empty, else the model's
// LabelIDs when it has them, else index labels. Throws UsageError for a bad flag.
ClassLabels class_labels(const ModelData& model, const std::string& model_path, const std::string& label_ids_flag,
                         const std::vector<std::string>& classes);

}  // namespace dlt::app
