// (a) Every row of the backend agreement table (tests/backend/op_agreement.h) whose ops the
// device registered, on the device under test, against the double-precision reference, at 1e-4
// relative: the same bar as the CPU backend's. A failure names the row and the output (INFO).
// (b) The CUDA plugin registers a kernel for every op and light kernel the CPU has (op
// registry), and Backend::supports says which convolutions and fused ops the device runs.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <string>

#include "backend/cuda_plugin.h"
#include "backend/op_agreement.h"
#include "backend/op_registry.h"
#include "build_config.h"
#include "gpu/gpu_test_util.h"
#include "support/skip.h"

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

// A kernel added for the CPU alone fails here, on every machine of a CUDA build: this binary
// links the plugin, whose kernels registered themselves when it was loaded (no GPU needed).
// The fused batch norm + ReLU + max pooling is the CPU's alone (the GPU runs the three apart).
TEST_CASE("gpu backend: the CUDA plugin has a kernel for every op and light kernel of the CPU",
          "[gpu][backend][skippable]") {
  DLT_SKIP_IF(!DLT_HAVE_CUDA, "this build has no CUDA plugin (its GPU tests compile only)");
  INFO("plugin: " << cuda_plugin_error());
  REQUIRE(cuda_plugin() != nullptr);
  std::set<std::string> cpu, cuda;
  for (const op_registry::Entry& e : op_registry::all()) (e.device == DeviceType::kCpu ? cpu : cuda).insert(e.op);
  CHECK(cpu.size() >= 37);  // 11 heavy ops and 26 light kernels
  CHECK(cpu.count(BnReluMaxPoolDesc::kOp) == 1);
  CHECK(cuda.count(BnReluMaxPoolDesc::kOp) == 0);
  cpu.erase(BnReluMaxPoolDesc::kOp);
  std::ostringstream missing;
  for (const std::string& op : cpu)
    if (!cuda.count(op)) missing << " " << op;
  INFO("CPU kernels without a CUDA one:" << missing.str());
  CHECK(missing.str().empty());
}

// What the fusion plan asks before it plans a fused op: the CUDA convolution runs no depthwise
// post-op, scaled input, swish or residual sum, and a clipped ReLU only under CudaFusedClippedRelu; the CUDA
// backend has no fused batch norm + ReLU + max pooling. The CPU (the self-check) runs them all.
TEST_CASE("gpu backend: supports() names the fused ops the device runs", "[gpu][backend]") {
  const bool gpu = testing_a_gpu();
  Backend& be = dut_backend();
  ConvDesc plain{};
  plain.n = 2, plain.h = plain.w = 8, plain.c = 16, plain.k = 32, plain.fuse_relu = true;
  CHECK(be.supports(plain));
  ConvDesc dw = plain;
  dw.depthwise.kernel = 3, dw.depthwise.pad = 1, dw.depthwise.out_h = dw.depthwise.out_w = 8;
  CHECK(be.supports(dw) == !gpu);
  ConvDesc scaled = plain;
  scaled.fuse_relu = false, scaled.scaled_input = true;
  CHECK(be.supports(scaled) == !gpu);
  ConvDesc swish = plain;
  swish.fuse_relu = false, swish.inference_relu = swish.inference_post_act = true;
  swish.inference_act = ActKind::kSwish;
  CHECK(be.supports(swish) == !gpu);
  ConvDesc summed = plain;
  summed.fuse_relu = false, summed.inference_sum = summed.sum_relu = true;
  CHECK(be.supports(summed) == !gpu);
  ConvDesc clipped = plain;
  clipped.relu_ceiling = 6.f;
  CHECK(be.supports(clipped) == !gpu);
  CHECK(dut_backend_with([](BackendOptions& o) { o.cuda_fused_clipped_relu = true; }).supports(clipped));
  ConvDesc folded = plain;
  folded.folded_affine = true;
  CHECK(be.supports(folded) == !gpu);
  BnReluMaxPoolDesc pool{};
  pool.bn.n = 2, pool.bn.h = pool.bn.w = 8, pool.bn.c = 16, pool.kh = pool.kw = pool.stride_h = pool.stride_w = 2;
  CHECK(be.supports(pool) == !gpu);
  if (gpu) CHECK_THROWS_WITH(be.make(pool), Catch::Contains("no kernel for op 'batch_norm_relu_max_pool' on cuda"));
}

}  // namespace dlt::test::gpu
