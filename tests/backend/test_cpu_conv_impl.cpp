// Which convolution implementation the CPU backend picks: Winograd for 3x3 stride-1 convs
// with 32+ channels, direct NHWC otherwise (DLT_CONV_ALGO=direct forces direct).
#include <catch2/catch.hpp>
#include <cstdlib>

#include "backend/cpu/cpu_backend.h"

using namespace dlt;

TEST_CASE("CPU conv picks Winograd for 3x3 stride-1 convs with 32+ channels", "[backend]") {
  ConvDesc d;
  d.n = 4, d.h = d.w = 16, d.c = 64, d.k = 64, d.kh = d.kw = 3;
  d.pad_t = d.pad_b = d.pad_l = d.pad_r = 1;
  auto op = cpu_backend().make_conv(d);
  CHECK(impl_info(*op).find("wino") != std::string::npos);
  d.stride_h = d.stride_w = 2;
  CHECK(impl_info(*cpu_backend().make_conv(d)).find("wino") == std::string::npos);
  d.stride_h = d.stride_w = 1;
  d.c = 3;
  CHECK(impl_info(*cpu_backend().make_conv(d)).find("wino") == std::string::npos);
  d.c = 64;
  d.pad_b = 0;  // asymmetric padding: oneDNN's Winograd backward-data is wrong there
  CHECK(impl_info(*cpu_backend().make_conv(d)).find("wino") == std::string::npos);
  d.pad_b = 1;
  setenv("DLT_CONV_ALGO", "direct", 1);
  CHECK(impl_info(*cpu_backend().make_conv(d)).find("wino") == std::string::npos);
  unsetenv("DLT_CONV_ALGO");
}
