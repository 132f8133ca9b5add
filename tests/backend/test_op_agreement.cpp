// Runs the backend agreement table (op_agreement.h) and the gradient table (gradient_rows.h) on
// the CPU backend, and checks that both cover every kernel the CPU registered (op_registry.h):
// a new op's kernel fails here until its rows exist.
#include <catch2/catch.hpp>

#include <set>

#include "backend/cpu/cpu_backend.h"
#include "backend/gradient_rows.h"
#include "backend/op_agreement.h"
#include "backend/op_registry.h"

namespace dlt::test {

TEST_CASE("cpu backend agrees with the reference ops", "[backend][cpu]") {
  Backend& be = cpu_backend();
  for (const AgreementRow& row : agreement_rows()) {
    INFO("row: " << row.name);
    REQUIRE(runs_on(row, be));
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

TEST_CASE("every registered cpu kernel has an agreement row", "[backend][cpu][registry]") {
  std::set<std::string> covered;
  for (const AgreementRow& row : agreement_rows()) covered.insert(row.ops.begin(), row.ops.end());
  int64_t kernels = 0;
  for (const op_registry::Entry& e : op_registry::all()) {
    if (e.device != DeviceType::kCpu) continue;
    ++kernels;
    INFO("op '" << e.op << "' (" << e.type << ") has a cpu kernel but no row in tests/backend/op_agreement.h");
    CHECK(covered.count(e.op) == 1);
  }
  CHECK(kernels >= 37);  // 11 heavy ops and 26 light kernels when this test was written
}

TEST_CASE("the reference gradients agree with finite differences", "[backend][registry]") {
  for (const GradientRow& row : gradient_rows()) check_gradient(row);
}

TEST_CASE("every registered op with a backward pass has a gradient row", "[backend][cpu][registry]") {
  std::set<std::string> covered, names;
  for (const GradientRow& row : gradient_rows()) covered.insert(row.op);
  for (const op_registry::Entry& e : op_registry::all()) names.insert(e.op);
  for (const op_registry::Entry& e : op_registry::all()) {
    const bool has_backward = e.heavy || names.count(e.op + "_backward") == 1;
    if (e.device != DeviceType::kCpu || !has_backward) continue;
    INFO("op '" << e.op << "' has a backward pass but no row in tests/backend/gradient_rows.h");
    CHECK(covered.count(e.op) == 1);
  }
}

}  // namespace dlt::test
