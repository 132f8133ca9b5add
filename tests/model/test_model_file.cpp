// Model file: bit-identical round trip; truncation at every offset, a bit flip at every byte,
// foreign, empty, newer-version and crafted (valid checksum, lying lengths) files all throw
// one ModelError line naming the file and the problem.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "config/config.h"
#include "config/config_test_util.h"
#include "net/model_file.h"
#include "net/network.h"
#include "util/error.h"
#include "util/rng.h"

namespace dlt {
namespace {

ModelData sample_model() {
  ModelData m;
  m.network = network_spec_from_yaml(R"(layers:
  - {type: imageInput, Name: input, InputSize: [4, 4, 3], Normalization: zerocenter}
  - {type: convolution2d, Name: conv1, FilterSize: [3, 3], NumFilters: 2, Padding: same}
  - {type: batchNormalization, Name: bn1}
  - {type: relu}
  - {type: fullyConnected, Name: fc, OutputSize: 3}
  - {type: softmax}
  - {type: classification}
)",
                                     "sample");
  Rng rng(42);
  auto tensor = [&](const std::string& layer, const std::string& name, Shape shape) {
    NamedTensor t{layer, name, shape, {}};
    for (int64_t i = 0; i < shape.numel(); ++i) t.data.push_back(static_cast<float>(rng.normal()));
    return t;
  };
  m.params.push_back(tensor("conv1", "Weights", Shape{2, 3, 3, 3}));
  m.params.push_back(tensor("conv1", "Bias", Shape{2}));
  m.params.push_back(tensor("fc", "Weights", Shape{3, 32}));
  m.params.push_back(tensor("fc", "Bias", Shape{3}));
  // Values whose bits must survive exactly.
  m.params[1].data = {-0.0f, std::numeric_limits<float>::denorm_min()};
  m.params[3].data = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 1e-38f};
  m.states.push_back(tensor("input", "Mean", Shape{4, 4, 3}));
  m.states.push_back(tensor("bn1", "TrainedMean", Shape{2}));
  m.states.push_back(tensor("bn1", "TrainedVariance", Shape{2}));
  m.states.push_back(NamedTensor{"x", "Scalar", Shape{}, {7.5f}});
  m.states.push_back(NamedTensor{"x", "Empty", Shape{0, 5}, {}});
  m.classes = {"airplane", "caf\xc3\xa9", ""};
  m.training_yaml = "Solver: sgdm\nMaxEpochs: 2\n";
  m.metadata_json = "{\"dltrain\": \"0.1.0\", \"accuracy\": 0.5}";
  return m;
}

void require_same_tensors(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].layer == b[i].layer);
    CHECK(a[i].name == b[i].name);
    CHECK(a[i].shape == b[i].shape);
    REQUIRE(a[i].data.size() == b[i].data.size());
    CHECK(std::memcmp(a[i].data.data(), b[i].data.data(), a[i].data.size() * sizeof(float)) == 0);
  }
}

// The ModelError message for decoding `bytes`, or "no error".
std::string decode_error(const std::vector<uint8_t>& bytes) {
  try {
    decode_model(bytes, "model.bin");
  } catch (const ModelError& e) {
    return e.what();
  }
  return "no error";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
void fix_checksums(std::vector<uint8_t>& b) {
  put_u32(b, 24, crc32(b.data(), 24));
  put_u32(b, 28, crc32(b.data() + 32, b.size() - 32));
}

TEST_CASE("model file: CRC-32 matches the standard check value", "[model]") {
  CHECK(crc32("123456789", 9) == 0xCBF43926u);
  CHECK(crc32("", 0) == 0u);
}

TEST_CASE("model file: save/load round trip is bit-identical", "[model]") {
  test::TempDir dir;
  ModelData m = sample_model();
  std::string path = dir.file("model.bin");
  save_model(path, m);
  CHECK(looks_like_model(path));
  ModelData r = load_model(path);
  test::require_same_network(m.network, r.network);
  require_same_tensors(m.params, r.params);
  require_same_tensors(m.states, r.states);
  CHECK(r.classes == m.classes);
  CHECK(r.training_yaml == m.training_yaml);
  CHECK(r.metadata_json == m.metadata_json);
  CHECK(encode_model(r) == encode_model(m));
  // Overwrites atomically and leaves no temporary file behind.
  m.classes.push_back("extra");
  save_model(path, m);
  CHECK(load_model(path).classes.size() == 4);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.file(""))) {
    (void)e;
    ++files;
  }
  CHECK(files == 1);
  // An empty model (just a network) works too.
  ModelData tiny;
  tiny.network = network_spec_from_yaml("layers: [{type: relu}]", "t");
  save_model(path, tiny);
  CHECK(load_model(path).network.layers[0].name == "relu_1");
}

