// ImageDatastore: MATLAB's imageDatastore with LabelSource foldernames. Lists (path, label)
// pairs from a folder tree in a deterministic order (sorted class names, then sorted paths)
// and splits them per label (splitEachLabel); or (path, target row) pairs from a CSV table
// (regression responses or multi-label 0/1 rows, data/table.h). Lists files only; decoding is
// decode.h's job.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/options.h"
#include "data/pixel_labels.h"

namespace dlt {

// What a datastore's images are labelled with: a class per image (class folders, label(i)),
// a label image per image (pixel_pairs), or a target row per image from a table (targets(i)):
// responses (regression) or 0/1 per class (multi-label).
enum class TargetKind { kClassLabel, kPixelLabels, kResponses, kMultiLabel };

class ImageDatastore {
 public:
  using TargetKind = ::dlt::TargetKind;
  ImageDatastore() = default;
  // Lists `root` per options (IncludeSubfolders, LabelSource, FileExtensions). With
  // IncludeSubfolders the class folders are the direct children of root and images anywhere
  // below them take that child's name; without it the images directly in root are listed and
  // labelled with root's own name (as MATLAB does). Throws DataError naming the path for a
  // missing root, a root that is not a folder, no images found, or an empty class folder.
  ImageDatastore(const std::string& root, const DataOptions& options);
  // Same, labelling with a fixed class list (validation/test data with the training classes):
  // a class folder whose name is not in `classes` is a DataError naming it.
  ImageDatastore(const std::string& root, const DataOptions& options, const std::vector<std::string>& classes);

  int64_t size() const { return static_cast<int64_t>(paths_.size()); }
  bool empty() const { return paths_.empty(); }
  const std::string& path(int64_t i) const { return paths_[i]; }
  int32_t label(int64_t i) const { return labels_[i]; }
  const std::vector<std::string>& paths() const { return paths_; }
  const std::vector<int32_t>& labels() const { return labels_; }
  // Sorted class names; label(i) indexes this list. Multi-label tables: the classes the 0/1
  // columns of targets(i) stand for. Regression tables: empty.
  const std::vector<std::string>& classes() const { return classes_; }
  int64_t num_classes() const { return static_cast<int64_t>(classes_.size()); }
  // Images per class; multi-label tables: images that have each class; regression: empty.
  std::vector<int64_t> count_each_label() const;
  const std::string& root() const { return root_; }

  // splitEachLabel(ds, fraction, 'randomized'): per label, round(fraction * count) images
  // chosen at random (reproducible from seed) go to the first datastore, the rest to the
  // second. Both keep the full class list and the datastore's order. Tables: round(fraction *
  // size()) rows at random over the whole table (not per label); targets go with their rows.
  std::pair<ImageDatastore, ImageDatastore> split_each_label(double fraction, uint64_t seed) const;
  // The datastore restricted to the given indices (in that order).
  ImageDatastore subset(const std::vector<int64_t>& indices) const;

  // Segmentation (imageDatastore + pixelLabelDatastore): the images under `images` (with
  // IncludeSubfolders, recursively) paired by file stem with the label images under `labels`.
  // classes() are ClassNames; label(i) is 0. Throws DataError naming the file for an image
  // without a label image or a label image without an image (two files with one stem count as
  // both), and for missing or empty folders; ConfigError for bad ClassNames / LabelIDs.
  static ImageDatastore pixel_pairs(const std::string& images, const std::string& labels, const DataOptions& options);
  bool has_pixel_labels() const { return !label_paths_.empty(); }
  const std::string& label_path(int64_t i) const { return label_paths_[i]; }
  const std::vector<std::string>& label_paths() const { return label_paths_; }
  const PixelLabelIds& pixel_ids() const { return *pixel_ids_; }

  // A CSV table (data/table.h's format): the first column the image files (relative to the
  // CSV's folder, or absolute), then either responses (numbers) or one `Labels` column. A
  // multi-label table's classes are `*classes` when given (validation tables: the training
  // classes), else options.class_names when set, else the sorted union of its labels. Throws
  // DataError / ConfigError naming file:line (table.h lists the cases).
  static ImageDatastore from_table(const std::string& csv, const DataOptions& options,
                                   const std::vector<std::string>* classes = nullptr);
  TargetKind target_kind() const;
  int64_t target_width() const { return target_width_; }  // responses: R; multi-label: C; else 0
  // Row i of the targets (target_width() floats): R responses, or C values 0/1. Tables only.
  const float* targets(int64_t i) const { return targets_.data() + i * target_width_; }
  const std::vector<std::string>& response_names() const { return response_names_; }  // regression

  // Builds a datastore from explicit lists (tests, converters). Labels index `classes`.
  static ImageDatastore from_lists(std::vector<std::string> paths, std::vector<int32_t> labels,
                                   std::vector<std::string> classes, std::string root = "");

 private:
  void list(const std::string& root, const DataOptions& options, const std::vector<std::string>* fixed_classes);

  std::string root_;
  std::vector<std::string> paths_;
  std::vector<int32_t> labels_;
  std::vector<std::string> classes_;
  std::vector<std::string> label_paths_;  // segmentation: one label image per path
  std::shared_ptr<const PixelLabelIds> pixel_ids_;
  TargetKind table_kind_ = TargetKind::kClassLabel;  // kResponses / kMultiLabel for tables
  int64_t target_width_ = 0;
  std::vector<float> targets_;  // (size(), target_width_)
  std::vector<std::string> response_names_;
};

}  // namespace dlt
