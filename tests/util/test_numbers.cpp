// The one number parser (util/numbers.h): whole strings only, finite values, the integral
// spellings MATLAB users write (1e3, 100.0), and format_double's round trip.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "util/numbers.h"

using namespace dlt;

TEST_CASE("parse_int: whole integers, integral numbers, nothing else", "[util]") {
  int64_t v = -7;
  CHECK((parse_int("42", &v) && v == 42));
  CHECK((parse_int("+3", &v) && v == 3));
  CHECK((parse_int("-12", &v) && v == -12));
  CHECK((parse_int("1e3", &v) && v == 1000));
  CHECK((parse_int("100.0", &v) && v == 100));
  v = -7;
  for (const char* bad : {"", " 1", "1 ", "12abc", "1.5", "inf", "nan", "0x", "1e99"}) {
    INFO(bad);
    CHECK_FALSE(parse_int(bad, &v));
  }
  CHECK(v == -7);  // untouched on failure
}

TEST_CASE("parse_uint: up to UINT64_MAX, never negative", "[util]") {
  uint64_t v = 0;
  CHECK((parse_uint("18446744073709551615", &v) && v == std::numeric_limits<uint64_t>::max()));
  CHECK((parse_uint("2e3", &v) && v == 2000));
  CHECK_FALSE(parse_uint("-1", &v));
}

TEST_CASE("parse_double: finite numbers only; format_double round-trips", "[util]") {
  double d = 0;
  CHECK((parse_double("2.5", &d) && d == 2.5));
  CHECK((parse_double("1e-8", &d) && d == 1e-8));
  CHECK((parse_double("0x10", &d) && d == 16));
  for (const char* bad : {"", " 2", "2 ", "inf", "nan", "1e999", "abc"}) {
    INFO(bad);
    CHECK_FALSE(parse_double(bad, &d));
  }
  for (double x : {0.001, 1e-8, 2.0, 0.1 + 0.2, 123456789.125}) {
    double back = 0;
    REQUIRE(parse_double(format_double(x), &back));
    CHECK(back == x);
  }
  CHECK(format_double(std::numeric_limits<double>::infinity()) == "Inf");
  CHECK(is_inf_text("+.inf"));
  CHECK_FALSE(is_inf_text("infinity"));
}

TEST_CASE("parse_bool: MATLAB's and YAML's spellings", "[util]") {
  bool b = false;
  CHECK((parse_bool("On", &b) && b));
  CHECK((parse_bool("0", &b) && !b));
  CHECK_FALSE(parse_bool("2", &b));
}

TEST_CASE("parse_dims: HxW and HxWxC sizes of whole integers >= 1", "[util]") {
  std::vector<int64_t> v;
  CHECK((parse_dims("227x227x3", &v) && v == std::vector<int64_t>{227, 227, 3}));
  CHECK((parse_dims("32x32", &v) && v == std::vector<int64_t>{32, 32}));
  for (const char* bad : {"", "x", "32x", "32x0", "32x-1", "32x32junk", "1e3x2", " 3x3", "3x3 ", "99999999999x1"}) {
    INFO(bad);
    CHECK_FALSE(parse_dims(bad, &v));
  }
}