TEST_CASE("model file: segmentation LabelIDs round trip; a model without them has none", "[model]") {
  ModelData m = sample_model();
  CHECK(decode_model(encode_model(m), "m").label_ids.empty());
  m.label_ids = {{{0}}, {{1}, {7}}, {{128, 64, 128}, {0, 0, 192}}};
  const std::vector<uint8_t> bytes = encode_model(m);
  ModelData r = decode_model(bytes, "m");
  CHECK(r.label_ids == m.label_ids);
  CHECK(r.classes == m.classes);
  CHECK(encode_model(r) == bytes);
}

TEST_CASE("model file: truncation at every offset is reported", "[model]") {
  const std::vector<uint8_t> full = encode_model(sample_model());
  REQUIRE(full.size() > 500);
  CHECK(decode_error({}) == "model.bin: empty file (not a dltrain model)");
  for (size_t n = 1; n < full.size(); ++n) {
    std::string msg = decode_error(std::vector<uint8_t>(full.begin(), full.begin() + n));
    INFO("truncated to " << n << ": " << msg);
    if (n < 32)
      REQUIRE(msg == "model.bin: truncated at byte " + std::to_string(n) + " (the header alone is 32 bytes)");
    else
      REQUIRE(msg == "model.bin: truncated at byte " + std::to_string(n) + " of " + std::to_string(full.size()));
  }
  std::vector<uint8_t> longer = full;
  longer.push_back(0);
  CHECK(decode_error(longer) ==
        "model.bin: 1 unexpected bytes after the end at byte " + std::to_string(full.size()) + " (file corrupt)");
  // Through a real file, too.
  test::TempDir dir;
  std::string path = dir.write_bytes("cut.bin", std::vector<uint8_t>(full.begin(), full.begin() + 100));
  try {
    load_model(path);
    FAIL("expected ModelError");
  } catch (const ModelError& e) {
    CHECK(std::string(e.what()) == path + ": truncated at byte 100 of " + std::to_string(full.size()));
  }
}

TEST_CASE("model file: a bit flip anywhere is detected", "[model]") {
  const std::vector<uint8_t> full = encode_model(sample_model());
  for (size_t at = 0; at < full.size(); ++at) {
    std::vector<uint8_t> b = full;
    b[at] ^= static_cast<uint8_t>(1u << (at % 8));
    std::string msg = decode_error(b);
    INFO("bit flip at byte " << at << ": " << msg);
    if (at < 8)
      REQUIRE(msg == "model.bin: not a dltrain model (bad magic)");
    else if (at < 28)
      REQUIRE(msg == "model.bin: header checksum mismatch (file corrupt)");
    else
      REQUIRE(msg == "model.bin: checksum mismatch (file corrupt)");
  }
}

