// The summary reader behind `dltrain report`: a known summary.json file (the trainer's format)
// read back field by field, escapes and nulls, and malformed files rejected with the path.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "util/error.h"
#include "util/files.h"
#include "util/flat_json.h"
#include "util/json.h"

using namespace dlt;
namespace fs = std::filesystem;

namespace {

// A summary.json as the trainer writes it (one line, a nested "classes" array, a null).
const char* kSummary =
    "{\"status\":\"completed\",\"epochs\":3,\"iterations\":12,\"minibatch_accuracy\":87.5,"
    "\"minibatch_loss\":0.3125,\"validation_accuracy\":91.25,\"validation_loss\":null,"
    "\"total_learnables\":4370,\"memory_bytes\":20552,\"wall_seconds\":1.75,"
    "\"train_images_per_second\":1234.5,\"train_images\":80,\"validation_images\":16,"
    "\"skipped_images\":0,\"device\":\"cpu\",\"seed\":0,\"classes\":[\"circle\",\"a]b\"],"
    "\"model\":\"model.bin\"}\n";

std::string temp_file(const std::string& name, const std::string& text) {
  fs::path dir = fs::temp_directory_path() / ("dlt_report_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string path = (dir / name).string();
  write_file_atomic(path, text);
  return path;
}

}  // namespace

TEST_CASE("summary reader reads a known summary.json", "[train][report]") {
  std::string path = temp_file("summary.json", kSummary);
  FlatJson j = read_flat_json(path);
  CHECK(j.size() == 18);
  CHECK(json_string_or(j, "status", "") == "completed");
  CHECK(json_number_or(j, "epochs", -1) == 3);
  CHECK(json_number_or(j, "validation_accuracy", -1) == 91.25);
  CHECK(json_number_or(j, "minibatch_accuracy", -1) == 87.5);
  CHECK(json_number_or(j, "memory_bytes", -1) == 20552);
  CHECK(json_number_or(j, "total_learnables", -1) == 4370);
  CHECK(json_number_or(j, "wall_seconds", -1) == 1.75);
  CHECK(json_number_or(j, "train_images_per_second", -1) == 1234.5);
  // null and missing keys give the fallback; a string is not a number
  CHECK(std::isnan(json_number_or(j, "validation_loss", NAN)));
  CHECK(j.at("validation_loss").kind == JsonScalar::Kind::Null);
  CHECK(json_number_or(j, "no_such_key", 7) == 7);
  CHECK(json_number_or(j, "status", 7) == 7);
  // the nested array is kept as raw text, including the bracket inside a string
  CHECK(j.at("classes").kind == JsonScalar::Kind::Nested);
  CHECK(j.at("classes").text == "[\"circle\",\"a]b\"]");
  CHECK(json_string_or(j, "model", "") == "model.bin");
  fs::remove_all(fs::path(path).parent_path());
}

TEST_CASE("summary reader round-trips JsonWriter's escapes and numbers", "[train][report]") {
  JsonWriter w;
  w.begin_object().field("name", std::string("a \"b\"\\c\nd\te")).field("x", -1.5e-7).field("n", int64_t{-42});
  w.field("ok", true).field("no", false).key("inf").value(INFINITY).end_object();
  FlatJson j = parse_flat_json(w.str());
  CHECK(json_string_or(j, "name", "") == "a \"b\"\\c\nd\te");
  CHECK(json_number_or(j, "x", 0) == Approx(-1.5e-7));
  CHECK(json_number_or(j, "n", 0) == -42);
  CHECK(j.at("ok").kind == JsonScalar::Kind::Bool);
  CHECK(j.at("ok").number == 1);
  CHECK(j.at("no").number == 0);
  CHECK(j.at("inf").kind == JsonScalar::Kind::Null);  // non-finite numbers are written as null
  CHECK(parse_flat_json(" { } ").empty());
  CHECK(json_string_or(parse_flat_json("{\"u\":\"\\u00e9\\u0041\"}"), "u", "") ==
        "\xc3\xa9"
        "A");
}

TEST_CASE("summary reader rejects truncated and malformed files, naming them", "[train][report]") {
  std::string full = kSummary;
  std::string path = temp_file("truncated.json", full.substr(0, full.size() / 2));
  try {
    read_flat_json(path);
    FAIL("a truncated summary was accepted");
  } catch (const DataError& e) {
    CHECK(std::string(e.what()).find(path) != std::string::npos);
  }
  CHECK_THROWS_AS(parse_flat_json(""), DataError);
  CHECK_THROWS_AS(parse_flat_json("[1, 2]"), DataError);
  CHECK_THROWS_AS(parse_flat_json("{\"a\":}"), DataError);
  CHECK_THROWS_AS(parse_flat_json("{\"a\":1,}"), DataError);
  CHECK_THROWS_AS(parse_flat_json("{\"a\":1} trailing"), DataError);
  CHECK_THROWS_AS(parse_flat_json("{\"a\":[1,2}"), DataError);
  CHECK_THROWS_AS(parse_flat_json("{\"a\":tru}"), DataError);
  CHECK_THROWS_AS(read_flat_json(path + ".missing"), DataError);
  fs::remove_all(fs::path(path).parent_path());
}
