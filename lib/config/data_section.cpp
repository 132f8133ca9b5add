// The data: section (imageDatastore, splitEachLabel, imageDataAugmenter names) <-> DataOptions.
#include "config/fields.h"
#include "config/sections.h"

namespace dlt::cfg {

namespace {

using AO = AugmentOptions;
using DO = DataOptions;

const std::vector<FieldDef<AO>>& aug_fields() {
  static const std::vector<FieldDef<AO>> f = {
      bool_field<AO>("RandXReflection", [](auto& o) -> auto& { return o.rand_x_reflection; }),
      bool_field<AO>("RandYReflection", [](auto& o) -> auto& { return o.rand_y_reflection; }),
      range_field<AO>("RandRotation", false, [](auto& o) -> auto& { return o.rand_rotation; }),
      range_field<AO>("RandScale", true, [](auto& o) -> auto& { return o.rand_scale; }),
      range_field<AO>("RandXTranslation", false, [](auto& o) -> auto& { return o.rand_x_translation; }),
      range_field<AO>("RandYTranslation", false, [](auto& o) -> auto& { return o.rand_y_translation; }),
      int_field<AO>("PadCrop", 0, "an integer >= 0", [](auto& o) -> auto& { return o.pad_crop; }),
  };
  return f;
}

const std::vector<FieldDef<DO>>& data_fields() {
  static const std::vector<FieldDef<DO>> f = {
      string_field<DO>("train", [](auto& o) -> auto& { return o.train; }),
      string_field<DO>("validation", [](auto& o) -> auto& { return o.validation; }),
      double_field<DO>("ValidationSplit", 0, false, 1, true, "a number in [0, 1)",
                       [](auto& o) -> auto& { return o.validation_split; }),
      bool_field<DO>("IncludeSubfolders", [](auto& o) -> auto& { return o.include_subfolders; }),
      choice_field<DO>("LabelSource", {"foldernames"}, [](auto& o) -> auto& { return o.label_source; }),
      extension_list_field<DO>("FileExtensions", [](auto& o) -> auto& { return o.file_extensions; }),
      choice_field<DO>("OutputSizeMode", {"resize", "centercrop", "randcrop"},
                       [](auto& o) -> auto& { return o.output_size_mode; }),
      FieldDef<DO>{"Augmentation",
                   [](const ValueCtx& c, DO& o) {
                     read_section(c.value, c.origin, aug_fields(), "data.Augmentation",
                                  "data.Augmentation option", o.augment);
                   },
                   [](YAML::Emitter& e, const DO& o) {
                     write_section(e, aug_fields(), o.augment);
                   }},
      choice_field<DO>("OnBadImage", {"error", "skip"}, [](auto& o) -> auto& { return o.on_bad_image; }),
      choice_field<DO>("Cache", {"auto", "memory", "file", "none"}, [](auto& o) -> auto& { return o.cache; }),
      int_field<DO>("LoaderThreads", 0, "an integer >= 0", [](auto& o) -> auto& { return o.loader_threads; }),
  };
  return f;
}

std::string data_hint(const std::string& key) {
  if (key == "Train" || key == "Validation") return " (did you mean '" + to_lower(key) + "'?)";
  if (key == "ValidationData") return " (write validation: <folder>)";
  if (key == "DataAugmentation")  // augmentedImageDatastore's name
    return " (write Augmentation: {RandXReflection: true, ...}, imageDataAugmenter's options)";
  return "";
}

}  // namespace

void read_data(const YAML::Node& node, const Origin& origin, DataOptions& out) {
  read_section(node, origin, data_fields(), "data", "data key", out, data_hint);
}

void write_data(YAML::Emitter& e, const DataOptions& opts) { write_section(e, data_fields(), opts); }

std::vector<std::string> data_keys() { return field_names(data_fields()); }
std::vector<std::string> augmentation_keys() { return field_names(aug_fields()); }

std::string unknown_data_message(const std::string& key) {
  return unknown_key_message("data key", key, data_keys(), data_hint);
}
std::string unknown_augmentation_message(const std::string& key) {
  return unknown_key_message("data.Augmentation option", key, augmentation_keys(), nullptr);
}

}  // namespace dlt::cfg