TEST_CASE("model file: foreign, empty, missing and newer files", "[model]") {
  test::TempDir dir;
  auto error_for = [&](const std::string& path) -> std::string {
    try {
      load_model(path);
    } catch (const ModelError& e) {
      return e.what();
    }
    return "no error";
  };
  const std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D',
                                    'R',  0,   0,   0,   1,    0,    0,    0,    1, 8, 2, 0,  0,   0};
  std::string p = dir.write_bytes("image.png", png);
  CHECK(error_for(p) == p + ": not a dltrain model (bad magic)");
  CHECK_FALSE(looks_like_model(p));
  std::string y = dir.write("net.yaml", "layers:\n  - {type: relu}\n");
  CHECK(error_for(y) == y + ": not a dltrain model (bad magic)");
  CHECK_FALSE(looks_like_model(y));
  std::string e = dir.write("empty.bin", "");
  CHECK(error_for(e) == e + ": empty file (not a dltrain model)");
  CHECK_FALSE(looks_like_model(e));
  std::string d = dir.write("DLT", "DLT");  // a prefix of the magic: truncated, not foreign
  CHECK(error_for(d) == d + ": truncated at byte 3 (the header alone is 32 bytes)");
  CHECK(error_for(dir.file("missing.bin")) ==
        dir.file("missing.bin") + ": cannot open the model file (No such file or directory)");
  CHECK_FALSE(looks_like_model(dir.file("missing.bin")));
  CHECK(error_for(dir.file("")).find("Is a directory") != std::string::npos);

  std::vector<uint8_t> newer = encode_model(sample_model());
  put_u32(newer, 8, 9);
  fix_checksums(newer);
  std::string n = dir.write_bytes("newer.bin", newer);
  CHECK(looks_like_model(n));
  CHECK(error_for(n) == n + ": format version 9 is newer than this dltrain (2); use a newer dltrain");
  put_u32(newer, 8, 0);
  fix_checksums(newer);
  CHECK(decode_error(newer) == "model.bin: invalid format version 0 (file corrupt)");
}

TEST_CASE("model file: save errors name the path", "[model]") {
  try {
    save_model("/nonexistent-dir-dltrain/model.bin", sample_model());
    FAIL("expected ModelError");
  } catch (const ModelError& e) {
    CHECK(has(e.what(), "/nonexistent-dir-dltrain/model.bin.tmp-"));
    CHECK(has(e.what(), "cannot create the model file (No such file or directory)"));
  }
  ModelData bad = sample_model();
  bad.params[0].data.pop_back();
  CHECK_THROWS_WITH(encode_model(bad),
                    "cannot save tensor conv1.Weights: it has 53 values but its shape 2x3x3x3 "
                    "needs 54");
}

