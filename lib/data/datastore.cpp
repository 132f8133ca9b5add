// ImageDatastore listing with std::filesystem; hidden entries (".name") are ignored.
#include "data/datastore.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <system_error>

#include "data/decode.h"
#include "data/table.h"
#include "util/error.h"
#include "util/rng.h"
#include "util/strings.h"

namespace dlt {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> normalized_extensions(const std::vector<std::string>& given) {
  std::vector<std::string> exts;
  for (const auto& e : given.empty() ? supported_image_extensions() : given) {
    std::string x = to_lower(e);
    if (!x.empty() && x[0] != '.') x = "." + x;
    const auto& ok = supported_image_extensions();
    if (std::find(ok.begin(), ok.end(), x) == ok.end())
      throw ConfigError("FileExtensions: '" + e + "' is not a format dltrain reads (use " + join(ok, " ") + ")");
    exts.push_back(x);
  }
  return exts;
}

bool hidden(const fs::path& p) {
  const std::string n = p.filename().string();
  return !n.empty() && n[0] == '.';
}

bool has_extension(const fs::path& p, const std::vector<std::string>& exts) {
  const std::string e = to_lower(p.extension().string());
  return std::find(exts.begin(), exts.end(), e) != exts.end();
}

// Sorted image files below `dir` (recursively or not).
std::vector<std::string> images_in(const fs::path& dir, bool recursive, const std::vector<std::string>& exts) {
  std::vector<std::string> out;
  std::error_code ec;
  auto take = [&](const fs::directory_entry& e) {
    if (!hidden(e.path()) && e.is_regular_file(ec) && has_extension(e.path(), exts)) out.push_back(e.path().string());
  };
  if (recursive) {
    fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec);
    if (ec) throw DataError(dir.string() + ": cannot list folder: " + ec.message());
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) throw DataError(dir.string() + ": cannot list folder: " + ec.message());
      if (it->is_directory(ec) && hidden(it->path())) {
        it.disable_recursion_pending();
        continue;
      }
      take(*it);
    }
  } else {
    for (const auto& e : fs::directory_iterator(dir, ec)) take(e);
    if (ec) throw DataError(dir.string() + ": cannot list folder: " + ec.message());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

ImageDatastore::ImageDatastore(const std::string& root, const DataOptions& options) { list(root, options, nullptr); }

ImageDatastore::ImageDatastore(const std::string& root, const DataOptions& options,
                               const std::vector<std::string>& classes) {
  list(root, options, &classes);
}

void ImageDatastore::list(const std::string& root, const DataOptions& options,
                          const std::vector<std::string>* fixed_classes) {
  root_ = root;
  std::error_code ec;
  const fs::path rp(root);
  if (!fs::exists(rp, ec)) throw DataError(root + ": image folder does not exist (check the data path)");
  if (!fs::is_directory(rp, ec)) throw DataError(root + ": is not a folder (give a folder of class folders)");
  const auto exts = normalized_extensions(options.file_extensions);
  const std::string ext_list = join(exts, " ");

  // (class name, sorted paths) in sorted class order.
  std::map<std::string, std::vector<std::string>> by_class;
  std::string root_name = rp.filename().string();
  if (root_name.empty()) root_name = rp.parent_path().filename().string();
  auto loose = images_in(rp, false, exts);
  if (!loose.empty()) by_class[root_name] = std::move(loose);
  if (options.include_subfolders) {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(rp, ec))
      if (!hidden(e.path()) && e.is_directory(ec)) dirs.push_back(e.path());
    if (ec) throw DataError(root + ": cannot list folder: " + ec.message());
    for (const auto& d : dirs) {
      auto files = images_in(d, true, exts);
      if (files.empty())
        throw DataError(d.string() + ": class folder has no images (looked for " + ext_list +
                        "; remove the folder or add images)");
      auto& slot = by_class[d.filename().string()];
      slot.insert(slot.end(), files.begin(), files.end());
      std::sort(slot.begin(), slot.end());
    }
  }
  if (by_class.empty())
    throw DataError(root + ": no images found (looked for " + ext_list +
                    (options.include_subfolders ? " in class subfolders" : " directly in it") + ")");

  if (fixed_classes) {
    classes_ = *fixed_classes;
  } else {
    for (const auto& [name, files] : by_class) classes_.push_back(name);
  }
  for (const auto& [name, files] : by_class) {
    auto it = std::find(classes_.begin(), classes_.end(), name);
    if (it == classes_.end()) {
      const fs::path where = name == root_name ? rp : rp / name;
      throw DataError(where.string() + ": label '" + name + "' is not one of the training classes (" +
                      join(classes_, ", ") + ")" + did_you_mean(name, classes_));
    }
    const auto label = static_cast<int32_t>(it - classes_.begin());
    for (const auto& f : files) {
      paths_.push_back(f);
      labels_.push_back(label);
    }
  }
  if (fixed_classes) {  // keep (label, path) order when the class list is not sorted
    std::vector<int64_t> order(paths_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return labels_[a] < labels_[b]; });
    *this = subset(order);
  }
}

