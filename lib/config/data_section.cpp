// The data: section (imageDatastore, splitEachLabel, imageDataAugmenter names, CSV tables for
// regression and multi-label data) <-> DataOptions.
#include <map>

#include "config/fields.h"
#include "config/sections.h"

namespace dlt::cfg {

namespace {

using AO = AugmentOptions;
using DO = DataOptions;

const std::vector<FieldDef<AO>>& aug_fields() {
  static const std::vector<FieldDef<AO>> f = {
      bool_field<AO>(
          "RandXReflection", [](auto& o) -> auto& { return o.rand_x_reflection; }),
      bool_field<AO>(
          "RandYReflection", [](auto& o) -> auto& { return o.rand_y_reflection; }),
      range_field<AO>(
          "RandRotation", false, [](auto& o) -> auto& { return o.rand_rotation; }),
      range_field<AO>(
          "RandScale", true, [](auto& o) -> auto& { return o.rand_scale; }),
      range_field<AO>(
          "RandXScale", true, [](auto& o) -> auto& { return o.rand_x_scale; }),
      range_field<AO>(
          "RandYScale", true, [](auto& o) -> auto& { return o.rand_y_scale; }),
      range_field<AO>(
          "RandXShear", false, [](auto& o) -> auto& { return o.rand_x_shear; }),
      range_field<AO>(
          "RandYShear", false, [](auto& o) -> auto& { return o.rand_y_shear; }),
      range_field<AO>(
          "RandXTranslation", false, [](auto& o) -> auto& { return o.rand_x_translation; }),
      range_field<AO>(
          "RandYTranslation", false, [](auto& o) -> auto& { return o.rand_y_translation; }),
      int_field<AO>(
          "PadCrop", 0, "an integer >= 0", [](auto& o) -> auto& { return o.pad_crop; }),
      nonneg_list_field<AO>(
          "FillValue", [](auto& o) -> auto& { return o.fill_value; }),
  };
  return f;
}

// train / validation: a folder of class folders (imageDatastore), a .csv table (regression,
// multi-label), or for segmentation a pair {images: DIR, labels: DIR} (imageDatastore +
// pixelLabelDatastore).
template <class F, class G>
FieldDef<DO> folder_or_pair_field(std::string name, F images, G labels) {
  return {
      name,
      [images, labels, name](const ValueCtx& c, DO& o) {
        images(o).clear();
        labels(o).clear();
        if (c.value.IsNull()) return;
        if (!c.value.IsMap()) {
          images(o) = c.scalar("a folder, a .csv table, or {images: DIR, labels: DIR} for segmentation");
          return;
        }
        for (const Entry& e : map_entries(c.value, c.origin, c.name)) {
          std::string* dst = e.key == "images" ? &images(o) : e.key == "labels" ? &labels(o) : nullptr;
          if (!dst)
            throw ConfigError(c.origin.at(e.key_node) + "unknown key '" + e.key + "' in " + c.name +
                              did_you_mean(e.key, {"images", "labels"}) + " (write {images: DIR, labels: DIR})");
          if (!e.value.IsScalar() || e.value.Scalar().empty())
            throw ConfigError(c.origin.loc(e.key_node, e.value).prefix() + c.name + "." + e.key + " must be a folder");
          *dst = e.value.Scalar();
        }
        if (images(o).empty() || labels(o).empty())
          throw ConfigError(c.origin.loc(c.key, c.value).prefix() + c.name + " needs both images and labels (" +
                            c.name + ": {images: DIR, labels: DIR})");
      },
      [images, labels](YAML::Emitter& e, const DO& o) {
        if (labels(o).empty()) {
          e << YAML::DoubleQuoted << images(o);
          return;
        }
        e << YAML::BeginMap << YAML::Key << "images" << YAML::Value << YAML::DoubleQuoted << images(o) << YAML::Key
          << "labels" << YAML::Value << YAML::DoubleQuoted << labels(o) << YAML::EndMap;
      }};
}

// ClassNames: a list of names (pixelLabelDatastore's classes).
FieldDef<DO> class_names_field() {
  return {"ClassNames",
          [](const ValueCtx& c, DO& o) {
            const std::string expect = "a list of class names, e.g. [sky, road, car]";
            o.class_names.clear();
            if (c.value.IsNull()) return;
            if (!c.value.IsSequence()) c.bad(expect);
            for (const auto& n : c.value) {
              if (!n.IsScalar() || n.Scalar().empty()) c.bad(expect);
              o.class_names.push_back(n.Scalar());
            }
          },
          [](YAML::Emitter& e, const DO& o) {
            e << YAML::Flow << YAML::BeginSeq;
            for (const auto& n : o.class_names) e << n;
            e << YAML::EndSeq;
          }};
}

// LabelIDs: one entry per class, MATLAB's pixelLabelIDs: an integer (index / grey labels), an
// RGB triplet [r, g, b], a list of integers [1, 7], or a list of triplets [[r, g, b], ...]. A
// flat list of exactly three numbers is a triplet (MATLAB's 1x3 row); three integer IDs for one
// class are written [[1], [2], [3]].
FieldDef<DO> label_ids_field() {
  return {"LabelIDs",
          [](const ValueCtx& c, DO& o) {
            const std::string expect =
                "a list with one entry per class: an integer, an RGB triplet [r, g, b], or a list of them";
            o.label_ids.clear();
            if (c.value.IsNull()) return;
            if (!c.value.IsSequence()) c.bad(expect);
            auto number = [&](const YAML::Node& n) {
              int64_t v;
              if (!n.IsScalar() || !parse_int(n.Scalar(), &v)) c.bad(expect);
              return v;
            };
            auto values = [&](const YAML::Node& n) {  // a scalar or a flat list of scalars
              std::vector<int64_t> v;
              if (n.IsScalar()) return std::vector<int64_t>{number(n)};
              for (const auto& x : list_items(n)) v.push_back(number(x));
              return v;
            };
            for (const auto& entry : c.value) {
              std::vector<std::vector<int64_t>> ids;
              if (entry.IsScalar()) {
                ids.push_back({number(entry)});
              } else if (!entry.IsSequence() || entry.size() == 0) {
                c.bad(expect);
              } else if (entry[0].IsSequence()) {
                for (const auto& x : entry) {
                  if (!x.IsSequence()) c.bad(expect);
                  ids.push_back(values(x));
                }
              } else {
                std::vector<int64_t> flat = values(entry);
                if (flat.size() == 3) {
                  ids.push_back(flat);
                } else {
                  for (int64_t v : flat) ids.push_back({v});
                }
              }
              o.label_ids.push_back(std::move(ids));
            }
          },
          [](YAML::Emitter& e, const DO& o) {
            e << YAML::Flow << YAML::BeginSeq;
            for (const auto& ids : o.label_ids) {
              if (ids.size() == 1 && ids[0].size() == 1) {
                e << ids[0][0];
                continue;
              }
              e << YAML::BeginSeq;
              for (const auto& v : ids) {
                e << YAML::BeginSeq;
                for (int64_t x : v) e << x;
                e << YAML::EndSeq;
              }
              e << YAML::EndSeq;
            }
            e << YAML::EndSeq;
          }};
}

const std::vector<FieldDef<DO>>& data_fields() {
  static const std::vector<FieldDef<DO>> f = {
      folder_or_pair_field(
          "train", [](auto& o) -> auto& { return o.train; }, [](auto& o) -> auto& { return o.train_labels; }),
      folder_or_pair_field(
          "validation", [](auto& o) -> auto& { return o.validation; },
          [](auto& o) -> auto& { return o.validation_labels; }),
      class_names_field(),
      label_ids_field(),
      double_field<DO>(
          "ValidationSplit", 0, false, 1, true, "a number in [0, 1)",
          [](auto& o) -> auto& { return o.validation_split; }),
      bool_field<DO>(
          "IncludeSubfolders", [](auto& o) -> auto& { return o.include_subfolders; }),
      choice_field<DO>(
          "LabelSource", [](auto& o) -> auto& { return o.label_source; }),
      extension_list_field<DO>(
          "FileExtensions", [](auto& o) -> auto& { return o.file_extensions; }),
      choice_field<DO>(
          "OutputSizeMode", [](auto& o) -> auto& { return o.output_size_mode; }),
      FieldDef<DO>{
          "Augmentation",
          [](const ValueCtx& c, DO& o) {
            read_section(c.value, c.origin, aug_fields(), "data.Augmentation", "data.Augmentation option", o.augment);
            const AugmentOptions& a = o.augment;
            const std::string at = c.origin.loc(c.key, c.value).prefix();
            if ((a.rand_scale[0] != 1 || a.rand_scale[1] != 1) &&
                (a.rand_x_scale[0] != 1 || a.rand_x_scale[1] != 1 || a.rand_y_scale[0] != 1 || a.rand_y_scale[1] != 1))
              throw ConfigError(at +
                                "data.Augmentation has RandScale and RandXScale / RandYScale: MATLAB's "
                                "imageDataAugmenter ignores the latter then; give one or the other");
            for (const auto& [name, r] : {std::pair{"RandXShear", a.rand_x_shear}, {"RandYShear", a.rand_y_shear}})
              if (!(r[0] > -90 && r[1] < 90))
                throw ConfigError(at + "data.Augmentation." + name +
                                  " must be a range of angles in (-90, 90) degrees, got [" + format_double(r[0]) +
                                  ", " + format_double(r[1]) + "]");
            for (double v : a.fill_value)
              if (v > 255)
                throw ConfigError(
                    at +
                    "data.Augmentation.FillValue must be pixel values in [0, 255] (one, or one per channel), got " +
                    format_double(v));
          },
          [](YAML::Emitter& e, const DO& o) { write_section(e, aug_fields(), o.augment); }},
      bool_field<DO>(
          "AugmentRegression", [](auto& o) -> auto& { return o.augment_regression; }),
      choice_field<DO>(
          "OnBadImage", [](auto& o) -> auto& { return o.on_bad_image; }),
      choice_field<DO>(
          "Cache", [](auto& o) -> auto& { return o.cache; }),
      int_field<DO>(
          "LoaderThreads", 0, "an integer >= 0", [](auto& o) -> auto& { return o.loader_threads; }),
      choice_field<DO>(
          "ResponseNormalization", [](auto& o) -> auto& { return o.response_normalization; }),
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
  // Where to point at: the key's line, or the data: section's when the key is absent.
  auto where = [&](const std::string& key) {
    if (node.IsMap())
      for (const Entry& e : map_entries(node, origin, "data"))
        if (e.key == key) return origin.loc(e.key_node, e.value).prefix();
    return origin.at(node);
  };
  const bool has_classes = !out.class_names.empty() || !out.label_ids.empty();
  if (out.table()) {  // regression / multi-label: the table's kind is known once it is read (data/table.h)
    if (!out.validation_labels.empty() || (!out.validation.empty() && !is_table_path(out.validation)))
      throw ConfigError(where("validation") +
                        "data.train is a .csv table, so data.validation must be one too (File,<responses> or "
                        "File,Labels, as data.train)");
    if (!out.label_ids.empty())
      throw ConfigError(where("LabelIDs") +
                        "LabelIDs is for pixel-label data (train: {images: DIR, labels: DIR}); a multi-label table "
                        "takes ClassNames only");
    return;
  }
  if (is_table_path(out.validation) && out.validation_labels.empty())
    throw ConfigError(where("validation") + "data.validation is a .csv table but data.train is " +
                      (out.segmentation()  ? "{images, labels}"
                       : out.train.empty() ? "not set"
                                           : "a folder") +
                      " (give data.train as a table too: File,<responses> or File,Labels)");
  if (!out.segmentation()) {
    if (!out.validation_labels.empty())
      throw ConfigError(where("validation") +
                        "data.validation has labels but data.train is a folder (write "
                        "train: {images: DIR, labels: DIR} too)");
    if (has_classes)
      throw ConfigError(where(out.class_names.empty() ? "LabelIDs" : "ClassNames") +
                        "ClassNames and LabelIDs are for pixel-label data (write train: {images: DIR, labels: "
                        "DIR}) and multi-label tables; classification takes its classes from the folder names");
    return;
  }
  if (!out.validation.empty() && out.validation_labels.empty())
    throw ConfigError(where("validation") + "data.validation must be {images: DIR, labels: DIR} when data.train is");
  if (out.class_names.empty())
    throw ConfigError(where("ClassNames") + "segmentation data needs ClassNames (e.g. ClassNames: [sky, road, car])");
  if (out.label_ids.empty())  // MATLAB requires pixelLabelIDs; index labels 0..K-1 is the common case
    for (size_t c = 0; c < out.class_names.size(); ++c) out.label_ids.push_back({{int64_t(c)}});
  const std::string problem = label_ids_problem(out.class_names, out.label_ids);
  if (!problem.empty()) throw ConfigError(where("LabelIDs") + "data.LabelIDs: " + problem);
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

namespace dlt {

namespace {
std::string value_str(const std::vector<int64_t>& v) {
  if (v.size() == 1) return std::to_string(v[0]);
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}
}  // namespace

std::string label_ids_problem(const std::vector<std::string>& class_names,
                              const std::vector<std::vector<std::vector<int64_t>>>& label_ids) {
  constexpr size_t kMaxClasses = 255;  // class indices 0..254 in 8-bit label images; 255: undefined
  const size_t n = class_names.size();
  if (n == 0) return "ClassNames is empty (list the classes, e.g. [sky, road])";
  if (n > kMaxClasses) return std::to_string(n) + " classes; at most " + std::to_string(kMaxClasses);
  if (label_ids.size() != n)
    return "ClassNames has " + std::to_string(n) + " classes but LabelIDs has " + std::to_string(label_ids.size()) +
           " entries (give one value or list of values per class)";
  bool seen_int = false, seen_rgb = false;
  std::map<std::vector<int64_t>, size_t> owner;
  for (size_t c = 0; c < n; ++c) {
    const std::string cls = "class '" + class_names[c] + "'";
    if (label_ids[c].empty()) return cls + " has no label value";
    for (const auto& v : label_ids[c]) {
      if (v.size() != 1 && v.size() != 3)
        return cls + " value " + value_str(v) + " must be one integer or an RGB triplet [r, g, b]";
      for (int64_t x : v)
        if (x < 0 || x > 255) return cls + " value " + value_str(v) + " is outside 0..255";
      (v.size() == 1 ? seen_int : seen_rgb) = true;
      if (seen_int && seen_rgb) return "LabelIDs mixes integers and RGB triplets (use one kind for every class)";
      auto [it, fresh] = owner.emplace(v, c);
      if (!fresh)
        return "value " + value_str(v) + " is given to both class '" + class_names[it->second] + "' and " + cls;
    }
  }
  return "";
}

}  // namespace dlt