// Files with valid checksums whose contents lie: every length is checked before use.
TEST_CASE("model file: crafted payloads with lying lengths fail cleanly", "[model]") {
  auto build = [](const std::vector<std::pair<std::string, std::vector<uint8_t>>>& sections) {
    std::vector<uint8_t> b(32, 0);
    std::memcpy(b.data(), kModelMagic, 8);
    put_u32(b, 8, 1);
    for (const auto& [tag, body] : sections) {
      b.insert(b.end(), tag.begin(), tag.end());
      for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(static_cast<uint64_t>(body.size()) >> (8 * i)));
      b.insert(b.end(), body.begin(), body.end());
    }
    uint64_t payload = b.size() - 32;
    for (int i = 0; i < 8; ++i) b[16 + i] = static_cast<uint8_t>(payload >> (8 * i));
    fix_checksums(b);
    return b;
  };
  auto u32 = [](uint32_t v) {
    return std::vector<uint8_t>{uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
  };
  auto cat = [](std::initializer_list<std::vector<uint8_t>> parts) {
    std::vector<uint8_t> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  const std::string spec_text = "layers: [{type: relu}]";
  const std::vector<uint8_t> spec(spec_text.begin(), spec_text.end());
  const std::vector<uint8_t> dims_huge = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
  const std::vector<uint8_t> dim2 = {2, 0, 0, 0, 0, 0, 0, 0};

  CHECK(decode_error(build({{"SPEC", spec}})) == "no error");
  CHECK(decode_error(build({{"SPEC", spec}, {"XTRA", {1, 2, 3}}})) == "no error");  // unknown sections skipped
  CHECK(decode_error(build({{"CLAS", u32(0)}})) == "model.bin: no network spec section (file corrupt)");
  std::string clas = decode_error(build({{"SPEC", spec}, {"CLAS", u32(0xFFFFFFFFu)}}));
  CHECK(clas.rfind("model.bin: section CLAS is corrupt at byte 82: count 4294967295 does not fit in the 0 bytes left",
                   0) == 0);
  CHECK(has(clas, "(file corrupt; re-export the model)"));
  CHECK(has(decode_error(build({{"SPEC", spec}, {"CLAS", cat({u32(1), u32(1000)})}})),
            "a string needs 1000 bytes but only 0 remain"));
  CHECK(has(decode_error(build({{"SPEC", spec}, {"PARM", u32(0x10000000u)}})), "does not fit"));
  // A tensor claiming 2^63 x 2^63 elements with a few bytes of data.
  CHECK(has(decode_error(
                build({{"SPEC", spec}, {"PARM", cat({u32(1), u32(0), u32(0), u32(2), dims_huge, dims_huge, u32(0)})}})),
            "dimension 9223372036854775807 makes it larger than"));
  CHECK(has(decode_error(build({{"SPEC", spec}, {"PARM", cat({u32(1), u32(0), u32(0), u32(7)})}})), "has rank 7"));
  CHECK(has(decode_error(build({{"SPEC", spec}, {"PARM", cat({u32(1), u32(0), u32(0), u32(1), dim2, u32(0)})}})),
            "dimension 2 makes it larger than the 4 bytes left"));
  CHECK(has(decode_error(build({{"SPEC", spec}, {"CLAS", cat({u32(0), u32(0)})}})), "4 bytes left over"));
  CHECK(has(decode_error(build({{"SPEC", spec}, {"SPEC", spec}})), "section SPEC appears twice"));
  CHECK(decode_error(build({{"SPEC", {'x', ':', ' ', '1'}}}))
            .rfind("model.bin: the stored network spec is invalid: model.bin (network spec):1: unexpected key 'x'",
                   0) == 0);
  // A section header whose length runs past the payload.
  std::vector<uint8_t> b = build({{"SPEC", spec}});
  b[32 + 4] = 0xff;
  fix_checksums(b);
  CHECK(has(decode_error(b), "section SPEC needs 255 bytes but only 22 remain"));
}

// Random corruption behind valid checksums (what a buggy or hostile writer could produce):
// decoding either succeeds or throws ModelError; nothing else escapes, nothing crashes.
TEST_CASE("model file: random payload corruption with fixed checksums", "[model]") {
  ModelData m = sample_model();
  m.params.resize(1);  // keep it small so structure bytes are hit often
  m.params[0].data.resize(4);
  m.params[0].shape = Shape{2, 2};
  const std::vector<uint8_t> full = encode_model(m);
  Rng rng(7);
  int ok = 0, model_errors = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> b = full;
    int flips = 1 + static_cast<int>(rng.below(4));
    for (int f = 0; f < flips; ++f) b[32 + rng.below(b.size() - 32)] = static_cast<uint8_t>(rng.below(256));
    fix_checksums(b);
    try {
      decode_model(b, "model.bin");
      ++ok;
    } catch (const ModelError& e) {
      ++model_errors;
      REQUIRE(std::string(e.what()).rfind("model.bin: ", 0) == 0);
    }
  }
  CHECK(ok + model_errors == 3000);
  CHECK(model_errors > 300);  // structure bytes were hit
}

