// External initializer data (onnx_import_external.h).
#include "onnx/onnx_import_external.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "onnx/onnx_proto_util.h"
#include "util/error.h"

namespace dlt::onnxu {

namespace {

// The path with symlinks resolved; "" and errno when it cannot be.
std::string real_path(const std::string& p, int* err = nullptr) {
  char buf[PATH_MAX];
  if (!::realpath(p.c_str(), buf)) {
    if (err) *err = errno;
    return "";
  }
  return buf;
}

// A non-negative decimal integer, or -1.
int64_t parse_size(const std::string& s) {
  if (s.empty() || s.size() > 18) return -1;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

bool has_dotdot(const std::string& location) {
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find('/', start);
    if (end == std::string::npos) end = location.size();
    if (location.compare(start, end - start, "..") == 0 && end - start == 2) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

ExternalData::ExternalData(std::string model_path, std::string folder)
    : model_path_(std::move(model_path)), folder_(std::move(folder)) {}

ExternalData::~ExternalData() {
  for (auto& [location, f] : files_)
    if (f.fd >= 0) ::close(f.fd);
}

std::string ExternalData::folder_of(const std::string& model_path) {
  const size_t slash = model_path.rfind('/');
  return real_path(slash == std::string::npos ? "." : slash == 0 ? "/" : model_path.substr(0, slash));
}

const ExternalData::File& ExternalData::open_file(const std::string& location, const std::string& name) {
  if (auto it = files_.find(location); it != files_.end()) return it->second;
  const std::string fix = " (keep the data file in the model's folder, as the exporter saved it)";
  if (location.empty()) throw ModelError(name + " has external data without a location (the file is corrupt)");
  if (location.find('\0') != std::string::npos)
    throw ModelError(name + " has an external data location with a NUL byte (the file is corrupt)");
  if (location[0] == '/')
    throw ModelError(name + " keeps its data at the absolute path '" + location +
                     "'; dltrain reads external data only from files inside the model's folder, named relative to it" +
                     fix);
  if (has_dotdot(location))
    throw ModelError(name + " keeps its data at '" + location +
                     "', which leaves the model's folder through '..'; dltrain reads external data only from files "
                     "inside the model's folder" +
                     fix);
  const std::string joined = folder_ + "/" + location;
  int err = 0;
  const std::string real = real_path(joined, &err);
  if (real.empty())
    throw ModelError(
        name + " keeps its data in '" + joined + "', which " +
        (err == ENOENT ? "does not exist" : "cannot be resolved (" + std::string(std::strerror(err)) + ")") + fix);
  if (real.compare(0, folder_.size() + 1, folder_ + "/") != 0 || real.size() <= folder_.size() + 1)
    throw ModelError(name + " keeps its data in '" + joined + "', which is a link to '" + real +
                     "' outside the model's folder '" + folder_ +
                     "'; dltrain reads external data only from inside it (copy the file into the folder)");
  const int fd = ::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw ModelError(name + " keeps its data in '" + real + "', which cannot be opened (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw ModelError(name + " keeps its data in '" + real + "', which is not a regular file" + fix);
  }
  File& f = files_[location];
  f.fd = fd;
  f.size = static_cast<int64_t>(st.st_size);
  f.path = real;
  return f;
}

std::unique_ptr<onnx::TensorProto> ExternalData::load(const onnx::TensorProto& t, const std::string& what) {
  const std::string name = what + ": tensor '" + t.name() + "'";
  std::string location, offset_s = "0", length_s;
  bool has_length = false;
  for (const auto& e : t.external_data()) {
    if (e.key() == "location") location = e.value();
    if (e.key() == "offset") offset_s = e.value();
    if (e.key() == "length") length_s = e.value(), has_length = true;
  }
  if (folder_.empty())
    throw ModelError(name + " keeps its data in an external file ('" + location +
                     "'), which an import from memory cannot read (import the .onnx file from its folder, or save "
                     "the model with its weights inside: onnx.save(m, f, save_as_external_data=False))");
  const int64_t n = checked_values(t, what);
  const size_t bytes_per = element_bytes(t.data_type());
  if (bytes_per == 0)
    throw ModelError(name + " has data type " + std::to_string(t.data_type()) +
                     ", which dltrain does not read from external data (convert the model to float32)");
  const int64_t want = n * static_cast<int64_t>(bytes_per);  // n <= 2^32, bytes_per <= 16
  const int64_t offset = parse_size(offset_s), length = has_length ? parse_size(length_s) : want;
  if (offset < 0 || length < 0)
    throw ModelError(name + " has external data " + (offset < 0 ? "offset '" + offset_s : "length '" + length_s) +
                     "', not a byte count of 0 to 18 digits (the file is corrupt; export the model again)");
  if (length != want)
    throw ModelError(name + " has " + std::to_string(length) + " bytes of external data for " + dims_str(t) + " = " +
                     std::to_string(n) + " values of " + std::to_string(bytes_per) + " bytes (the file is corrupt)");
  const File& f = open_file(location, name);
  if (offset > f.size || length > f.size - offset)
    throw ModelError(name + " reads bytes " + std::to_string(offset) + ".." + std::to_string(offset + length) +
                     " of '" + f.path + "', which has " + std::to_string(f.size) +
                     " bytes (the data file is truncated or belongs to another model; export the model again)");
  auto out = std::make_unique<onnx::TensorProto>(t);
  out->clear_external_data();
  out->set_data_location(onnx::TensorProto::DEFAULT);
  std::string data(static_cast<size_t>(length), '\0');
  for (int64_t done = 0; done < length;) {
    const ssize_t got = ::pread(f.fd, data.data() + done, static_cast<size_t>(length - done), offset + done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw ModelError(name + ": reading '" + f.path + "' failed at byte " + std::to_string(offset + done) + " (" +
                       (got < 0 ? std::strerror(errno) : "unexpected end of file") + ")");
    done += got;
  }
  out->set_raw_data(std::move(data));
  return out;
}

}  // namespace dlt::onnxu
