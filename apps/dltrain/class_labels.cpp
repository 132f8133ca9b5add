// --label-ids parsing and the choice of LabelIDs for dltrain segment.
#include "class_labels.h"

#include "config/config.h"
#include "util/error.h"

namespace dlt::app {

std::vector<std::vector<std::vector<int64_t>>> parse_label_ids(const std::string& text,
                                                               const std::vector<std::string>& classes) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) throw UsageError("--label-ids is empty (write one value per class, e.g. [0, 1, 2])");
  // The config's own LabelIDs reader, so the flag follows data.LabelIDs' rules exactly; the outer
  // brackets may be left out ("0, 1, 2").
  std::string names;
  for (const auto& c : classes) names += (names.empty() ? "\"" : ", \"") + c + "\"";
  const std::string value = text[first] == '[' ? text : "[" + text + "]";
  const std::string yaml = "layers: [{type: relu}]\ndata:\n  train: {images: i, labels: l}\n  ClassNames: [" + names +
                           "]\n  LabelIDs: " + value + "\n";
  try {
    return load_config_text(yaml, "--label-ids").data.label_ids;
  } catch (const ConfigError& e) {
    std::string why = e.what();
    const size_t at = why.find("data.LabelIDs");  // drop the stand-in file's position
    if (at != std::string::npos) why = why.substr(at);
    throw UsageError("--label-ids '" + text + "': " + why +
                     " (write one value per class: [0, 1, 2] or [[128, 0, 0], [0, 128, 0]])");
  }
}

ClassLabels class_labels(const ModelData& model, const std::string& model_path, const std::string& label_ids_flag,
                         const std::vector<std::string>& classes) {
  auto with_colours = [&](PixelLabelIds ids, std::string source) {
    ClassLabels l{std::move(ids), {}, std::move(source)};
    l.colours = l.ids.rgb() ? l.ids.colours() : distinct_colours(static_cast<int>(classes.size()));
    return l;
  };
  if (!label_ids_flag.empty()) {
    try {
      return with_colours(PixelLabelIds(classes, parse_label_ids(label_ids_flag, classes), "--label-ids"),
                          "--label-ids");
    } catch (const ConfigError& e) {
      throw UsageError(e.what());
    }
  }
  if (!model.label_ids.empty()) {  // the training data's LabelIDs, kept in the model file
    try {
      return with_colours(PixelLabelIds(classes, model.label_ids, model_path + " LabelIDs"), "model");
    } catch (const ConfigError& e) {
      throw ModelError(std::string(e.what()) + " (the model file is corrupt; give --label-ids)");
    }
  }
  std::vector<std::vector<std::vector<int64_t>>> ids;
  for (size_t c = 0; c < classes.size(); ++c) ids.push_back({{static_cast<int64_t>(c)}});
  return with_colours(PixelLabelIds(classes, ids, "index labels"), "index");
}

}  // namespace dlt::app