std::vector<int64_t> ImageDatastore::count_each_label() const {
  std::vector<int64_t> counts(classes_.size(), 0);
  if (table_kind_ == TargetKind::kResponses) return counts;
  if (table_kind_ == TargetKind::kMultiLabel) {
    for (int64_t i = 0; i < size(); ++i)
      for (int64_t c = 0; c < target_width_; ++c) counts[c] += targets(i)[c] != 0;
    return counts;
  }
  for (int32_t l : labels_) ++counts[l];
  return counts;
}

TargetKind ImageDatastore::target_kind() const {
  if (table_kind_ != TargetKind::kClassLabel) return table_kind_;
  return has_pixel_labels() ? TargetKind::kPixelLabels : TargetKind::kClassLabel;
}

ImageDatastore ImageDatastore::from_table(const std::string& csv, const DataOptions& options,
                                          const std::vector<std::string>* classes) {
  const bool named = !classes && !options.class_names.empty();
  ImageTable t = read_image_table(csv,
                                  classes ? classes
                                  : named ? &options.class_names
                                          : nullptr,
                                  named ? "data.ClassNames" : "the training classes");
  if (t.kind == TargetKind::kResponses && named)
    throw ConfigError("data.ClassNames is for multi-label tables (File,Labels) but " + csv +
                      " is a regression table (its columns are responses: " + join(t.response_names, ", ") +
                      "); remove ClassNames");
  ImageDatastore ds;
  ds.root_ = fs::path(csv).parent_path().string();
  ds.paths_ = std::move(t.files);
  ds.labels_.assign(ds.paths_.size(), 0);
  ds.classes_ = std::move(t.classes);
  ds.table_kind_ = t.kind;
  ds.target_width_ = t.width;
  ds.targets_ = std::move(t.targets);
  ds.response_names_ = std::move(t.response_names);
  return ds;
}

ImageDatastore ImageDatastore::subset(const std::vector<int64_t>& indices) const {
  ImageDatastore out;
  out.root_ = root_;
  out.classes_ = classes_;
  out.pixel_ids_ = pixel_ids_;
  out.table_kind_ = table_kind_;
  out.target_width_ = target_width_;
  out.response_names_ = response_names_;
  out.paths_.reserve(indices.size());
  out.labels_.reserve(indices.size());
  out.targets_.reserve(indices.size() * size_t(target_width_));
  for (int64_t i : indices) {
    out.paths_.push_back(paths_[i]);
    out.labels_.push_back(labels_[i]);
    if (has_pixel_labels()) out.label_paths_.push_back(label_paths_[i]);
    out.targets_.insert(out.targets_.end(), targets(i), targets(i) + target_width_);
  }
  return out;
}

