// The trained-model file: network spec (YAML), parameters, states (batch-norm statistics,
// input normalization), class names, training options and free-form metadata, in one
// checksummed little-endian binary file. Independent of the Network class: callers convert.
// Loading never trusts a length before checking it against the bytes present.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "layers/spec.h"
#include "tensor/shape.h"

namespace dlt {

struct NamedTensor {
  std::string layer, name;  // "conv1", "Weights"
  Shape shape;              // as the layer declares it, e.g. (K, kh, kw, C)
  std::vector<float> data;  // shape.numel() values, row-major
};

struct ModelData {
  NetworkSpec network;
  std::vector<NamedTensor> params;
  std::vector<NamedTensor> states;
  std::vector<std::string> classes;
  // Segmentation: the LabelIDs of each class (data.LabelIDs; see DataOptions), so that
  // `dltrain segment` reads ground-truth label images as training did. Empty otherwise.
  std::vector<std::vector<std::vector<int64_t>>> label_ids;
  // What the network predicts: "classification", "segmentation", "regression" or "multilabel"
  // (empty in files written before tasks: classification or segmentation by label_ids).
  std::string task;
  // Regression: the responses' names (the table's header) and, with response normalisation,
  // their training mean and standard deviation: a prediction is output * std + mean.
  struct Responses {
    std::vector<std::string> names;
    std::vector<float> mean, std;
  } responses;
  std::string training_yaml;  // the training: section it was trained with
  std::string metadata_json;  // free-form (dltrain version, date, accuracy, ...)
};

inline constexpr char kModelMagic[8] = {'D', 'L', 'T', 'M', 'O', 'D', 'E', 'L'};
// 2: positionEmbedding outputs its table alone (MATLAB's positionEmbeddingLayer); in version 1
// files it added the table to its input, and reading one rewrites each such layer P as a
// positionEmbedding P_table and an addition P of its input and P_table (the same function).
inline constexpr uint32_t kModelFormatVersion = 2;

// Writes path + ".tmp-<pid>", fsyncs it and renames it over path, so readers never see a
// half-written model. Throws ModelError naming the path and the system error.
void save_model(const std::string& path, const ModelData& model);
// Reads and verifies a model. Throws ModelError "path: problem" for a missing, empty,
// foreign, truncated, corrupt or newer-version file.
ModelData load_model(const std::string& path);
// True when the file starts with the model magic (it may still be corrupt).
bool looks_like_model(const std::string& path);

// The file as bytes (what save_model writes) and back; load_model = read file + decode.
std::vector<uint8_t> encode_model(const ModelData& model);
ModelData decode_model(const std::vector<uint8_t>& bytes, const std::string& name);

// CRC-32 (IEEE 802.3, as zlib's crc32), used for the header and payload checksums.
uint32_t crc32(const void* data, size_t bytes, uint32_t crc = 0);

}  // namespace dlt
