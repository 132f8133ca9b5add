// Which convolution implementation the CPU backend picks: Winograd for 3x3 stride-1 convs
// with 32+ channels where oneDNN's ISA has it, dltrain's own Winograd for those with 64+
// channels on AVX2 CPUs, direct NHWC otherwise (ConvolutionAlgorithm: direct forces direct);
// and which ISA that is.
#include <strings.h>
#include <unistd.h>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "backend/backend_options.h"
#include "backend/cpu/cpu_backend.h"

using namespace dlt;

namespace {

// What oneDNN itself reports while f runs: its verbose lines ("onednn_verbose,exec,cpu,
// convolution,jit_wino_4x3:avx512_core,forward_training,..."), captured from stdout.
std::vector<std::string> onednn_exec_lines(const std::function<void()>& f) {
  std::fflush(stdout);
  char path[] = "/tmp/dlt-onednn-verbose-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  const int saved = ::dup(1);
  ::dup2(fd, 1);
  dnnl::set_verbose(1);
  f();
  dnnl::set_verbose(0);
  std::fflush(stdout);
  ::dup2(saved, 1);
  ::close(saved);
  ::close(fd);
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (line.find("_verbose,exec,cpu,convolution,") != std::string::npos) lines.push_back(line);
  std::remove(path);
  return lines;
}

// The CPU's own features and the cap, not cpu_isa(): whether oneDNN may run avx512_core.
bool avx512_core_allowed() {
  const char* cap = std::getenv("DNNL_MAX_CPU_ISA");
  const bool capped =
      cap && (strcasecmp(cap, "AVX2") == 0 || strcasecmp(cap, "AVX") == 0 || strcasecmp(cap, "SSE41") == 0);
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && !capped;
}

}  // namespace

// The kernel choice checked against oneDNN's own report of what it executed (not dltrain's
// flags): a 3x3 stride-1 64->64 convolution runs oneDNN's Winograd where oneDNN may use
// avx512_core; on AVX2 with FMA (or under DNNL_MAX_CPU_ISA=AVX2) dltrain's own Winograd, so oneDNN
// executes no convolution forward at all; a stride-2 one is a oneDNN convolution without Winograd.
TEST_CASE("CPU conv: the kernel oneDNN reports executing is Winograd where expected", "[backend]") {
  ConvDesc d;
  d.n = 2, d.h = d.w = 16, d.c = 64, d.k = 64, d.kh = d.kw = 3;
  d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
  auto forward = [](const ConvDesc& c) {
    return onednn_exec_lines([&c] {
      auto op = cpu_backend().make(c);
      Tensor x(Shape{c.n, c.h, c.w, c.c}), w(Shape{c.k, c.kh, c.kw, c.c}), b(Shape{c.k});
      Tensor y(Shape{c.n, c.out_h(), c.out_w(), c.k});
      op->forward(x, w, b, y);
    });
  };
  auto with = [](const std::vector<std::string>& lines, const char* what) {
    int n = 0;
    for (const std::string& l : lines) n += l.find(what) != std::string::npos;
    return n;
  };
  const std::vector<std::string> wino = forward(d);
  INFO("oneDNN reports: " << (wino.empty() ? std::string("no convolution") : wino[0]));
  if (avx512_core_allowed()) {
    CHECK(with(wino, "forward") >= 1);
    CHECK(with(wino, "wino") == with(wino, "forward"));
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    CHECK(with(wino, "forward") == 0);  // dltrain's own Winograd
  }
  d.stride_h = d.stride_w = 2;
  const std::vector<std::string> strided = forward(d);
  INFO("stride 2, oneDNN reports: " << (strided.empty() ? std::string("no convolution") : strided[0]));
  CHECK(with(strided, "forward") >= 1);
  CHECK(with(strided, "wino") == 0);
}

TEST_CASE("CPU conv picks Winograd for 3x3 stride-1 convs with 32+ channels where oneDNN has it", "[backend]") {
  ConvDesc d;
  d.n = 4, d.h = d.w = 16, d.c = 64, d.k = 64, d.kh = d.kw = 3;
  d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
  auto op = cpu_backend().make(d);
  INFO("oneDNN ISA " << cpu_isa().name << ": " << impl_info(*op));
  // oneDNN's Winograd needs avx512_core: on AVX2 CPUs (or under DNNL_MAX_CPU_ISA=AVX2) the
  // same convolution runs dltrain's own Winograd (winograd.h), and the agreement tests check
  // its numbers either way.
  CHECK((impl_info(*op).find("wino") != std::string::npos) == (cpu_isa().winograd || cpu_isa().winograd_avx2));
  CHECK((impl_info(*op).find("dlt_winograd") != std::string::npos) == cpu_isa().winograd_avx2);
  d.stride_h = d.stride_w = 2;
  CHECK(impl_info(*cpu_backend().make(d)).find("wino") == std::string::npos);
  d.stride_h = d.stride_w = 1;
  d.c = 3;
  CHECK(impl_info(*cpu_backend().make(d)).find("wino") == std::string::npos);
  d.c = 64;
  d.pad_b = 0;  // asymmetric padding: oneDNN's Winograd backward-data is wrong there (dltrain's is not)
  CHECK((impl_info(*cpu_backend().make(d)).find("wino") != std::string::npos) == cpu_isa().winograd_avx2);
  d.pad_b = 1;
  BackendOptions direct;
  direct.direct_convolution = true;  // ConvolutionAlgorithm: direct (env DLT_CONV_ALGO=direct)
  CHECK(impl_info(*cpu_backend(direct).make(d)).find("wino") == std::string::npos);
}