// Hostile files that pass decoding: their spec and tensors are checked against each other
// before the network allocates anything (Network(const ModelData&)).
TEST_CASE("model file: hostile specs fail before anything is allocated", "[model]") {
  auto model = [](const std::string& input_size, int64_t outputs, Shape weights) {
    ModelData m;
    m.network =
        network_spec_from_yaml("layers:\n  - {type: imageInput, Name: in, InputSize: " + input_size +
                                   ", Normalization: none}\n  - {type: fullyConnected, Name: fc, "
                                   "OutputSize: " +
                                   std::to_string(outputs) + "}\n  - {type: softmax}\n  - {type: classification}\n",
                               "hostile");
    m.params.push_back(NamedTensor{"fc", "Weights", weights, std::vector<float>(static_cast<size_t>(weights.numel()))});
    m.params.push_back(NamedTensor{"fc", "Bias", Shape{outputs}, std::vector<float>(static_cast<size_t>(outputs))});
    m.classes = std::vector<std::string>(static_cast<size_t>(outputs), "c");
    return decode_model(encode_model(m), "model.bin");  // through the file format
  };
  auto network_error = [](const ModelData& m) -> std::string {
    try {
      Network net(m, Device::cpu());
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK(network_error(model("[4, 4, 3]", 3, Shape{3, 48})) == "no error");
  // Wrong element counts / shapes.
  CHECK(network_error(model("[4, 4, 3]", 3, Shape{3, 47})) ==
        "layer 'fc' Weights is 3x47 in the model file but the network needs 3x48");
  // A shape whose product overflows int64 unless a zero comes first (decoding accepts it: 0 values).
  CHECK(network_error(model("[4, 4, 3]", 3, Shape{0, int64_t{1} << 40, int64_t{1} << 40})) ==
        "layer 'fc' Weights is 0x1099511627776x1099511627776 in the model file but the network needs 3x48");
  // A spec whose fullyConnected would need 2^31 x 10^6 floats (8 PB): refused by the check,
  // not by an allocation (which used to come first).
  ModelData big = model("[4, 4, 3]", 3, Shape{3, 48});
  big.network.layers[0].options["InputSize"].items = {"32768", "32768", "2"};
  big.network.layers[1].options["OutputSize"].items = {"1000000"};
  CHECK(network_error(big) == "layer 'fc' Weights is 3x48 in the model file but the network needs 1000000x2147483648");
  // Activations beyond 2^31 values per image.
  big.network.layers[0].options["InputSize"].items = {"100000", "100000", "3"};
  CHECK(has(network_error(big), "layer 'in' outputs 100000x100000x3 per image, more than 2147483648 values"));
  // Inputs naming a missing or later layer (a cycle needs one): a config error naming it.
  ModelData cyclic = model("[4, 4, 3]", 3, Shape{3, 48});
  cyclic.network.layers[1].inputs = {"softmax_1"};
  CHECK(has(network_error(cyclic), "layer 'fc': Inputs names 'softmax_1', which is not an earlier layer"));
  cyclic.network.layers[1].inputs = {"nowhere"};
  CHECK(has(network_error(cyclic), "Inputs names 'nowhere', which is not an earlier layer"));
}

TEST_CASE("model file: a network spec over 4 MiB is neither parsed nor written", "[model]") {
  ModelData m = sample_model();
  std::vector<uint8_t> b = encode_model(m);
  // SPEC is the first section: grow it with a YAML comment and fix the lengths and checksums.
  const std::string pad = "\n#" + std::string((4u << 20) - 1, 'x');
  uint64_t len = 0;
  for (int i = 0; i < 8; ++i) len |= static_cast<uint64_t>(b[36 + i]) << (8 * i);
  b.insert(b.begin() + 44 + static_cast<std::ptrdiff_t>(len), pad.begin(), pad.end());
  len += pad.size();
  for (int i = 0; i < 8; ++i) b[36 + i] = static_cast<uint8_t>(len >> (8 * i));
  const uint64_t payload = b.size() - 32;
  for (int i = 0; i < 8; ++i) b[16 + i] = static_cast<uint8_t>(payload >> (8 * i));
  fix_checksums(b);
  CHECK(has(decode_error(b),
            "the network spec is " + std::to_string(len) + " bytes, more than the 4194304 dltrain reads"));
  // ... and never written: 40,000 layers with 100-character names.
  ModelData many;
  for (int i = 0; i < 40000; ++i) {
    LayerSpec s;
    s.type = "relu";
    s.name = std::string(94, 'r') + std::to_string(100000 + i);
    many.network.layers.push_back(s);
  }
  CHECK_THROWS_WITH(encode_model(many), Catch::Contains("cannot save the model: its network spec is") &&
                                            Catch::Contains("bytes of YAML, more than the 4194304 a model file holds"));
  // Negative dimensions are huge unsigned ones: refused.
  ModelData neg;
  neg.network = m.network;
  neg.params.push_back(NamedTensor{"fc", "Weights", Shape{2}, {1.f, 2.f}});
  std::vector<uint8_t> nb = encode_model(neg);
  const std::string name = "Weights";
  auto at = std::search(nb.begin(), nb.end(), name.begin(), name.end());
  REQUIRE(at != nb.end());
  at += static_cast<std::ptrdiff_t>(name.size() + 4);  // past the name and the rank: the first dim
  REQUIRE(at[0] == 2);
  for (int i = 0; i < 8; ++i) at[i] = 0xff;  // -1 as int64
  fix_checksums(nb);
  CHECK(has(decode_error(nb), "dimension 18446744073709551615 makes it larger than"));
  // A tensor name with a line break and a terminal escape: one line, escaped.
  neg.params[0].layer = "l\n\x1b[2J";
  nb = encode_model(neg);
  at = std::search(nb.begin(), nb.end(), name.begin(), name.end()) + static_cast<std::ptrdiff_t>(name.size() + 4);
  for (int i = 0; i < 8; ++i) at[i] = 0xff;
  fix_checksums(nb);
  CHECK(has(decode_error(nb), "tensor l\\n\\x1b[2J.Weights dimension 18446744073709551615"));
}

}  // namespace
// Found by tests/fuzz/fuzz_model_file: a tensor with a zero dimension passed memcpy a null
// pointer (UndefinedBehaviorSanitizer: "null pointer passed as argument 1"). It decodes to an
// empty tensor; the layers refuse the shape later, as they do any other mismatch.
TEST_CASE("model file: a tensor with a zero dimension decodes to an empty tensor", "[model]") {
  ModelData m = sample_model();
  m.states.push_back(NamedTensor{"bn1", "Empty", Shape{0, 4}, {}});
  ModelData back = decode_model(encode_model(m), "zero.bin");
  REQUIRE(back.states.size() == m.states.size());
  CHECK(back.states.back().shape == Shape{0, 4});
  CHECK(back.states.back().data.empty());
}

}  // namespace dlt

