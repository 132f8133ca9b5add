// The MODEL argument of classify and segment: a YAML config or an ONNX file given in its place
// is named as such, with the command that makes a dltrain model of it. info reads ONNX files.
#pragma once
#include <string>

namespace dlt::app {

// Throws UsageError when `path` is a YAML config (.yaml/.yml, or text that reads as one) or an
// ONNX model (.onnx, or protobuf bytes that start like one) rather than a dltrain model;
// returns otherwise (load_model reports anything else). `command` names the subcommand.
void check_model_argument(const std::string& path, const std::string& command);

// An ONNX model: .onnx, or protobuf bytes that start like one.
bool is_onnx_file(const std::string& path);

}  // namespace dlt::app