ImageDatastore ImageDatastore::pixel_pairs(const std::string& images, const std::string& labels,
                                           const DataOptions& options) {
  auto folder = [&](const std::string& dir, const char* what) {
    std::error_code ec;
    if (!fs::exists(dir, ec)) throw DataError(dir + ": " + what + " folder does not exist (check the data path)");
    if (!fs::is_directory(dir, ec)) throw DataError(dir + ": is not a folder (give the " + what + " folder)");
  };
  folder(images, "image");
  folder(labels, "label image");
  const auto exts = normalized_extensions(options.file_extensions);
  const auto image_files = images_in(images, options.include_subfolders, exts);
  const auto label_files = images_in(labels, options.include_subfolders, supported_image_extensions());
  if (image_files.empty()) throw DataError(images + ": no images found (looked for " + join(exts, " ") + ")");
  // Pair by stem: the path below the folder without its extension (a/b.jpg pairs a/b.png).
  auto stem_of = [](const std::string& root, const std::string& file) {
    fs::path rel = fs::path(file).lexically_relative(root);
    return rel.replace_extension().string();
  };
  std::map<std::string, std::string> by_stem;
  for (const auto& f : label_files) {
    auto [it, fresh] = by_stem.emplace(stem_of(labels, f), f);
    if (!fresh) throw DataError(f + ": two label images for one image (" + it->second + " too); keep one");
  }
  ImageDatastore ds;
  ds.root_ = images;
  ds.pixel_ids_ = std::make_shared<PixelLabelIds>(options.class_names, options.label_ids, "data.LabelIDs");
  ds.classes_ = options.class_names;
  std::map<std::string, std::string> image_of_stem;
  for (const auto& f : image_files) {
    const std::string stem = stem_of(images, f);
    auto [seen, fresh] = image_of_stem.emplace(stem, f);
    if (!fresh) throw DataError(f + ": two images for one label image (" + seen->second + " too); keep one");
    auto it = by_stem.find(stem);
    if (it == by_stem.end())
      throw DataError(f + ": no label image for it in " + labels + " (expected " + (fs::path(labels) / stem).string() +
                      ".png)");
    ds.paths_.push_back(f);
    ds.labels_.push_back(0);
    ds.label_paths_.push_back(it->second);
    by_stem.erase(it);
  }
  if (!by_stem.empty())
    throw DataError(by_stem.begin()->second + ": label image with no image in " + images + " (" +
                    std::to_string(by_stem.size()) + " such; remove them or add the images)");
  return ds;
}

std::pair<ImageDatastore, ImageDatastore> ImageDatastore::split_each_label(double fraction, uint64_t seed) const {
  if (!(fraction >= 0 && fraction <= 1))
    throw ConfigError("splitEachLabel fraction " + std::to_string(fraction) + " is outside [0, 1]");
  // Tables: one group, the whole table (a multi-label row has no single label to split by).
  const bool table = table_kind_ != TargetKind::kClassLabel;
  std::vector<std::vector<int64_t>> per_label(table ? 1 : classes_.size());
  for (int64_t i = 0; i < size(); ++i) per_label[table ? 0 : labels_[i]].push_back(i);
  std::vector<char> first(paths_.size(), 0);
  for (size_t l = 0; l < per_label.size(); ++l) {
    auto& idx = per_label[l];
    Rng rng = Rng::derive(seed, {0x5711u, l});
    for (size_t k = idx.size(); k > 1; --k) std::swap(idx[k - 1], idx[rng.below(k)]);
    const auto take = static_cast<size_t>(std::llround(fraction * double(idx.size())));
    for (size_t k = 0; k < take; ++k) first[idx[k]] = 1;
  }
  std::vector<int64_t> a, b;
  for (int64_t i = 0; i < size(); ++i) (first[i] ? a : b).push_back(i);
  return {subset(a), subset(b)};
}

ImageDatastore ImageDatastore::from_lists(std::vector<std::string> paths, std::vector<int32_t> labels,
                                          std::vector<std::string> classes, std::string root) {
  if (paths.size() != labels.size())
    throw DataError("datastore: " + std::to_string(paths.size()) + " paths but " + std::to_string(labels.size()) +
                    " labels");
  ImageDatastore ds;
  ds.root_ = std::move(root);
  ds.paths_ = std::move(paths);
  ds.labels_ = std::move(labels);
  ds.classes_ = std::move(classes);
  return ds;
}

}  // namespace dlt
