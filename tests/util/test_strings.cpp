#include <catch2/catch.hpp>

#include "util/rng.h"
#include "util/strings.h"

using namespace dlt;

TEST_CASE("edit distance and did-you-mean", "[util]") {
  CHECK(edit_distance("NumFilters", "NumFilter") == 1);
  CHECK(edit_distance("abc", "ABC") == 0);
  CHECK(did_you_mean("NumFilter", {"NumFilters", "FilterSize", "Stride"}) == " (did you mean 'NumFilters'?)");
  CHECK(did_you_mean("xyzzy", {"NumFilters", "FilterSize"}).empty());
}

TEST_CASE("derived random streams are reproducible and distinct", "[util]") {
  Rng a = Rng::derive(42, {1, 2}), b = Rng::derive(42, {1, 2}), c = Rng::derive(42, {2, 1});
  uint64_t va = a.next_u64();
  CHECK(va == b.next_u64());
  CHECK(va != c.next_u64());
  Rng u(7);
  double sum = 0;
  for (int i = 0; i < 10000; ++i) sum += u.uniform();
  CHECK(sum / 10000 == Approx(0.5).margin(0.02));
}
