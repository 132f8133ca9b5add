// (c) cuDNN's two ways to a convolution (CudnnEngines, cuda_conv_op.cpp): the agreement table's
// convolution rows through the legacy algorithms only, the graph API's plans only and the
// fastest of both, and the exhaustive search (knob variants), each also under Deterministic,
// against the double reference at 1e-4; and at real batch sizes (where cuDNN's heuristics offer
// other engines, e.g. NCHW kernels behind transposes, FFT, Winograd) the graph API's plans and
// the exhaustive search's and CudnnRuntimeCompiled's against the legacy algorithms on the same
// inputs, float32 and bfloat16.
#include <catch2/catch.hpp>

#include <limits>

#include "backend/backend_options.h"
#include "backend/op_agreement.h"
#include "gpu/gpu_test_util.h"

namespace dlt::test::gpu {

namespace {

// The device under test's backend with CudnnEngines, Deterministic, AllowReducedPrecisionReduction
// and CudnnRuntimeCompiled (off here unless asked, though on by default: each search as it is
// without the compiled engines; the compiled ones are compared on their own below).
Backend& with_engines(CudnnEngines engines, bool deterministic, bool reduced_precision_reduction = false,
                      bool runtime_compiled = false) {
  return dut_backend_with([&](BackendOptions& o) {
    o.cudnn_engines = engines;
    o.deterministic = deterministic;
    o.allow_reduced_precision_reduction = reduced_precision_reduction;
    o.cudnn_runtime_compiled = runtime_compiled;
  });
}

const char* engines_name(CudnnEngines e) {
  return e == CudnnEngines::kLegacy       ? "legacy"
         : e == CudnnEngines::kGraph      ? "graph"
         : e == CudnnEngines::kExhaustive ? "exhaustive"
                                          : "auto";
}

// y, dx, dw and db of one forward and backward of d on the device under test.
struct ConvResults {
  Vec y, dx, dw, db;
};
ConvResults run_conv(Backend& be, const ConvDesc& d, const Tensor& x, const Tensor& w, const Tensor& b,
                     const Tensor& dy) {
  const Device dev = be.device();
  Tensor y(Shape{d.n, d.out_h(), d.out_w(), d.k}, dev), dx(x.shape(), dev), dw(w.shape(), dev), db(b.shape(), dev);
  be.fill(y, std::numeric_limits<float>::quiet_NaN());  // an unwritten element fails the comparison
  be.fill(dx, std::numeric_limits<float>::quiet_NaN());
  be.fill(dw, 123.f);  // overwritten, not accumulated
  auto op = be.make(d);
  op->forward(x, w, b, y);
  op->backward_data(dy, w, dx);
  op->backward_weights(x, dy, dw, db);
  return {to_vec(y), to_vec(dx), to_vec(dw), to_vec(db)};
}

}  // namespace

TEST_CASE("gpu conv: each CudnnEngines path agrees with the reference ops", "[gpu][conv]") {
  const auto rows = agreement_rows();
  int ran = 0;
  for (CudnnEngines engines :
       {CudnnEngines::kLegacy, CudnnEngines::kGraph, CudnnEngines::kAuto, CudnnEngines::kExhaustive})
    for (bool deterministic : {false, true}) {
      Backend& be = with_engines(engines, deterministic);
      int conv_rows = 0;
      for (const AgreementRow& row : rows) {
        if (row.name.rfind("conv ", 0) != 0) continue;
        // exhaustive on the first four rows (it finalizes hundreds of plans per direction; every
        // one of them is checked in test_gpu_conv_plans.cpp)
        if (engines == CudnnEngines::kExhaustive && ++conv_rows > 4) continue;
        INFO("row: " << row.name << ", CudnnEngines " << engines_name(engines)
                     << (deterministic ? ", Deterministic" : ""));
        row.run(be, 1e-4);
        ++ran;
      }
      be.synchronize();
    }
  CHECK(ran >= 6 * 10 + 2 * 4);
}

TEST_CASE("gpu conv: graph-API plans at real batch sizes give the legacy algorithms' results", "[gpu][conv]") {
  Backend& be = dut_backend();
  auto conv = [](int64_t n, int64_t hw, int64_t c, int64_t k, int64_t f, int64_t stride, int64_t pad) {
    ConvDesc d;
    d.n = n, d.h = d.w = hw, d.c = c, d.k = k, d.kh = d.kw = f, d.stride_h = d.stride_w = stride;
    d.pad_t = d.pad_b = d.pad_l = d.pad_r = pad;
    return d;
  };
  struct Case {
    const char* name;
    ConvDesc d;
  };
  std::vector<Case> cases = {
      {"ResNet-18 stem 128x32x32x3 -> 64 3x3", conv(128, 32, 3, 64, 3, 1, 1)},
      {"128x32x32x64 -> 128 3x3 stride 2", conv(128, 32, 64, 128, 3, 2, 1)},
      {"128x16x16x128 -> 256 1x1 stride 2", conv(128, 16, 128, 256, 1, 2, 0)},
      {"128x8x8x256 -> 256 3x3", conv(128, 8, 256, 256, 3, 1, 1)},
      {"cifar10 conv2 256x16x16x32 -> 32 5x5 relu", conv(256, 16, 32, 32, 5, 1, 2)},
  };
  cases.back().d.fuse_relu = true;
  // Grouped and depthwise (MobileNet's, ResNeXt's) at batch sizes where other engines run.
  Case depthwise{"MobileNet depthwise 128x16x16x96 3x3 relu", conv(128, 16, 96, 96, 3, 1, 1)};
  depthwise.d.groups = 96, depthwise.d.fuse_relu = true;
  cases.push_back(depthwise);
  Case depthwise2{"depthwise 128x16x16x64 3x3 stride 2", conv(128, 16, 64, 64, 3, 2, 1)};
  depthwise2.d.groups = 64;
  cases.push_back(depthwise2);
  Case grouped{"ResNeXt 128x8x8x128 -> 128 3x3 in 32 groups", conv(128, 8, 128, 128, 3, 1, 1)};
  grouped.d.groups = 32;
  cases.push_back(grouped);
  Case mixed{"bfloat16 128x16x16x64 -> 64 3x3", conv(128, 16, 64, 64, 3, 1, 1)};
  mixed.d.bf16 = true;
  cases.push_back(mixed);
  for (const Case& c : cases) {
    const ConvDesc& d = c.d;
    INFO(c.name);
    Rng rng(29);
    const Device dev = be.device();
    const Tensor x = to_tensor(random_vec(d.n * d.h * d.w * d.c, rng), {d.n, d.h, d.w, d.c}, dev);
    const Tensor w = to_tensor(random_vec(d.weight_numel(), rng, -0.1, 0.1), {d.k, d.kh, d.kw, d.group_c()}, dev);
    const Tensor b = to_tensor(random_vec(d.k, rng), {d.k}, dev);
    Vec dy = random_vec(d.n * d.out_h() * d.out_w() * d.k, rng);
    ConvResults legacy, graph, exhaustive, reduced, compiled;
    {
      Backend& legacy_be = with_engines(CudnnEngines::kLegacy, false);
      // The fused relu's backward sees dy masked by y > 0 (as the layer passes it).
      Tensor probe(Shape{d.n, d.out_h(), d.out_w(), d.k}, dev);
      auto op = legacy_be.make(d);
      op->forward(x, w, b, probe);
      if (d.fuse_relu) dy = agreement::relu_mask(dy, to_vec(probe));
      legacy = run_conv(legacy_be, d, x, w, b, to_tensor(dy, probe.shape(), dev));
    }
    {
      graph = run_conv(with_engines(CudnnEngines::kGraph, false), d, x, w, b,
                       to_tensor(dy, {d.n, d.out_h(), d.out_w(), d.k}, dev));
    }
    {
      // The knob variants: tile shapes and split-k choices neither heuristics nor the defaults give.
      exhaustive = run_conv(with_engines(CudnnEngines::kExhaustive, false), d, x, w, b,
                            to_tensor(dy, {d.n, d.out_h(), d.out_w(), d.k}, dev));
    }
    {
      // CudnnRuntimeCompiled: the engines cuDNN compiles at run time join the timing (the fastest
      // depthwise kernels are among them).
      compiled = run_conv(with_engines(CudnnEngines::kAuto, false, false, true), d, x, w, b,
                          to_tensor(dy, {d.n, d.out_h(), d.out_w(), d.k}, dev));
    }
    // bfloat16 with AllowReducedPrecisionReduction: engines that reduce in less than float32 join
    // (as under PyTorch's autocast); float32 ignores the switch. Compared below when bfloat16.
    if (d.bf16) {
      reduced = run_conv(with_engines(CudnnEngines::kExhaustive, false, true), d, x, w, b,
                         to_tensor(dy, {d.n, d.out_h(), d.out_w(), d.k}, dev));
    }
    // Float32: sums in another order (FFT and Winograd transforms included) stay within 1e-4
    // normwise; bfloat16 outputs are float32 here, but y passes through cuDNN's bfloat16 output.
    const double tol = d.bf16 ? 1e-2 : 1e-4;
    const std::pair<const char*, std::pair<const Vec*, const Vec*>> outputs[] = {
        {"graph y", {&graph.y, &legacy.y}},
        {"graph dx", {&graph.dx, &legacy.dx}},
        {"graph dw", {&graph.dw, &legacy.dw}},
        {"graph db", {&graph.db, &legacy.db}},
        {"exhaustive y", {&exhaustive.y, &legacy.y}},
        {"exhaustive dx", {&exhaustive.dx, &legacy.dx}},
        {"exhaustive dw", {&exhaustive.dw, &legacy.dw}},
        {"exhaustive db", {&exhaustive.db, &legacy.db}},
        {"runtime-compiled y", {&compiled.y, &legacy.y}},
        {"runtime-compiled dx", {&compiled.dx, &legacy.dx}},
        {"runtime-compiled dw", {&compiled.dw, &legacy.dw}},
        {"runtime-compiled db", {&compiled.db, &legacy.db}}};
    for (const auto& [what, pair] : outputs) {
      const Comparison cmp = compare(*pair.first, *pair.second);
      INFO(what << ": " << cmp.str());
      CHECK(cmp.rel <= tol);
    }
    if (d.bf16) {
      const std::pair<const char*, std::pair<const Vec*, const Vec*>> reduced_outputs[] = {
          {"reduced-precision y", {&reduced.y, &legacy.y}},
          {"reduced-precision dx", {&reduced.dx, &legacy.dx}},
          {"reduced-precision dw", {&reduced.dw, &legacy.dw}},
          {"reduced-precision db", {&reduced.db, &legacy.db}}};
      for (const auto& [what, pair] : reduced_outputs) {
        const Comparison cmp = compare(*pair.first, *pair.second);
        INFO(what << ": " << cmp.str());
        CHECK(cmp.rel <= 2e-2);  // sums in bfloat16 over up to 128 * 16 * 16 products
      }
    }
  }
}

}  // namespace dlt::test::gpu
