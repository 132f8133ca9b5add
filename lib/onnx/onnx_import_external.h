// External data of ONNX initializers (what torch.onnx.export's default exporter writes:
// weights in "m.onnx.data" beside "m.onnx"). Reads only regular files inside the model's own
// folder: the location relative, without "..", and inside that folder after symlinks are
// resolved; each tensor's range (offset, length) is read once with pread, never a whole file.
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace dlt::onnxu {

class ExternalData {
 public:
  // model_path names the model in errors; folder is the folder whose files may be read
  // (empty: the model came from memory, and every external tensor is refused).
  ExternalData(std::string model_path, std::string folder);
  ~ExternalData();
  ExternalData(const ExternalData&) = delete;
  ExternalData& operator=(const ExternalData&) = delete;

  // A copy of t (marked EXTERNAL) with its bytes in raw_data. Throws ModelError naming
  // `what`, the tensor, the data file and the fix.
  std::unique_ptr<onnx::TensorProto> load(const onnx::TensorProto& t, const std::string& what);

  // The real path of the folder holding `model_path` ("" if it cannot be resolved).
  static std::string folder_of(const std::string& model_path);

 private:
  struct File {
    int fd = -1;
    int64_t size = 0;
    std::string path;  // the real path
  };
  const File& open_file(const std::string& location, const std::string& name);

  std::string model_path_, folder_;
  std::map<std::string, File> files_;  // by location
};

}  // namespace dlt::onnxu
