// Batch::targets from table datastores: each row is the table's row of the image at the same
// place in the batch, under shuffling, background loading, two ranks and OnBadImage: skip.
// The image's own pixels say which table row it is (pixel (0, 0) = 10 x row), so the check
// does not rely on Batch::items.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "data/batch_loader.h"
#include "data_test_util.h"

using namespace dlt;
using dlt::test::TempDir;

namespace {

constexpr int kRows = 11;

// kRows 4x4 grey images, row i with pixel (0, 0) = 10 i, and File,A,B with A = i, B = -i / 2.
std::string make_table(const TempDir& d) {
  std::string text = "File,A,B\n";
  for (int i = 0; i < kRows; ++i) {
    const std::string f = "img" + std::to_string(i) + ".png";
    test::put_image(d / f, test::pattern_image(4, 4, 1, 10 * i));
    text += f + "," + std::to_string(i) + "," + std::to_string(-0.5 * i) + "\n";
  }
  test::write_file(d / "t.csv", text);
  return d / "t.csv";
}

LoaderOptions options(Shuffle shuffle, bool background) {
  LoaderOptions o;
  o.input = Shape{4, 4, 1};
  o.batch_size = 4;
  o.shuffle = shuffle;
  o.drop_last = false;
  o.training = false;
  o.seed = 5;
  o.threads = 2;
  o.background = background;
  o.cache = Cache::kNone;
  return o;
}

// Checks every image's target row against the row its pixels name; returns the rows seen.
std::vector<int> check_batch(const Batch& b) {
  REQUIRE(b.targets.defined());
  REQUIRE(b.targets.shape() == Shape({b.size, 2}));
  std::vector<int> rows;
  for (int64_t k = 0; k < b.size; ++k) {
    const int row = static_cast<int>(b.images.data()[k * 16]) / 10;
    CHECK(b.targets.data()[k * 2] == float(row));
    CHECK(b.targets.data()[k * 2 + 1] == -0.5f * float(row));
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

TEST_CASE("batch targets are the table rows of the batch's images, in batch order", "[data][table]") {
  TempDir d;
  const ImageDatastore ds = ImageDatastore::from_table(make_table(d), DataOptions{});
  for (bool background : {false, true}) {
    BatchLoader loader(ds, options(Shuffle::kEveryEpoch, background));
    std::vector<std::vector<int>> orders;
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      loader.start_epoch(epoch);
      Batch b;
      std::vector<int> order;
      while (loader.next(b)) {
        const auto rows = check_batch(b);
        order.insert(order.end(), rows.begin(), rows.end());
      }
      CHECK(std::set<int>(order.begin(), order.end()).size() == size_t(kRows));
      orders.push_back(order);
    }
    CHECK(orders[0] != orders[1]);  // shuffled differently each epoch
    std::vector<int> sorted(kRows);
    for (int i = 0; i < kRows; ++i) sorted[i] = i;
    CHECK(orders[0] != sorted);
  }
}

TEST_CASE("batch targets with two ranks: each rank's rows follow its images", "[data][table]") {
  TempDir d;
  const ImageDatastore ds = ImageDatastore::from_table(make_table(d), DataOptions{});
  std::vector<int> seen;
  for (int rank = 0; rank < 2; ++rank) {
    LoaderOptions o = options(Shuffle::kOnce, true);
    o.rank = rank;
    o.world_size = 2;
    BatchLoader loader(ds, o);
    loader.start_epoch(0);
    Batch b;
    int64_t batches = 0;
    while (loader.next(b)) {
      CHECK(b.size == (b.global_size + 1 - rank) / 2);  // 2 + 2, the last 3 as 2 + 1
      const auto rows = check_batch(b);
      seen.insert(seen.end(), rows.begin(), rows.end());
      ++batches;
    }
    CHECK(batches == 3);
  }
  std::sort(seen.begin(), seen.end());
  CHECK(seen.size() == size_t(kRows));
  CHECK(std::set<int>(seen.begin(), seen.end()).size() == size_t(kRows));
}

TEST_CASE("batch targets with OnBadImage skip: rows of the kept images only", "[data][table]") {
  TempDir d;
  const ImageDatastore ds = ImageDatastore::from_table(make_table(d), DataOptions{});
  test::write_file(d / "img3.png", "not a png");
  test::write_file(d / "img8.png", "not a png");
  LoaderOptions o = options(Shuffle::kOnce, true);
  o.on_bad_image = OnBadImage::kSkip;
  o.warn_skipped = false;
  BatchLoader loader(ds, o);
  loader.start_epoch(0);
  Batch b;
  std::vector<int> seen;
  while (loader.next(b)) {
    const auto rows = check_batch(b);
    seen.insert(seen.end(), rows.begin(), rows.end());
  }
  CHECK(loader.skipped_images() == 2);
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<int>{0, 1, 2, 4, 5, 6, 7, 9, 10});
}

TEST_CASE("multi-label batch targets are 0/1 per class, folder datastores have none", "[data][table]") {
  TempDir d;
  for (int i = 0; i < 3; ++i)
    test::put_image(d / ("m" + std::to_string(i) + ".png"), test::pattern_image(4, 4, 1, 10 * i));
  test::write_file(d / "m.csv", "File,Labels\nm0.png,b\nm1.png,a;c\nm2.png,\n");
  const ImageDatastore ds = ImageDatastore::from_table(d / "m.csv", DataOptions{});
  BatchLoader loader(ds, options(Shuffle::kOnce, false));
  Batch b;
  REQUIRE(loader.next(b));
  REQUIRE(b.targets.shape() == Shape({3, 3}));
  const std::vector<std::vector<float>> want = {{0, 1, 0}, {1, 0, 1}, {0, 0, 0}};  // classes a, b, c
  for (int64_t k = 0; k < 3; ++k) {
    const int row = static_cast<int>(b.images.data()[k * 16]) / 10;
    CHECK(std::vector<float>(b.targets.data() + k * 3, b.targets.data() + k * 3 + 3) == want[size_t(row)]);
  }

  test::put_image(d / "f/x/0.png", test::pattern_image(4, 4, 1));
  test::put_image(d / "f/y/0.png", test::pattern_image(4, 4, 1));
  const ImageDatastore folders(d / "f", DataOptions{});
  CHECK(folders.target_kind() == TargetKind::kClassLabel);
  CHECK(folders.target_width() == 0);
  BatchLoader plain(folders, options(Shuffle::kNever, false));
  Batch c;
  REQUIRE(plain.next(c));
  CHECK_FALSE(c.targets.defined());
}
