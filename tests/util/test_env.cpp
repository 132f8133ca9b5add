// util/env.h: the readers of DLT_* variables. Every boolean spelling, unset and empty, and
// the one-line error naming the variable for anything else; the whole-number reader's range.
#include <catch2/catch.hpp>

#include <string>

#include "support/env_var.h"
#include "util/env.h"
#include "util/error.h"

namespace dlt {

namespace {

const char* const kName = "DLT_TEST_ENV_HELPER";

std::string error_of(const char* value, bool integer = false) {
  test::EnvVar v(kName, value);
  try {
    if (integer)
      env_int(kName, 1, 64);
    else
      env_flag(kName);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("env_flag: one set of spellings for every boolean variable", "[util]") {
  for (const char* on : {"1", "true", "TRUE", "True", "on", "On", "yes", "YES"}) {
    test::EnvVar v(kName, on);
    INFO(on);
    CHECK(env_flag(kName) == std::optional<bool>(true));
  }
  for (const char* off : {"0", "false", "FALSE", "off", "OFF", "no", "No"}) {
    test::EnvVar v(kName, off);
    INFO(off);
    CHECK(env_flag(kName) == std::optional<bool>(false));
  }
  {
    test::EnvVar unset(kName, nullptr);
    CHECK_FALSE(env_flag(kName).has_value());
    CHECK(env_text(kName).empty());
  }
  {
    test::EnvVar empty(kName, "");
    CHECK_FALSE(env_flag(kName).has_value());
  }
}

TEST_CASE("env_flag: any other value is one line naming the variable", "[util]") {
  CHECK(error_of("2") == "DLT_TEST_ENV_HELPER is '2'; set it to 1 or 0 (true/false, on/off, yes/no), or unset it");
  CHECK(error_of("enabled") ==
        "DLT_TEST_ENV_HELPER is 'enabled'; set it to 1 or 0 (true/false, on/off, yes/no), or unset it");
  CHECK(error_of(" 1") != "no error");  // no trimming: what is set is what is read
}

TEST_CASE("env_int: whole numbers in range, else one line naming the variable and the range", "[util]") {
  {
    test::EnvVar v(kName, "16");
    CHECK(env_int(kName, 1, 64) == std::optional<int64_t>(16));
  }
  {
    test::EnvVar v(kName, "64");
    CHECK(env_int(kName, 1, 64) == std::optional<int64_t>(64));
  }
  {
    test::EnvVar v(kName, nullptr);
    CHECK_FALSE(env_int(kName, 1, 64).has_value());
  }
  CHECK(error_of("0", true) == "DLT_TEST_ENV_HELPER is '0'; set it to a whole number from 1 to 64, or unset it");
  CHECK(error_of("65", true) == "DLT_TEST_ENV_HELPER is '65'; set it to a whole number from 1 to 64, or unset it");
  CHECK(error_of("8 tiles", true) ==
        "DLT_TEST_ENV_HELPER is '8 tiles'; set it to a whole number from 1 to 64, or unset it");
}

}  // namespace dlt
