// ImageDatastore: MATLAB's imageDatastore with LabelSource foldernames. Lists (path, label)
// pairs from a folder tree in a deterministic order (sorted class names, then sorted paths)
// and splits them per label (splitEachLabel). Lists files only; decoding is decode.h's job.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/options.h"
#include "data/pixel_labels.h"

namespace dlt {

class ImageDatastore {
 public:
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
  // Sorted class names; label(i) indexes this list.
  const std::vector<std::string>& classes() const { return classes_; }
  int64_t num_classes() const { return static_cast<int64_t>(classes_.size()); }
  std::vector<int64_t> count_each_label() const;
  const std::string& root() const { return root_; }

  // splitEachLabel(ds, fraction, 'randomized'): per label, round(fraction * count) images
  // chosen at random (reproducible from seed) go to the first datastore, the rest to the
  // second. Both keep the full class list and the datastore's order.
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
};

}  // namespace dlt
