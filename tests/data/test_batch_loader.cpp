// BatchLoader: coverage per epoch, shapes, drop_last, shuffle modes, rank shards, thread
// independence, caches, bad images; compute_stats against a direct computation.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <set>

#include "data/batch_loader.h"
#include "data/decode.h"
#include "data_test_util.h"
#include "util/error.h"

using namespace dlt;
using dlt::test::TempDir;

namespace {

// 10 PNGs of 4x4x3 in 3 classes (4, 3, 3), pattern seeds 0..9.
ImageDatastore make_data(const TempDir& d) {
  const char* cls[] = {"a", "a", "a", "a", "b", "b", "b", "c", "c", "c"};
  for (int i = 0; i < 10; ++i)
    test::put_image(d / ("data/" + std::string(cls[i]) + "/" + std::to_string(i) + ".png"),
                    test::pattern_image(4, 4, 3, 20 * i));
  return ImageDatastore(d / "data", DataOptions{});
}

LoaderOptions base_options() {
  LoaderOptions o;
  o.input = Shape{4, 4, 3};
  o.batch_size = 4;
  o.shuffle = Shuffle::kNever;
  o.drop_last = false;
  o.training = false;
  o.seed = 7;
  o.threads = 2;
  o.cache = Cache::kNone;
  return o;
}

// Every batch of one epoch: (items, pixels).
std::vector<std::pair<std::vector<int64_t>, std::vector<float>>> epoch(BatchLoader& l, int64_t e) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<float>>> out;
  Batch b;
  l.start_epoch(e);
  while (l.next(b)) {
    REQUIRE(b.images.shape() == Shape({b.size, 4, 4, 3}));
    REQUIRE(b.labels.shape() == Shape({b.size}));
    REQUIRE(b.labels.dtype() == DType::kI32);
    out.push_back({b.items, std::vector<float>(b.images.data(), b.images.data() + b.images.numel())});
  }
  return out;
}

std::vector<int64_t> all_items(const std::vector<std::pair<std::vector<int64_t>, std::vector<float>>>& bs) {
  std::vector<int64_t> v;
  for (const auto& b : bs) v.insert(v.end(), b.first.begin(), b.first.end());
  return v;
}

}  // namespace

