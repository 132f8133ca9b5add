// Runs the backend agreement table (op_agreement.h) on the CPU backend.
#include <catch2/catch.hpp>

#include "backend/cpu/cpu_backend.h"
#include "backend/op_agreement.h"

namespace dlt::test {

TEST_CASE("cpu backend agrees with the reference ops", "[backend][cpu]") {
  Backend& be = cpu_backend();
  for (const AgreementRow& row : agreement_rows()) {
    INFO("row: " << row.name);
    row.run(be, 1e-4);
  }
}

TEST_CASE("cpu conv and batch norm agree with the reference on one thread", "[backend][cpu]") {
  Backend& be = cpu_backend();
  const int threads = cpu_threads();
  cpu_set_threads(1);
  for (const AgreementRow& row : agreement_rows()) {
    if (row.name.rfind("conv", 0) != 0 && row.name.rfind("batch_norm", 0) != 0) continue;
    INFO("row (1 thread): " << row.name);
    row.run(be, 1e-4);
  }
  cpu_set_threads(threads);
}

}  // namespace dlt::test
