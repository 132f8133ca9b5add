// Shape: up to 6 dimensions of int64. Activations are always 4-D (N, H, W, C), NHWC in
// memory ("channels-last everywhere", on CPU and GPU alike); a per-image shape is (H, W, C).
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "util/check.h"

namespace dlt {

class Shape {
 public:
  static constexpr int kMaxRank = 6;
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) {
    DLT_CHECK(dims.size() <= kMaxRank, "rank too large");
    for (int64_t d : dims) dims_[rank_++] = d;
  }
  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= dims_[i];
    return n;
  }
  void push_back(int64_t d) {
    DLT_CHECK(rank_ < kMaxRank, "rank too large");
    dims_[rank_++] = d;
  }
  bool operator==(const Shape& o) const {
    if (rank_ != o.rank_) return false;
    for (int i = 0; i < rank_; ++i)
      if (dims_[i] != o.dims_[i]) return false;
    return true;
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }
  // "32x32x3"
  std::string str() const {
    std::string s;
    for (int i = 0; i < rank_; ++i) {
      if (i) s += "x";
      s += std::to_string(dims_[i]);
    }
    return s.empty() ? "scalar" : s;
  }

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// (N, H, W, C) activation shape from a per-image (H, W, C) shape.
inline Shape batch_shape(int64_t n, const Shape& image) {
  DLT_CHECK(image.rank() == 3, "per-image shape must be (H, W, C), got " << image.str());
  return Shape{n, image[0], image[1], image[2]};
}

}  // namespace dlt
