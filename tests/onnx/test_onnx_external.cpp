// ONNX initializers whose data lies in an external file (what torch.onnx.export's default
// exporter writes): read from files inside the model's own folder, giving the same network as
// the data inside the model; every way out of the folder and every bad range is one line naming
// the model, the tensor and the fix (lib/onnx/onnx_import_external.cpp).
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "onnx_test_graph.h"

namespace dlt {
namespace {

using test::OnnxBuilder;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<float> weights() {
  std::vector<float> w(48);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i % 7) - 0.02f;
  return w;
}

// x (N, 3, 2, 2) -> Flatten -> Gemm (W (4, 12), transB) -> Softmax; W inline or external.
OnnxBuilder classifier(const std::vector<std::pair<std::string, std::string>>& external = {}) {
  OnnxBuilder g({1, 3, 2, 2});
  onnx::TensorProto& w = g.floats("W", {4, 12}, weights());
  if (!external.empty()) {
    w.clear_raw_data();
    w.set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [k, v] : external) {
      auto* e = w.add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
  }
  g.floats("B", {4}, {0.1f, -0.1f, 0.2f, 0.f});
  g.node("Flatten", {"x"}, {"f"});
  OnnxBuilder::attr(g.node("Gemm", {"f", "W", "B"}, {"g"}), "transB", 1);
  g.node("Softmax", {"g"}, {"prob"});
  g.output("prob");
  return g;
}

// The weights' bytes after `skip` bytes of other data.
std::string data_file(size_t skip) {
  const std::vector<float> w = weights();
  return std::string(skip, '\x7f') + std::string(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
}

struct Folder {
  test::TempDir root;  // root/model holds m.onnx; root itself is outside the model's folder
  Folder() { std::filesystem::create_directories(root.file("model")); }
  std::string file(const std::string& name) const { return root.file("model/" + name); }
  void write(const std::string& name, const std::string& bytes) const { root.write("model/" + name, bytes); }
  // The import error ("" on success; the model in *out).
  std::string import(const OnnxBuilder& g, ModelData* out = nullptr) const {
    write("m.onnx", g.bytes());
    try {
      ModelData m = import_onnx(file("m.onnx"), {});
      if (out) *out = std::move(m);
    } catch (const ModelError& e) {
      const std::string msg = e.what();
      CHECK(msg.find('\n') == std::string::npos);
      return msg;
    }
    return "";
  }
};

const std::vector<float> kImages = [] {
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i) - 1.f;
  return x;
}();

TEST_CASE("onnx external data: read from the model's folder, the same network as inline data", "[onnx]") {
  Folder f;
  ModelData inline_model, external, nested, linked;
  REQUIRE(f.import(classifier(), &inline_model) == "");
  f.write("m.onnx.data", data_file(16));
  REQUIRE(f.import(classifier({{"location", "m.onnx.data"}, {"offset", "16"}, {"length", "192"}}), &external) == "");
  // No length: the tensor's size from the offset on; no offset: 0.
  std::filesystem::create_directories(f.file("weights"));
  f.write("weights/w.bin", data_file(0));
  REQUIRE(f.import(classifier({{"location", "weights/w.bin"}}), &nested) == "");
  // A symlink that stays inside the folder.
  REQUIRE(::symlink("weights/w.bin", f.file("link.bin").c_str()) == 0);
  REQUIRE(f.import(classifier({{"location", "./link.bin"}, {"offset", "0"}}), &linked) == "");
  const std::vector<float> want = test::probabilities(inline_model, kImages, 2);
  CHECK(test::probabilities(external, kImages, 2) == want);
  CHECK(test::probabilities(nested, kImages, 2) == want);
  CHECK(test::probabilities(linked, kImages, 2) == want);
}

TEST_CASE("onnx external data: leaving the folder, missing files and bad ranges are refused", "[onnx]") {
  Folder f;
  f.write("m.onnx.data", data_file(16));
  f.root.write("outside.bin", data_file(0));  // a valid data file, but outside the model's folder
  const std::string tensor = "m.onnx: initializer: tensor 'W' ";
  auto error = [&](const std::vector<std::pair<std::string, std::string>>& ext) {
    const std::string e = f.import(classifier(ext));
    INFO(e);
    CHECK(has(e, tensor));
    return e;
  };
  CHECK(has(error({{"location", "../outside.bin"}}),
            "keeps its data at '../outside.bin', which leaves the model's folder through '..'"));
  CHECK(has(error({{"location", "weights/../../outside.bin"}}), "leaves the model's folder through '..'"));
  CHECK(has(error({{"location", f.root.file("outside.bin")}}), "keeps its data at the absolute path '"));
  CHECK(has(error({{"location", "/dev/zero"}}), "absolute path '/dev/zero'"));
  REQUIRE(::symlink(f.root.file("outside.bin").c_str(), f.file("out_link.bin").c_str()) == 0);
  CHECK(has(error({{"location", "out_link.bin"}}), "out_link.bin', which is a link to '"));
  CHECK(has(error({{"location", "out_link.bin"}}), "outside.bin' outside the model's folder"));
  REQUIRE(::symlink("/dev/zero", f.file("zero").c_str()) == 0);
  CHECK(has(error({{"location", "zero"}}), "which is a link to '/dev/zero' outside the model's folder"));
  CHECK(has(error({{"location", "nothere.bin"}}), "model/nothere.bin', which does not exist"));
  CHECK(has(error({{"location", ""}}), "has external data without a location"));
  std::filesystem::create_directories(f.file("sub"));
  CHECK(has(error({{"location", "sub"}}), "which is not a regular file"));
  REQUIRE(::mkfifo(f.file("fifo").c_str(), 0600) == 0);
  CHECK(has(error({{"location", "fifo"}}), "which is not a regular file"));
  CHECK(has(error({{"location", "m.onnx.data"}, {"offset", "100"}}), "reads bytes 100..292 of '"));
  CHECK(
      has(error({{"location", "m.onnx.data"}, {"offset", "100"}}), "which has 208 bytes (the data file is truncated"));
  CHECK(has(error({{"location", "m.onnx.data"}, {"offset", "9223372036854775807"}}), "offset '9223372036854775807'"));
  CHECK(has(error({{"location", "m.onnx.data"}, {"offset", "-8"}}),
            "has external data offset '-8', not a byte count of 0 to 18 digits"));
  CHECK(has(error({{"location", "m.onnx.data"}, {"offset", "16"}, {"length", "100"}}),
            "has 100 bytes of external data for 4x12 = 48 values of 4 bytes"));
  CHECK(has(error({{"location", "m.onnx.data"}, {"length", "-1"}}), "external data length '-1'"));
}

TEST_CASE("onnx external data: a tensor claiming more than the limit is refused before any read", "[onnx]") {
  Folder f;
  f.write("m.onnx.data", data_file(0));
  OnnxBuilder g = classifier({{"location", "m.onnx.data"}});
  auto* w = g.g().mutable_initializer(0);
  w->clear_dims();
  w->add_dims(int64_t{1} << 40);
  w->add_dims(12);
  CHECK(has(f.import(g), "tensor 'W' claims 1099511627776x12 values, more than the 4294967296"));
}

TEST_CASE("onnx external data: an import from memory refuses it with one line", "[onnx]") {
  std::string e;
  try {
    import_onnx_bytes(classifier({{"location", "m.onnx.data"}}).bytes(), "mem.onnx", {});
  } catch (const ModelError& err) {
    e = err.what();
  }
  CHECK(has(e,
            "mem.onnx: initializer: tensor 'W' keeps its data in an external file ('m.onnx.data'), which an "
            "import from memory cannot read"));
}

TEST_CASE("onnx external data: export writes the weights beside the model, and they read back", "[onnx]") {
  // A conv of 3x3x3x24 weights (2592 bytes: external), a bias of 24 (96 bytes: inline) and a
  // fully connected layer of 4x4x24x3 weights (4608 bytes: external).
  const char* yaml = R"(
layers:
  - {type: imageInput, Name: input, InputSize: [6, 6, 3], Normalization: none}
  - {type: convolution2d, Name: conv, FilterSize: 3, NumFilters: 24}
  - {type: relu, Name: relu}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax, Name: softmax}
  - {type: classification, Name: output}
)";
  Network net(network_spec_from_yaml(yaml, "net.yaml"), Device::cpu());
  net.init_params(3);
  ModelData m = net.to_model_data();
  m.classes = {"a", "b", "c"};
  Folder f;
  export_onnx(m, f.file("m.onnx"), {.external_data = true});
  onnx::ModelProto proto;
  {
    std::ifstream in(f.file("m.onnx"), std::ios::binary);
    REQUIRE(proto.ParseFromIstream(&in));
  }
  size_t external = 0, inline_bytes = 0;
  for (const auto& t : proto.graph().initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) {
      CHECK(t.raw_data().size() < 1024);
      inline_bytes += t.raw_data().size();
      continue;
    }
    ++external;
    CHECK(t.raw_data().empty());
    std::map<std::string, std::string> kv;
    for (const auto& e : t.external_data()) kv[e.key()] = e.value();
    CHECK(kv["location"] == "m.onnx.data");
    CHECK(std::stoll(kv["offset"]) % 64 == 0);
    CHECK(std::stoll(kv["length"]) >= 1024);
  }
  CHECK(external == 2);  // the conv's and the fully connected layer's weights
  CHECK(inline_bytes > 0);
  CHECK(std::filesystem::file_size(f.file("m.onnx.data")) >= 2592 + 4 * 4 * 24 * 3 * 4);  // a 4x4x24 output: unpadded
  const ModelData back = import_onnx(f.file("m.onnx"), {});
  std::vector<float> xs(6 * 6 * 3 * 2);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.01f * static_cast<float>(i % 17) - 0.08f;
  const std::vector<float> want = test::probabilities(m, xs, 2), got = test::probabilities(back, xs, 2);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-6));
  CHECK(std::fabs(want[0] - want[3]) + std::fabs(want[1] - want[4]) > 1e-4);  // the images are told apart
  // A device or pipe has no folder for the data file beside it.
  std::string e;
  try {
    export_onnx(m, "/dev/null", {.external_data = true});
  } catch (const ModelError& err) {
    e = err.what();
  }
  CHECK(has(e,
            "/dev/null: ONNX external data is a file beside the model: give --output a file path, not a device "
            "or pipe"));
}

}  // namespace
}  // namespace dlt
