// ONNX import of corrupt files (lib/onnx/onnx_import.cpp): each is one ModelError naming the
// file and the node, never a crash. Inputs found by tests/fuzz/fuzz_onnx_import are replayed
// from tests/fuzz/regressions/fuzz_onnx_import.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>

#include "onnx/onnx.h"
#include "support/skip.h"
#include "util/error.h"

using namespace dlt;

namespace {

std::string regression(const std::string& name) {
  std::ifstream f(std::string(DLT_SOURCE_DIR) + "/tests/fuzz/regressions/fuzz_onnx_import/" + name, std::ios::binary);
  REQUIRE(f);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string import_error(const std::string& bytes) {
  try {
    import_onnx_bytes(bytes, "fuzz.onnx", {});
  } catch (const ModelError& e) {
    return e.what();
  }
  return "no ModelError";
}

}  // namespace

TEST_CASE("onnx import: bytes that are not a model are one ModelError", "[onnx][skippable]") {
  DLT_SKIP_IF(!onnx_available(), "this build has no ONNX support");
  CHECK_THAT(import_error("not a protobuf \xff\xff\xff"), Catch::Contains("fuzz.onnx: not a readable ONNX model"));
}

// Found by fuzz_onnx_import: a Conv with strides 0 divided by zero computing its output size.
TEST_CASE("onnx import: a zero stride is refused, not divided by", "[onnx][skippable]") {
  DLT_SKIP_IF(!onnx_available(), "this build has no ONNX support");
  CHECK_THAT(import_error(regression("conv-stride-0")), Catch::Contains("fuzz.onnx: node"));
  CHECK_THAT(import_error(regression("conv-stride-0")), Catch::Contains("must be in 1..1048576"));
}

// Seeds for the import paths of today's exporters and layers (one per path, made with onnx.helper; the
// attention ones are tests/data/onnx_zoo/vit-torchscript.onnx and deit_distilled-torchscript.onnx, the window
// ones torchvision's Swin and MaxViT at 16x16 from the TorchScript exporter): each imports from memory, except
// external data, which has no folder to be read from there.
TEST_CASE("onnx import: the seeds of the exporters' forms import from memory", "[onnx][skippable]") {
  DLT_SKIP_IF(!onnx_available(), "this build has no ONNX support");
  for (const char* name :
       {"seed-identity-alias", "seed-shape-fold-reshape", "seed-reducemean-opset18", "seed-transpose-matmul",
        "seed-channel-shuffle", "seed-vit-attention", "seed-space-to-depth", "seed-tensor-fold", "seed-swin-window",
        "seed-maxvit-partition", "seed-deit-tokens"}) {
    INFO(name);
    CHECK(import_error(regression(name)) == "no ModelError");
  }
  CHECK_THAT(import_error(regression("seed-external-data-from-memory")),
             Catch::Contains("fuzz.onnx: initializer: tensor 'W' keeps its data in an external file ('m.onnx.data'), "
                             "which an import from memory cannot read"));
}
