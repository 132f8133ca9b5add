// Model file reader/writer. Layout (all integers little-endian):
//   0 "DLTMODEL" | 8 u32 version | 12 u32 flags (0) | 16 u64 payload bytes |
//   24 u32 CRC-32 of bytes 0..23 | 28 u32 CRC-32 of the payload | 32 payload
// The first 28 bytes keep this layout in every version, so any reader can tell "newer" from
// "corrupt". The payload is a list of sections: 4-byte tag, u64 length, bytes. Tags: SPEC
// (network YAML), CLAS (class names), LBID (label IDs), TASK (task, responses), PARM / STAT
// (tensors), TRNG, META. Unknown tags are skipped.
#include "net/model_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "config/config.h"
#include "util/error.h"
#include "util/files.h"
#include "util/one_line.h"

namespace dlt {

namespace {

// Version 1's positionEmbedding added its table to its input: P becomes P_table (the table
// alone, version 2's layer, its learnables renamed with it) and an addition named P of the
// input and P_table, so that every layer reading P reads the same sum.
void upgrade_position_embeddings(NetworkSpec& net, std::vector<NamedTensor>& params) {
  std::vector<LayerSpec> out;
  out.reserve(net.layers.size());
  std::set<std::string> names;  // a set: a hostile spec may hold tens of thousands of layers
  for (const auto& l : net.layers) names.insert(l.name);
  std::map<std::string, std::string> renamed;  // positionEmbedding -> its table's new name
  for (size_t i = 0; i < net.layers.size(); ++i) {
    LayerSpec l = net.layers[i];
    if (l.type != "positionEmbedding") {
      out.push_back(std::move(l));
      continue;
    }
    const std::string name = l.name;
    const std::string input = !l.inputs.empty() ? l.inputs[0] : i > 0 ? net.layers[i - 1].name : "";
    std::string table = name + "_table";
    for (int k = 2; names.count(table); ++k) table = name + "_table" + std::to_string(k);
    names.insert(table);
    renamed[name] = table;
    l.name = table;
    l.inputs = {input};
    LayerSpec sum;
    sum.name = name;
    sum.type = "addition";
    sum.inputs = {input, table};
    sum.loc = l.loc;
    out.push_back(std::move(l));
    out.push_back(std::move(sum));
  }
  net.layers = std::move(out);
  for (auto& p : params)
    if (auto it = renamed.find(p.layer); it != renamed.end()) p.layer = it->second;
}

constexpr size_t kHeaderBytes = 32;
// The network spec is YAML, which yaml-cpp holds in about 90 times its size: a spec of 4 MiB
// (some 40,000 layers; real ones are under 100 KiB) parses in a few hundred MiB. Larger is
// refused before parsing.
constexpr uint64_t kMaxSpecBytes = 4u << 20;

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

// ---- writing ---------------------------------------------------------------------------------

class Writer {
 public:
  std::vector<uint8_t> bytes;
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void raw(const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  void floats(const std::vector<float>& v) {
    if constexpr (std::endian::native == std::endian::little) {
      raw(v.data(), v.size() * sizeof(float));
    } else {
      for (float f : v) u32(std::bit_cast<uint32_t>(f));
    }
  }
  void put_u32_at(size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  void put_u64_at(size_t at, uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes[at + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  // Starts a section; returns where its length goes (filled by end_section).
  size_t begin_section(const char tag[4]) {
    raw(tag, 4);
    size_t at = bytes.size();
    u64(0);
    return at;
  }
  void end_section(size_t at) { put_u64_at(at, bytes.size() - at - 8); }
};

void write_tensors(Writer& w, const char tag[4], const std::vector<NamedTensor>& tensors) {
  size_t at = w.begin_section(tag);
  w.u32(static_cast<uint32_t>(tensors.size()));
  for (const auto& t : tensors) {
    if (static_cast<int64_t>(t.data.size()) != t.shape.numel())
      throw ModelError("cannot save tensor " + t.layer + "." + t.name + ": it has " + std::to_string(t.data.size()) +
                       " values but its shape " + t.shape.str() + " needs " + std::to_string(t.shape.numel()));
    w.str(t.layer);
    w.str(t.name);
    w.u32(static_cast<uint32_t>(t.shape.rank()));
    for (int i = 0; i < t.shape.rank(); ++i) w.u64(static_cast<uint64_t>(t.shape[i]));
    w.floats(t.data);
  }
  w.end_section(at);
}

// ---- reading ---------------------------------------------------------------------------------

uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// Bounds-checked reader over [pos, end) of the file bytes.
class Reader {
 public:
  Reader(const uint8_t* base, size_t pos, size_t end, const std::string& file, std::string what)
      : base_(base), pos_(pos), end_(end), file_(file), what_(std::move(what)) {}
  size_t pos() const { return pos_; }
  size_t left() const { return end_ - pos_; }
  [[noreturn]] void fail(const std::string& msg) const {
    throw ModelError(file_ + ": " + what_ + " is corrupt at byte " + std::to_string(pos_) + ": " + msg +
                     " (file corrupt; re-export the model)");
  }
  void need(uint64_t n, const char* what) const {
    if (n > left())
      fail(std::string(what) + " needs " + std::to_string(n) + " bytes but only " + std::to_string(left()) + " remain");
  }
  uint32_t u32() {
    need(4, "a 32-bit integer");
    uint32_t v = get_u32(base_ + pos_);
    pos_ += 4;
    return v;
  }
  uint64_t u64() {
    need(8, "a 64-bit integer");
    uint64_t v = get_u64(base_ + pos_);
    pos_ += 8;
    return v;
  }
  std::string str() {
    uint32_t n = u32();
    need(n, "a string");
    std::string s(reinterpret_cast<const char*>(base_ + pos_), n);
    pos_ += n;
    return s;
  }
  std::string tag() {
    need(4, "a section tag");
    std::string t(reinterpret_cast<const char*>(base_ + pos_), 4);
    pos_ += 4;
    return t;
  }
  // A reader over the next n bytes (checked); this one moves past them.
  Reader sub(size_t n, std::string what) {
    need(n, what.c_str());
    Reader r(base_, pos_, pos_ + n, file_, std::move(what));
    pos_ += n;
    return r;
  }
  std::string rest() {
    std::string s(reinterpret_cast<const char*>(base_ + pos_), left());
    pos_ = end_;
    return s;
  }
  // A count of entries each taking at least min_bytes: checked before anyone reserves.
  uint32_t count(size_t min_bytes) {
    uint32_t n = u32();
    if (static_cast<uint64_t>(n) * min_bytes > left())
      fail("count " + std::to_string(n) + " does not fit in the " + std::to_string(left()) + " bytes left");
    return n;
  }
  void floats(std::vector<float>& out, uint64_t n) {
    need(n * sizeof(float), "tensor data");  // caller guarantees n * 4 does not overflow
    out.resize(n);
    if (n == 0) return;  // an empty vector's data() may be null, which memcpy must not get
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(out.data(), base_ + pos_, n * sizeof(float));
    } else {
      for (uint64_t i = 0; i < n; ++i) out[i] = std::bit_cast<float>(get_u32(base_ + pos_ + 4 * i));
    }
    pos_ += n * sizeof(float);
  }

 private:
  const uint8_t* base_;
  size_t pos_, end_;
  const std::string& file_;
  std::string what_;
};

std::vector<NamedTensor> read_tensors(Reader& r) {
  std::vector<NamedTensor> out;
  uint32_t n = r.count(12);  // two empty strings and a rank
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    NamedTensor t;
    t.layer = r.str();
    t.name = r.str();
    uint32_t rank = r.u32();
    if (rank > static_cast<uint32_t>(Shape::kMaxRank))
      r.fail("tensor " + t.layer + "." + t.name + " has rank " + std::to_string(rank));
    uint64_t numel = 1;
    for (uint32_t d = 0; d < rank; ++d) {
      uint64_t dim = r.u64();
      // Every partial product must fit in the bytes left, so the total cannot overflow.
      if (dim > (1ull << 40) || (dim != 0 && numel > (r.left() / sizeof(float)) / dim))
        r.fail("tensor " + t.layer + "." + t.name + " dimension " + std::to_string(dim) + " makes it larger than the " +
               std::to_string(r.left()) + " bytes left");
      numel *= dim;
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    if (numel > r.left() / sizeof(float))
      r.fail("tensor " + t.layer + "." + t.name + " (" + t.shape.str() + ") is larger than the " +
             std::to_string(r.left()) + " bytes left");
    r.floats(t.data, numel);
    out.push_back(std::move(t));
  }
  return out;
}

[[noreturn]] void sys_fail(const std::string& path, const std::string& what, int err) {
  throw ModelError(path + ": cannot " + what + " (" + std::strerror(err) + ")");
}

}  // namespace

uint32_t crc32(const void* data, size_t bytes, uint32_t crc) {
  const auto& t = crc_table();
  const uint8_t* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t i = 0; i < bytes; ++i) crc = t[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

std::vector<uint8_t> encode_model(const ModelData& m) {
  Writer w;
  w.raw(kModelMagic, 8);
  w.u32(kModelFormatVersion);
  w.u32(0);  // flags
  w.u64(0);  // payload bytes, below
  w.u32(0);  // header CRC, below
  w.u32(0);  // payload CRC, below
  size_t at = w.begin_section("SPEC");
  const std::string spec = network_spec_to_yaml(m.network);
  if (spec.size() > kMaxSpecBytes)  // never write a file that load_model refuses
    throw ModelError("cannot save the model: its network spec is " + std::to_string(spec.size()) +
                     " bytes of YAML, more than the " + std::to_string(kMaxSpecBytes) + " a model file holds");
  w.raw(spec.data(), spec.size());
  w.end_section(at);
  at = w.begin_section("CLAS");
  w.u32(static_cast<uint32_t>(m.classes.size()));
  for (const auto& c : m.classes) w.str(c);
  w.end_section(at);
  if (!m.label_ids.empty()) {  // a later section: older version-1 readers skip it
    at = w.begin_section("LBID");
    w.u32(static_cast<uint32_t>(m.label_ids.size()));
    for (const auto& values : m.label_ids) {
      w.u32(static_cast<uint32_t>(values.size()));
      for (const auto& v : values) {
        w.u32(static_cast<uint32_t>(v.size()));
        for (int64_t x : v) w.u32(static_cast<uint32_t>(x));
      }
    }
    w.end_section(at);
  }
  if (!m.task.empty()) {  // a later section: older version-1 readers skip it
    at = w.begin_section("TASK");
    w.str(m.task);
    w.u32(static_cast<uint32_t>(m.responses.names.size()));
    for (const auto& n : m.responses.names) w.str(n);
    w.u32(static_cast<uint32_t>(m.responses.mean.size()));
    for (size_t i = 0; i < m.responses.mean.size(); ++i) {
      w.u32(std::bit_cast<uint32_t>(m.responses.mean[i]));
      w.u32(std::bit_cast<uint32_t>(m.responses.std.at(i)));
    }
    w.end_section(at);
  }
  write_tensors(w, "PARM", m.params);
  write_tensors(w, "STAT", m.states);
  at = w.begin_section("TRNG");
  w.raw(m.training_yaml.data(), m.training_yaml.size());
  w.end_section(at);
  at = w.begin_section("META");
  w.raw(m.metadata_json.data(), m.metadata_json.size());
  w.end_section(at);
  w.put_u64_at(16, w.bytes.size() - kHeaderBytes);
  w.put_u32_at(24, crc32(w.bytes.data(), 24));
  w.put_u32_at(28, crc32(w.bytes.data() + kHeaderBytes, w.bytes.size() - kHeaderBytes));
  return std::move(w.bytes);
}

namespace {

ModelData decode(const std::vector<uint8_t>& b, const std::string& name) {
  const size_t size = b.size();
  if (size == 0) throw ModelError(name + ": empty file (not a dltrain model)");
  if (std::memcmp(b.data(), kModelMagic, std::min<size_t>(size, 8)) != 0)
    throw ModelError(name + ": not a dltrain model (bad magic)");
  if (size < kHeaderBytes)
    throw ModelError(name + ": truncated at byte " + std::to_string(size) + " (the header alone is " +
                     std::to_string(kHeaderBytes) + " bytes)");
  if (crc32(b.data(), 24) != get_u32(b.data() + 24))
    throw ModelError(name + ": header checksum mismatch (file corrupt)");
  const uint32_t version = get_u32(b.data() + 8);
  if (version > kModelFormatVersion)
    throw ModelError(name + ": format version " + std::to_string(version) + " is newer than this dltrain (" +
                     std::to_string(kModelFormatVersion) + "); use a newer dltrain");
  if (version == 0) throw ModelError(name + ": invalid format version 0 (file corrupt)");
  const uint64_t payload = get_u64(b.data() + 16);
  if (payload > size - kHeaderBytes)  // no overflow: compares with what is there
    throw ModelError(name + ": truncated at byte " + std::to_string(size) + " of " +
                     std::to_string(static_cast<unsigned long long>(payload) + kHeaderBytes));
  const size_t total = kHeaderBytes + static_cast<size_t>(payload);
  if (size > total)
    throw ModelError(name + ": " + std::to_string(size - total) + " unexpected bytes after the end at byte " +
                     std::to_string(total) + " (file corrupt)");
  if (crc32(b.data() + kHeaderBytes, payload) != get_u32(b.data() + 28))
    throw ModelError(name + ": checksum mismatch (file corrupt)");

  ModelData m;
  bool have_spec = false;
  std::vector<std::string> seen;
  Reader top(b.data(), kHeaderBytes, total, name, "the section list");
  while (top.left() > 0) {
    top.need(12, "a section header");
    std::string tag = top.tag();
    uint64_t len = top.u64();
    for (const auto& s : seen)
      if (s == tag) top.fail("section " + tag + " appears twice");
    seen.push_back(tag);
    Reader r = top.sub(static_cast<size_t>(len), "section " + tag);
    if (tag == "SPEC") {
      if (len > kMaxSpecBytes)
        r.fail("the network spec is " + std::to_string(len) + " bytes, more than the " + std::to_string(kMaxSpecBytes) +
               " dltrain reads");
      try {
        m.network = network_spec_from_yaml(r.rest(), name + " (network spec)");
      } catch (const ConfigError& e) {
        throw ModelError(name + ": the stored network spec is invalid: " + e.what());
      }
      have_spec = true;
    } else if (tag == "CLAS") {
      uint32_t n = r.count(4);
      m.classes.reserve(n);
      for (uint32_t i = 0; i < n; ++i) m.classes.push_back(r.str());
    } else if (tag == "LBID") {
      uint32_t n = r.count(4);
      m.label_ids.resize(n);
      for (auto& values : m.label_ids) {
        values.resize(r.count(4));
        for (auto& v : values) {
          v.resize(r.count(4));
          if (v.size() != 1 && v.size() != 3) r.fail("a label ID has " + std::to_string(v.size()) + " values");
          for (auto& x : v) x = r.u32();
        }
      }
    } else if (tag == "TASK") {
      m.task = r.str();
      if (m.task != "classification" && m.task != "segmentation" && m.task != "regression" && m.task != "multilabel")
        r.fail("unknown task '" + one_line(m.task) + "'");
      m.responses.names.resize(r.count(4));
      for (auto& n : m.responses.names) n = r.str();
      const uint32_t k = r.count(8);
      if (k != 0 && k != m.responses.names.size())
        r.fail(std::to_string(k) + " response statistics for " + std::to_string(m.responses.names.size()) +
               " responses");
      for (uint32_t i = 0; i < k; ++i) {
        m.responses.mean.push_back(std::bit_cast<float>(r.u32()));
        m.responses.std.push_back(std::bit_cast<float>(r.u32()));
      }
    } else if (tag == "PARM") {
      m.params = read_tensors(r);
    } else if (tag == "STAT") {
      m.states = read_tensors(r);
    } else if (tag == "TRNG") {
      m.training_yaml = r.rest();
    } else if (tag == "META") {
      m.metadata_json = r.rest();
    } else {
      r.rest();  // written by a later writer of this version: skipped
    }
    if (r.left() != 0) r.fail(std::to_string(r.left()) + " bytes left over at the end of the section");
  }
  if (!have_spec) throw ModelError(name + ": no network spec section (file corrupt)");
  if (version < 2) upgrade_position_embeddings(m.network, m.params);
  return m;
}

}  // namespace

ModelData decode_model(const std::vector<uint8_t>& b, const std::string& name) {
  try {
    return decode(b, name);
  } catch (const ModelError& e) {  // names from the file may hold line breaks or escapes
    throw ModelError(one_line(e.what()));
  }
}

void save_model(const std::string& path, const ModelData& model) {
  const std::vector<uint8_t> bytes = encode_model(model);
  const OutputTarget target = output_target(path);  // a device or FIFO is written through
  if (target.kind != OutputTarget::Kind::kReplace) {
    try {
      return write_through(target, path, bytes.data(), bytes.size());
    } catch (const Error& e) {
      throw ModelError(e.what());
    }
  }
  const std::string tmp = temporary_name(target.path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) sys_fail(tmp, "create the model file", errno);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(tmp.c_str());
      sys_fail(tmp, "write the model file", err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    sys_fail(tmp, "flush the model file", err);
  }
  if (::rename(tmp.c_str(), target.path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    sys_fail(path, "rename " + tmp + " to it", err);
  }
  // Make the rename durable too (best effort: some filesystems refuse directory fsync).
  size_t slash = target.path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : target.path.substr(0, slash));
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

ModelData load_model(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) sys_fail(path, "open the model file", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    sys_fail(path, "read the model file", err);
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));  // the file's real size
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      sys_fail(path, "read the model file", err);
    }
    if (n == 0) break;  // shrank while reading: decode reports it as truncated
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return decode_model(bytes, path);
}

bool looks_like_model(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char head[8];
  ssize_t n = ::read(fd, head, sizeof(head));
  ::close(fd);
  return n == 8 && std::memcmp(head, kModelMagic, 8) == 0;
}

}  // namespace dlt