TEST_CASE("loader yields every item once with the right pixels and labels", "[data]") {
  TempDir d;
  auto ds = make_data(d);
  BatchLoader l(ds, base_options());
  CHECK(l.batches_per_epoch() == 3);
  Batch b;
  l.start_epoch(0);
  std::vector<int64_t> seen, sizes;
  while (l.next(b)) {
    sizes.push_back(b.size);
    for (int64_t k = 0; k < b.size; ++k) {
      const int64_t item = b.items[k];
      seen.push_back(item);
      CHECK(b.labels.data_i32()[k] == ds.label(item));
      const Image ref = decode_image(ds.path(item), 3);
      for (int64_t i = 0; i < 48; ++i) REQUIRE(b.images.data()[k * 48 + i] == float(ref.pixels[i]));
    }
  }
  CHECK(sizes == std::vector<int64_t>{4, 4, 2});
  CHECK(seen == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK_FALSE(l.next(b));
}

TEST_CASE("loader drop_last and shuffle modes", "[data]") {
  TempDir d;
  auto ds = make_data(d);
  auto o = base_options();
  o.drop_last = true;
  o.shuffle = Shuffle::kEveryEpoch;
  BatchLoader every(ds, o);
  CHECK(every.batches_per_epoch() == 2);
  auto e0 = all_items(epoch(every, 0)), e1 = all_items(epoch(every, 1));
  CHECK(e0.size() == 8);
  CHECK(e0 != e1);
  BatchLoader again(ds, o);
  CHECK(all_items(epoch(again, 1)) == e1);  // a function of (seed, epoch) only

  o.drop_last = false;
  o.shuffle = Shuffle::kOnce;
  BatchLoader once(ds, o);
  auto o0 = all_items(epoch(once, 0)), o1 = all_items(epoch(once, 1));
  CHECK(o0 == o1);
  CHECK(o0 != std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  std::sort(o0.begin(), o0.end());
  CHECK(o0 == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("loader shares", "[data]") {
  CHECK(BatchLoader::shares(10, 3, {}) == std::vector<int64_t>{4, 3, 3});
  CHECK(BatchLoader::shares(8, 2, {1, 3}) == std::vector<int64_t>{2, 6});
  CHECK(BatchLoader::shares(5, 2, {1, 1}) == std::vector<int64_t>{3, 2});
  CHECK(BatchLoader::shares(7, 3, {2, 0, 1}) == std::vector<int64_t>{5, 0, 2});
  CHECK(BatchLoader::shares(2, 3, {}) == std::vector<int64_t>{1, 1, 0});
}

TEST_CASE("rank shards are disjoint and complete per global batch", "[data]") {
  TempDir d;
  auto ds = make_data(d);
  for (const std::vector<double>& load : {std::vector<double>{}, std::vector<double>{1, 3, 2}}) {
    auto o = base_options();
    o.shuffle = Shuffle::kEveryEpoch;
    o.batch_size = 4;
    BatchLoader single(ds, o);
    const auto ref = epoch(single, 3);
    std::vector<std::vector<std::vector<int64_t>>> per_rank;
    for (int r = 0; r < 3; ++r) {
      o.rank = r;
      o.world_size = 3;
      o.worker_load = load;
      BatchLoader l(ds, o);
      REQUIRE(l.batches_per_epoch() == single.batches_per_epoch());
      std::vector<std::vector<int64_t>> batches;
      for (auto& b : epoch(l, 3)) batches.push_back(b.first);
      per_rank.push_back(batches);
    }
    for (size_t g = 0; g < ref.size(); ++g) {
      std::vector<int64_t> joined;
      for (int r = 0; r < 3; ++r) joined.insert(joined.end(), per_rank[r][g].begin(), per_rank[r][g].end());
      CHECK(joined == ref[g].first);  // rank order concatenated = the one-process batch
    }
    if (!load.empty()) CHECK(per_rank[1][0].size() == 2);  // 4 * 3/6
  }
}

TEST_CASE("loader output does not depend on threads or background", "[data]") {
  TempDir d;
  auto ds = make_data(d);
  auto o = base_options();
  o.training = true;
  o.shuffle = Shuffle::kEveryEpoch;
  o.augment.rand_x_reflection = true;
  o.augment.rand_rotation[0] = -30;
  o.augment.rand_rotation[1] = 30;
  o.augment.pad_crop = 1;
  o.threads = 1;
  o.background = false;
  BatchLoader a(ds, o);
  o.threads = 3;
  o.background = true;
  BatchLoader b(ds, o);
  const auto ea = epoch(a, 2), eb = epoch(b, 2);
  REQUIRE(ea.size() == eb.size());
  for (size_t g = 0; g < ea.size(); ++g) {
    CHECK(ea[g].first == eb[g].first);
    CHECK(ea[g].second == eb[g].second);
  }
  CHECK(epoch(a, 3)[0].second != ea[0].second);  // a new epoch draws new augmentation
}

TEST_CASE("memory and file caches skip decoding and give identical pixels", "[data]") {
  for (const char* mode : {"memory", "file"}) {
    TempDir d;
    auto ds = make_data(d);
    auto o = base_options();
    REQUIRE(parse_choice(mode, &o.cache));
    std::string cache_file;
    {
      BatchLoader l(ds, o);
      CHECK(l.cache_kind() == mode);
      const auto e0 = epoch(l, 0);
      CHECK(l.decoded_images() == 10);
      for (const auto& p : ds.paths()) std::filesystem::remove(p);  // only the cache is left
      const auto e1 = epoch(l, 1);
      CHECK(l.decoded_images() == 10);
      REQUIRE(e0.size() == e1.size());
      for (size_t g = 0; g < e0.size(); ++g) CHECK(e0[g].second == e1[g].second);
      cache_file = l.cache_file();
    }
    if (std::string(mode) == "file") {
      CHECK(std::filesystem::exists(cache_file));
      CHECK(std::filesystem::path(cache_file).parent_path() == d / "data");
    }
  }
}

TEST_CASE("a completed cache file is reused by a later loader", "[data]") {
  TempDir d;
  auto ds = make_data(d);
  auto o = base_options();
  o.cache = Cache::kFile;
  std::vector<std::pair<std::vector<int64_t>, std::vector<float>>> first;
  {
    BatchLoader l(ds, o);
    first = epoch(l, 0);
  }
  BatchLoader again(ds, o);
  const auto second = epoch(again, 0);
  CHECK(again.decoded_images() == 0);
  CHECK(second == first);
  test::put_image(d / "data/a/new.png", test::pattern_image(4, 4, 3, 1));
  ImageDatastore changed(d / "data", DataOptions{});  // another file list: another key
  BatchLoader other(changed, o);
  CHECK(other.cache_file() != again.cache_file());
}

TEST_CASE("bad images: error stops with the path, skip counts", "[data]") {
  TempDir d;
  make_data(d);
  test::write_file(d / "data/b/broken.png", "not a png");
  ImageDatastore ds(d / "data", DataOptions{});
  REQUIRE(ds.size() == 11);
  auto o = base_options();
  {
    BatchLoader l(ds, o);
    Batch b;
    l.start_epoch(0);
    try {
      while (l.next(b)) {
      }
      FAIL("no error");
    } catch (const DataError& e) {
      CHECK(std::string(e.what()).find(d / "data/b/broken.png") != std::string::npos);
    }
  }
  o.on_bad_image = OnBadImage::kSkip;
  BatchLoader l(ds, o);
  for (int e = 0; e < 2; ++e) {
    auto items = all_items(epoch(l, e));
    CHECK(items.size() == 10);
    CHECK(l.skipped_images() == 1);
  }
}

TEST_CASE("crop modes need images at least InputSize", "[data]") {
  TempDir d;
  auto ds = make_data(d);
  auto o = base_options();
  o.input = Shape{3, 3, 3};
  o.output_size_mode = OutputSizeMode::kCenterCrop;
  BatchLoader ok(ds, o);
  Batch b;
  ok.start_epoch(0);
  REQUIRE(ok.next(b));
  const Image ref = decode_image(ds.path(0), 3);
  CHECK(b.images.data()[0] == float(ref.at(0, 0)[0]));  // (4-3)/2 = 0 offset
  o.input = Shape{5, 4, 3};
  BatchLoader small(ds, o);
  small.start_epoch(0);
  try {
    small.next(b);
    FAIL("no error");
  } catch (const DataError& e) {
    const std::string m = e.what();
    CHECK(m.find(ds.path(0)) != std::string::npos);
    CHECK(m.find("4x4") != std::string::npos);
    CHECK(m.find("5x4") != std::string::npos);
  }
}

TEST_CASE("compute_stats matches a direct computation", "[data]") {
  TempDir d;
  auto ds = make_data(d);
  auto o = base_options();
  o.training = true;  // ignored: stats never augment
  o.augment.rand_x_reflection = true;
  const DatasetStats st = compute_stats(ds, o);
  CHECK(st.count == 10);
  std::vector<double> mean(48, 0), ch(3, 0), ch2(3, 0), lo(3, 255), hi(3, 0);
  for (int64_t i = 0; i < ds.size(); ++i) {
    const Image img = decode_image(ds.path(i), 3);
    for (int p = 0; p < 48; ++p) {
      mean[p] += img.pixels[p] / 10.0;
      ch[p % 3] += img.pixels[p] / 160.0;
      ch2[p % 3] += double(img.pixels[p]) * img.pixels[p] / 160.0;
      lo[p % 3] = std::min(lo[p % 3], double(img.pixels[p]));
      hi[p % 3] = std::max(hi[p % 3], double(img.pixels[p]));
    }
  }
  for (int p = 0; p < 48; ++p) CHECK(st.mean_image.data()[p] == Approx(mean[p]).epsilon(1e-6));
  for (int c = 0; c < 3; ++c) {
    CHECK(st.channel_mean[c] == Approx(ch[c]).epsilon(1e-9));
    CHECK(st.channel_std[c] == Approx(std::sqrt(ch2[c] - ch[c] * ch[c])).epsilon(1e-9));
    CHECK(st.channel_min[c] == lo[c]);  // rescale-*'s Min and Max
    CHECK(st.channel_max[c] == hi[c]);
    CHECK(lo[c] < hi[c]);
  }
}
