// CSV image tables (data/table.h, ImageDatastore::from_table, load_train_val): the format
// (quotes, CRLF, byte-order mark, blank lines), each bad input's one-line file:line error,
// subset / ValidationSplit keeping targets, and the regression augmentation check.
#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <set>

#include "data/table.h"
#include "data/train_val.h"
#include "data_test_util.h"
#include "util/error.h"

using namespace dlt;
using Catch::Matchers::Contains;
using dlt::test::TempDir;

namespace {

// Writes `names` as 4x4 grey PNGs in d and the table text as d/name.
std::string table(const TempDir& d, const std::string& name, const std::string& text,
                  const std::vector<std::string>& images = {"a.png", "b.png", "c.png"}) {
  for (size_t i = 0; i < images.size(); ++i) test::put_image(d / images[i], test::pattern_image(4, 4, 1, int(i)));
  test::write_file(d / name, text);
  return d / name;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("csv records: quotes, commas and line breaks inside quotes, CRLF, BOM, blank lines", "[data][table]") {
  const std::string text =
      "\xEF\xBB\xBF"
      "File, Angle\r\n\r\n\"a,b.png\",\"1.5\"\r\n  c.png , -2 \n\"q\"\"x\nline\",3\n\n";
  const auto recs = parse_csv(text, "t.csv");
  REQUIRE(recs.size() == 4);
  CHECK(recs[0].fields == std::vector<std::string>{"File", "Angle"});
  CHECK(recs[0].line == 1);
  CHECK(recs[1].fields == std::vector<std::string>{"a,b.png", "1.5"});
  CHECK(recs[1].line == 3);
  CHECK(recs[2].fields == std::vector<std::string>{"c.png", "-2"});  // spaces around unquoted fields trimmed
  CHECK(recs[2].line == 4);
  CHECK(recs[3].fields == std::vector<std::string>{"q\"x\nline", "3"});
  CHECK(recs[3].line == 5);
  CHECK(parse_csv("a,b", "t.csv").at(0).fields == std::vector<std::string>{"a", "b"});  // no final line break
  CHECK(parse_csv("a,\n", "t.csv").at(0).fields == std::vector<std::string>{"a", ""});

  CHECK(error_of([] { parse_csv("File,Angle\n\"x.png,1\n", "t.csv"); }) ==
        "t.csv:2: a quoted field is never closed (add the closing \")");
  CHECK_THAT(error_of([] { parse_csv("File,Angle\n\"x.png\"y,1\n", "t.csv"); }),
             Contains("t.csv:2: text after a closing quote"));
  CHECK_THAT(error_of([] { parse_csv("File,Angle\n\"a\nb\",1\nx\"y,2\n", "t.csv"); }),
             Contains("t.csv:4: a quote inside an unquoted field"));
}

TEST_CASE("regression table: responses, names, paths relative to the table", "[data][table]") {
  TempDir d;
  const std::string csv = table(d, "t.csv", "File,Angle,Scale\na.png,1.5,2\n\"b.png\",-3e1,0.25\r\nc.png,0,1\n");
  const ImageTable t = read_image_table(csv);
  CHECK(t.kind == TargetKind::kResponses);
  CHECK(t.response_names == std::vector<std::string>{"Angle", "Scale"});
  CHECK(t.width == 2);
  CHECK(t.files == std::vector<std::string>{d / "a.png", d / "b.png", d / "c.png"});
  CHECK(t.targets == std::vector<float>{1.5f, 2.f, -30.f, 0.25f, 0.f, 1.f});

  // Absolute paths are used as they are; the datastore gives the rows as targets.
  const std::string abs = table(d, "sub/abs.csv", "File,Angle\n" + (d / "b.png") + ",7\n", {});
  const ImageDatastore ds = ImageDatastore::from_table(abs, DataOptions{});
  CHECK(ds.target_kind() == TargetKind::kResponses);
  CHECK(ds.size() == 1);
  CHECK(ds.path(0) == d / "b.png");
  CHECK(ds.targets(0)[0] == 7.f);
  CHECK(ds.label(0) == 0);
  CHECK(ds.classes().empty());
  CHECK(ds.count_each_label().empty());
}

TEST_CASE("multi-label table: sorted classes, 0/1 rows, fixed class lists", "[data][table]") {
  TempDir d;
  const std::string csv = table(d, "t.csv", "File,Labels\na.png, square ;circle\nb.png,\nc.png,star;square;square\n");
  const ImageDatastore ds = ImageDatastore::from_table(csv, DataOptions{});
  CHECK(ds.target_kind() == TargetKind::kMultiLabel);
  CHECK(ds.classes() == std::vector<std::string>{"circle", "square", "star"});
  REQUIRE(ds.target_width() == 3);
  const std::vector<std::vector<float>> rows = {{1, 1, 0}, {0, 0, 0}, {0, 1, 1}};
  for (int64_t i = 0; i < 3; ++i) CHECK(std::vector<float>(ds.targets(i), ds.targets(i) + 3) == rows[size_t(i)]);
  CHECK(ds.count_each_label() == std::vector<int64_t>{1, 2, 1});

  DataOptions named;  // data.ClassNames keeps its order and may name classes no row has
  named.class_names = {"star", "square", "circle", "ring"};
  const ImageDatastore n = ImageDatastore::from_table(csv, named);
  CHECK(n.classes() == named.class_names);
  CHECK(std::vector<float>(n.targets(0), n.targets(0) + 4) == std::vector<float>{0, 1, 1, 0});

  // A validation table takes the training classes; a label outside them names file:line.
  const std::string val = table(d, "v.csv", "File,Labels\na.png,circle\nb.png,square;circle\n");
  const ImageDatastore v = ImageDatastore::from_table(val, DataOptions{}, &ds.classes());
  CHECK(v.classes() == ds.classes());
  CHECK(std::vector<float>(v.targets(1), v.targets(1) + 3) == std::vector<float>{1, 1, 0});
  CHECK(error_of([&] {
          table(d, "v2.csv", "File,Labels\na.png,circle\nb.png,hexagon;circle\n");
          ImageDatastore::from_table(d / "v2.csv", DataOptions{}, &ds.classes());
        }) == (d / "v2.csv") + ":3: label 'hexagon' is not one of the training classes (circle, square, star)");
  named.class_names = {"circle", "square"};
  CHECK_THAT(error_of([&] { ImageDatastore::from_table(csv, named); }),
             Contains((d / "t.csv") + ":4: label 'star' is not one of data.ClassNames (circle, square)"));
  CHECK_THAT(error_of([&] { ImageDatastore::from_table(table(d, "e.csv", "File,Labels\na.png,\n"), DataOptions{}); }),
             Contains("e.csv: no row has a label"));
}

TEST_CASE("bad tables: one line naming file:line and the fix", "[data][table]") {
  TempDir d;
  const std::string p = d / "t.csv";
  auto err = [&](const std::string& text) { return error_of([&] { read_image_table(table(d, "t.csv", text)); }); };
  CHECK(error_of([&] { read_image_table(d / "none.csv"); }) ==
        (d / "none.csv") + ": table does not exist (check the data path)");
  CHECK_THAT(err(""), Contains(p + ": empty table (write a header row"));
  CHECK_THAT(err("\n\n"), Contains(p + ": empty table"));
  CHECK(err("File,Angle\n") == p + ":1: the table has a header but no rows (add one row per image below it)");
  CHECK_THAT(err("File\na.png\n"), Contains(p + ":1: the header has 1 column;"));
  CHECK(err("File,Angle,Angle\na.png,1,2\n") == p + ":1: column name 'Angle' appears twice (columns 2 and 3; give each "
                                                    "column its own name)");
  CHECK(err("File,,Scale\na.png,1,2\n") == p + ":1: column 2 has no name (name every column)");
  CHECK(err("File,Angle\na.png,1\nb.png\n") ==
        p + ":3: 1 field but the header has 2 (File,Angle); quote a field that holds a comma");
  CHECK(err("File,Angle\na.png,1\nb.png,2,3\n") ==
        p + ":3: 3 fields but the header has 2 (File,Angle); quote a field that holds a comma");
  CHECK(err("File,Angle\na.png,1\nmissing.png,2\n") == p + ":3: image file 'missing.png' does not exist (looked for " +
                                                           (d / "missing.png") +
                                                           "; paths are relative to the table's folder)");
  CHECK(err("File,Angle\n,1\n") == p + ":2: no image file in the first column");
  CHECK(err("File,Angle\na.png,1\nb.png,abc\n") ==
        p + ":3: Angle is 'abc', not a finite number (every response must be a number)");
  for (const char* v : {"nan", "inf", "1e999", "", "1.5x"})
    CHECK_THAT(err(std::string("File,Angle\na.png,") + v + "\n"),
               Contains(p + ":2: Angle is '" + v + "', not a finite"));
  // A line break inside quotes counts: the row after it is reported at its own line.
  CHECK_THAT(err("File,Angle\n\"a.png\",\"1\n\"\nb.png,x\n"), Contains(p + ":2: Angle is '1\n'"));
  CHECK(error_of([&] {
          const std::vector<std::string> xy = {"x", "y"};
          read_image_table(table(d, "t.csv", "File,Labels\na.png,\"x;\ny\"\nb.png,zzz\n"), &xy);
        }) == p + ":4: label 'zzz' is not one of the training classes (x, y)");

  DataOptions named;
  named.class_names = {"a", "b"};
  CHECK_THROWS_AS(ImageDatastore::from_table(table(d, "r.csv", "File,Angle\na.png,1\n"), named), ConfigError);
}

TEST_CASE("table datastores: subset and ValidationSplit keep each row's targets", "[data][table]") {
  TempDir d;
  std::vector<std::string> files;
  std::string text = "File,Angle,Twice\n";
  for (int i = 0; i < 20; ++i) {
    files.push_back("img" + std::to_string(i) + ".png");
    text += files.back() + "," + std::to_string(i) + "," + std::to_string(2 * i) + "\n";
  }
  const std::string csv = table(d, "t.csv", text, files);
  const ImageDatastore ds = ImageDatastore::from_table(csv, DataOptions{});
  const ImageDatastore sub = ds.subset({5, 2, 17});
  REQUIRE(sub.size() == 3);
  CHECK(sub.target_kind() == TargetKind::kResponses);
  CHECK(sub.response_names() == ds.response_names());
  CHECK(sub.targets(0)[0] == 5.f);
  CHECK(sub.targets(1)[1] == 4.f);
  CHECK(sub.targets(2)[0] == 17.f);

  auto value_of = [&](const ImageDatastore& x, int64_t i) {  // the row's number from its file name
    const std::string name = std::filesystem::path(x.path(i)).stem().string();
    return float(std::stoi(name.substr(3)));
  };
  auto [a, b] = ds.split_each_label(0.7, 42);
  CHECK(a.size() == 14);
  CHECK(b.size() == 6);
  std::set<std::string> all;
  for (const auto* part : {&a, &b})
    for (int64_t i = 0; i < part->size(); ++i) {
      all.insert(part->path(i));
      CHECK(part->targets(i)[0] == value_of(*part, i));
      CHECK(part->targets(i)[1] == 2 * value_of(*part, i));
    }
  CHECK(all.size() == 20);
  auto [a2, b2] = ds.split_each_label(0.7, 42);  // reproducible from the seed
  CHECK(a2.paths() == a.paths());
  auto [a3, b3] = ds.split_each_label(0.7, 43);
  CHECK(a3.paths() != a.paths());
}

TEST_CASE("load_train_val with tables: validation, split, kinds, regression augmentation", "[data][table]") {
  TempDir d;
  std::vector<std::string> files;
  std::string reg = "File,Angle\n", multi = "File,Labels\n";
  for (int i = 0; i < 10; ++i) {
    files.push_back("i" + std::to_string(i) + ".png");
    reg += files.back() + "," + std::to_string(i) + "\n";
    multi += files.back() + "," + (i % 2 ? "odd" : "even") + (i % 3 ? "" : ";three") + "\n";
  }
  DataOptions o;
  o.train = table(d, "reg.csv", reg, files);
  o.validation_split = 0.3;
  TrainValData tv = load_train_val(o, 1);
  CHECK(tv.has_validation);
  CHECK(tv.train.size() == 7);
  CHECK(tv.validation.size() == 3);
  CHECK(tv.validation.target_kind() == TargetKind::kResponses);

  o.augment.rand_rotation[0] = -10;
  o.augment.rand_rotation[1] = 10;
  CHECK(error_of([&] { load_train_val(o, 1); }) ==
        "data.Augmentation.RandRotation moves the images of the regression table " + o.train +
            " but not its responses (Angle), so an augmented image would be trained with another image's answer: "
            "remove it, or set data.AugmentRegression: true when the responses do not depend on the geometry");
  CHECK_THROWS_AS(load_train_val(o, 1), ConfigError);
  o.augment_regression = true;
  CHECK_NOTHROW(load_train_val(o, 1));
  o.augment = AugmentOptions{};
  o.augment_regression = false;
  o.output_size_mode = OutputSizeMode::kRandCrop;
  CHECK_THAT(error_of([&] { load_train_val(o, 1); }), Contains("data.OutputSizeMode: randcrop moves the images"));
  o.output_size_mode = OutputSizeMode::kResize;

  // A multi-label table may be augmented; its validation table must have the same kind.
  DataOptions m;
  m.train = table(d, "multi.csv", multi, {});
  m.augment.rand_x_reflection = true;
  m.validation = o.train;
  CHECK(error_of([&] { load_train_val(m, 1); }) ==
        o.train + ": the validation table has responses (Angle) but the training table " + m.train +
            " has a Labels column (give both tables the same columns)");
  m.validation = table(d, "mval.csv", "File,Labels\ni0.png,three;even\ni1.png,odd\n", {});
  tv = load_train_val(m, 1);
  CHECK(tv.train.classes() == std::vector<std::string>{"even", "odd", "three"});
  CHECK(tv.validation.classes() == tv.train.classes());
  CHECK(std::vector<float>(tv.validation.targets(0), tv.validation.targets(0) + 3) == std::vector<float>{1, 0, 1});
  CHECK(geometric_augmentation(m) == "data.Augmentation.RandXReflection");
}
