// ImageDatastore: listing, labels, order, extensions, errors, splitEachLabel.
#include <catch2/catch.hpp>
#include <set>

#include "data/datastore.h"
#include "data_test_util.h"
#include "util/error.h"

using namespace dlt;
using dlt::test::TempDir;

namespace {

// root/{cat: 3 imgs (one nested), dog: 2 imgs}, plus a text file and a hidden folder.
void make_tree(const TempDir& d) {
  const Image img = test::pattern_image(4, 4, 3);
  test::put_image(d / "root/dog/b.png", img);
  test::put_image(d / "root/dog/a.PNG", img);
  test::put_image(d / "root/cat/z.bmp", img);
  test::put_image(d / "root/cat/sub/m.jpg", img);
  test::put_image(d / "root/cat/c.tga", img);
  test::write_file(d / "root/cat/notes.txt", "hello");
  test::put_image(d / "root/.hidden/x.png", img);
}

template <typename F>
std::string data_error(F&& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  return "no DataError";
}

}  // namespace

TEST_CASE("datastore lists class folders in sorted order with labels", "[data]") {
  TempDir d;
  make_tree(d);
  ImageDatastore ds(d / "root", DataOptions{});
  REQUIRE(ds.classes() == std::vector<std::string>{"cat", "dog"});
  REQUIRE(ds.size() == 5);
  CHECK(ds.path(0) == d / "root/cat/c.tga");
  CHECK(ds.path(1) == d / "root/cat/sub/m.jpg");
  CHECK(ds.path(2) == d / "root/cat/z.bmp");
  CHECK(ds.path(3) == d / "root/dog/a.PNG");  // extensions are case-insensitive
  CHECK(ds.path(4) == d / "root/dog/b.png");
  CHECK(ds.labels() == std::vector<int32_t>{0, 0, 0, 1, 1});
  CHECK(ds.count_each_label() == std::vector<int64_t>{3, 2});
}

TEST_CASE("datastore FileExtensions and IncludeSubfolders", "[data]") {
  TempDir d;
  make_tree(d);
  DataOptions o;
  o.file_extensions = {"png", ".BMP"};
  ImageDatastore ds(d / "root", o);
  CHECK(ds.size() == 3);
  CHECK(ds.path(0) == d / "root/cat/z.bmp");
  o.file_extensions = {".webp"};
  CHECK_THROWS_AS(ImageDatastore(d / "root", o), ConfigError);

  DataOptions flat;
  flat.include_subfolders = false;
  ImageDatastore one(d / "root/cat", flat);  // images directly in the folder, its own name
  REQUIRE(one.size() == 2);
  CHECK(one.classes() == std::vector<std::string>{"cat"});
  CHECK(one.num_classes() == 1);
}

TEST_CASE("datastore with the training class list", "[data]") {
  TempDir d;
  make_tree(d);
  ImageDatastore ds(d / "root", DataOptions{}, {"ant", "cat", "dog"});
  CHECK(ds.num_classes() == 3);
  CHECK(ds.labels() == std::vector<int32_t>{1, 1, 1, 2, 2});
  const std::string msg = data_error([&] { ImageDatastore bad(d / "root", DataOptions{}, {"cat", "cow"}); });
  CHECK(msg.find(d / "root/dog") != std::string::npos);
  CHECK(msg.find("not one of the training classes") != std::string::npos);
}

TEST_CASE("datastore errors name the path", "[data]") {
  TempDir d;
  std::string msg = data_error([&] { ImageDatastore ds(d / "missing", DataOptions{}); });
  CHECK(msg.find(d / "missing") != std::string::npos);
  CHECK(msg.find("does not exist") != std::string::npos);

  test::write_file(d / "file.png", "x");
  msg = data_error([&] { ImageDatastore ds(d / "file.png", DataOptions{}); });
  CHECK(msg.find("is not a folder") != std::string::npos);

  test::write_file(d / "texts/a/readme.txt", "x");
  std::filesystem::create_directories(d / "nothing");
  msg = data_error([&] { ImageDatastore ds(d / "nothing", DataOptions{}); });
  CHECK(msg.find(d / "nothing") != std::string::npos);
  CHECK(msg.find(".png") != std::string::npos);  // says what was looked for

  msg = data_error([&] { ImageDatastore ds(d / "texts", DataOptions{}); });
  CHECK(msg.find(d / "texts/a") != std::string::npos);
  CHECK(msg.find("no images") != std::string::npos);
}

TEST_CASE("split_each_label is per label, reproducible and disjoint", "[data]") {
  std::vector<std::string> paths;
  std::vector<int32_t> labels;
  for (int i = 0; i < 30; ++i) {
    paths.push_back("img" + std::to_string(i));
    labels.push_back(i < 20 ? 0 : 1);
  }
  auto ds = ImageDatastore::from_lists(paths, labels, {"a", "b"});
  auto [a, b] = ds.split_each_label(0.3, 42);
  CHECK(a.count_each_label() == std::vector<int64_t>{6, 3});
  CHECK(b.count_each_label() == std::vector<int64_t>{14, 7});
  std::set<std::string> all(a.paths().begin(), a.paths().end());
  all.insert(b.paths().begin(), b.paths().end());
  CHECK(all.size() == 30);
  auto [a2, b2] = ds.split_each_label(0.3, 42);
  CHECK(a2.paths() == a.paths());
  auto [a3, b3] = ds.split_each_label(0.3, 43);
  CHECK(a3.paths() != a.paths());
  CHECK(a.classes() == ds.classes());
}
