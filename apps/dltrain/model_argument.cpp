// check_model_argument: what a file given as MODEL is when it is not a dltrain model.
#include "model_argument.h"

#include <cstdint>
#include <fstream>
#include <vector>

#include "net/model_file.h"
#include "util/error.h"
#include "util/strings.h"

namespace dlt::app {

namespace {

bool has_extension(const std::string& path, const std::string& ext) {
  return path.size() > ext.size() && iequals(path.substr(path.size() - ext.size()), ext);
}

// Text whose first lines hold a config section ("layers:", "data:", "training:", "base:").
bool reads_as_config(const std::vector<uint8_t>& head) {
  for (uint8_t c : head)
    if (c == 0 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t')) return false;
  const std::string text(head.begin(), head.end());
  for (const char* section : {"layers:", "data:", "training:", "base:"}) {
    const std::string s = section;
    if (text.compare(0, s.size(), s) == 0 || text.find("\n" + s) != std::string::npos) return true;
  }
  return false;
}

// An ONNX ModelProto starts with ir_version (field 1, varint: 0x08, a small number), then
// another of its fields 2..8 (producer_name 0x12 ... graph 0x3a, opset_import 0x42).
bool starts_like_onnx(const std::vector<uint8_t>& head) {
  if (head.size() < 3 || head[0] != 0x08 || head[1] < 1 || head[1] > 32) return false;
  for (uint8_t tag : {0x12, 0x1a, 0x22, 0x28, 0x32, 0x3a, 0x42})
    if (head[2] == tag) return true;
  return false;
}

}  // namespace

bool is_onnx_file(const std::string& path) {
  if (has_extension(path, ".onnx")) return true;
  std::vector<uint8_t> head(3);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return starts_like_onnx(head);
}

void check_model_argument(const std::string& path, const std::string& command) {
  if (looks_like_model(path)) return;
  std::vector<uint8_t> head(4096);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  if (head.empty()) return;  // missing or empty: load_model says which
  if (has_extension(path, ".yaml") || has_extension(path, ".yml") || reads_as_config(head))
    throw UsageError(path + " is a YAML config, not a model: train it first (dltrain train " + path +
                     "), then give dltrain " + command + " the model.bin it writes");
  if (has_extension(path, ".onnx") || starts_like_onnx(head))
    throw UsageError(path + " is an ONNX model; dltrain " + command +
                     " takes a dltrain model: import it first (dltrain import " + path + " --output model.bin)");
}

}  // namespace dlt::app
