// (a) Every row of the backend agreement table (tests/backend/op_agreement.h) whose ops the
// device registered on the device under test, against the double-precision reference, at 1e-4 relative: the same bar as
// the CPU backend's. A failure names the row and the output (INFO).
#include <catch2/catch.hpp>

#include "backend/op_agreement.h"
#include "gpu/gpu_test_util.h"

namespace dlt::test::gpu {

TEST_CASE("gpu backend agrees with the reference ops (op_agreement.h)", "[gpu][backend]") {
  Backend& be = dut_backend();
  REQUIRE(be.device() == device_under_test());
  const auto rows = agreement_rows();
  REQUIRE(rows.size() >= 30);
  int other_device = 0;
  for (const AgreementRow& row : rows) {
    INFO("row: " << row.name << " on " << be.name());
    if (!runs_on(row, be)) {  // an op only another device registered (the CPU's fused batch norm pooling)
      ++other_device;
      continue;
    }
    row.run(be, 1e-4);
    be.synchronize();
  }
  CHECK(other_device <= 2);
}

TEST_CASE("gpu backend: ops reused across calls give the same results", "[gpu][backend]") {
  // Ops keep descriptors and chosen algorithms between calls: run each row twice on the same
  // backend (second run reuses the caching allocator's blocks and the cuDNN handles).
  Backend& be = dut_backend();
  const auto rows = agreement_rows();
  for (size_t i = 0; i < rows.size(); i += 5) {
    if (!runs_on(rows[i], be)) continue;
    INFO("row (second run): " << rows[i].name);
    rows[i].run(be, 1e-4);
  }
}

}  // namespace dlt::test::gpu