TEST_CASE("CPU conv runs 3x3 stride-1 convs with 64+ channels in dltrain's Winograd or on blocked activations on AVX2",
          "[backend]") {
  ConvDesc d;
  d.n = 2, d.h = d.w = 8, d.c = 64, d.k = 64, d.kh = d.kw = 3;
  d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
  BackendOptions options;
  auto info = [&d, &options] { return impl_info(*cpu_backend(options).make(d)); };
  auto blocked = [](const std::string& s) { return s.find("act=blocked") != std::string::npos; };
  auto own = [](const std::string& s) { return s.find("dlt_winograd_4x3") != std::string::npos; };
  const CpuIsa isa = cpu_isa();
  INFO("oneDNN ISA " << isa.name << ": " << info());
  // AVX-512: oneDNN's Winograd on blocked activations. AVX2 with FMA: dltrain's Winograd on
  // NHWC, all three passes. AVX2 without FMA: oneDNN's direct convolution on blocked
  // activations. Anything older: NHWC direct.
  CHECK(own(info()) == isa.winograd_avx2);
  CHECK(blocked(info()) == (isa.winograd || (isa.avx2 && !isa.winograd_avx2)));
  d.h = d.w = 5;  // 5x5 outputs: 4x4 tiles would save too little; blocked direct below AVX-512
  if (!isa.avx512) CHECK_FALSE(own(info()));
  if (!isa.avx512) CHECK(blocked(info()) == isa.avx2);
  d.h = d.w = 8;
  d.c = 32;  // fewer than 64 input channels: NHWC below AVX-512
  if (!isa.avx512) CHECK_FALSE((blocked(info()) || own(info())));
  d.c = 64;
  d.stride_h = d.stride_w = 2;  // stride 2: NHWC on every ISA
  CHECK_FALSE((blocked(info()) || own(info())));
  d.stride_h = d.stride_w = 1;
  options.direct_convolution = true;  // ConvolutionAlgorithm: direct: NHWC only
  CHECK_FALSE((blocked(info()) || own(info())));
}

// Grouped convolutions never take Winograd or the blocked path; depthwise ones (groups == C)
// run oneDNN's depthwise kernels in all three passes on AVX2 and AVX-512 ("jit_dw:avx2";
// AVX-512: "brdgmm_dw:avx512_core" forward, "jit_dw:avx512_core" backward), and a
// ResNeXt-style grouped one a jit kernel, never the reference ("ref").
TEST_CASE("CPU grouped and depthwise convs run oneDNN's jit kernels on NHWC", "[backend]") {
  ConvDesc d;
  d.n = 4, d.h = d.w = 16, d.c = d.k = d.groups = 64, d.kh = d.kw = 3;
  d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
  const CpuIsa isa = cpu_isa();
  auto info = [&d] { return impl_info(*cpu_backend().make(d)); };
  INFO("oneDNN ISA " << isa.name << ", depthwise: " << info());
  CHECK(info().find("wino") == std::string::npos);
  CHECK(info().find("act=blocked") == std::string::npos);
  CHECK(info().find("groups=64") != std::string::npos);
  auto count = [](const std::string& s, const std::string& what) {
    int n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  if (isa.avx2) CHECK(count(info(), "_dw:") == 3);  // fwd, bwd_d and bwd_w
  d.stride_h = d.stride_w = 2;
  INFO("depthwise stride 2: " << info());
  if (isa.avx2) CHECK(count(info(), "_dw:") == 3);
  d.stride_h = d.stride_w = 1;
  d.k = 128, d.groups = 32;  // ResNeXt: 32 groups of 2 -> 4
  INFO("32 groups: " << info());
  CHECK(info().find("wino") == std::string::npos);
  if (isa.avx2) CHECK(count(info(), "ref") == 0);
}

// CTest runs this binary a second time with DNNL_MAX_CPU_ISA=AVX2 (tests/CMakeLists.txt): then
// oneDNN and every choice dltrain makes from cpu_isa() are those of an AVX2 CPU.
TEST_CASE("cpu_isa is the ISA oneDNN uses, DNNL_MAX_CPU_ISA included", "[backend]") {
  const CpuIsa isa = cpu_isa();
  const char* cap = std::getenv("DNNL_MAX_CPU_ISA");
  INFO("oneDNN ISA " << isa.name << ", DNNL_MAX_CPU_ISA=" << (cap ? cap : "(unset)"));
  CHECK(isa.name != "no SIMD");
  if (!__builtin_cpu_supports("avx512f") || (cap && strcasecmp(cap, "AVX2") == 0)) {
    CHECK((isa.name == "avx2" || isa.name == "avx2_vnni" || isa.name == "avx" || isa.name == "sse41"));
    CHECK_FALSE(isa.winograd);
    CHECK_FALSE(isa.bf16);
    CHECK_FALSE(isa.amx);
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && !cap) CHECK(isa.winograd);
  CHECK(cpu_backend().name().find(", " + isa.name + ", ") != std::string::npos);
}