namespace dlt {

// Format 1's positionEmbedding added its table to its input; format 2's outputs the table alone
// (MATLAB's positionEmbeddingLayer). tests/data/vit/vit_format1.bin, written by format 1 (the ViT
// fixture tests/data/onnx_zoo/vit-torchscript.onnx imported), reads as the same function: its
// positionEmbedding split into the table and an addition of the same name, and its probabilities
// still onnxruntime's (vit-torchscript.expected.txt) on the fixture's two images.
TEST_CASE("model file: format 1's positionEmbedding reads as the table and an addition", "[model][vit]") {
  const std::string dir = std::string(DLT_SOURCE_DIR) + "/tests/data/";
  const ModelData m = load_model(dir + "vit/vit_format1.bin");
  const LayerSpec* table = m.network.find("net_encoder_Add_table");
  const LayerSpec* sum = m.network.find("net_encoder_Add");
  REQUIRE(table);
  REQUIRE(sum);
  CHECK(table->type == "positionEmbedding");
  CHECK(sum->type == "addition");
  REQUIRE(sum->inputs.size() == 2);
  CHECK(sum->inputs[1] == "net_encoder_Add_table");
  CHECK(table->inputs == std::vector<std::string>{sum->inputs[0]});
  bool renamed = false;
  for (const auto& p : m.params) {
    CHECK(p.layer != "net_encoder_Add");
    renamed = renamed || (p.layer == "net_encoder_Add_table" && p.name == "Weights");
  }
  CHECK(renamed);

  Network net(m, Device::cpu());
  const int64_t n = 2;
  net.set_batch(n);
  std::ifstream in(dir + "onnx_zoo/vit-torchscript.input.f32", std::ios::binary);
  std::vector<float> pixels(static_cast<size_t>(n * 32 * 32 * 3));
  in.read(reinterpret_cast<char*>(pixels.data()), static_cast<std::streamsize>(pixels.size() * sizeof(float)));
  REQUIRE(in.gcount() == static_cast<std::streamsize>(pixels.size() * sizeof(float)));
  Tensor x(Shape{n, 32, 32, 3});
  std::copy(pixels.begin(), pixels.end(), x.data());
  const Tensor y = net.forward(x, RunContext{false, 0, 0}).to(Device::cpu());
  std::ifstream want(dir + "onnx_zoo/vit-torchscript.expected.txt");
  double diff = 0;
  int64_t count = 0;
  for (float v; want >> v; ++count) diff = std::max(diff, std::fabs(static_cast<double>(v) - y.data()[count]));
  CHECK(count == y.numel());
  CHECK(diff < 1e-4);

  // Saved again, it is a format 2 file that reads back unchanged.
  const ModelData again = decode_model(encode_model(m), "again.bin");
  CHECK(again.network.layers.size() == m.network.layers.size());
  CHECK(again.network.find("net_encoder_Add_table"));
}

}  // namespace dlt
