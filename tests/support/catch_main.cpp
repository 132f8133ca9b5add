// The Catch2 main for dltrain_tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
