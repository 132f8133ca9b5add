// TensorBoard event files: tensorflow.Event protocol buffers (event.proto, summary.proto) in
// TFRecord framing (util/tfrecord.h), encoded by hand in the protobuf wire format with the
// few fields TensorBoard reads:
//   Event         { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary       { repeated Value value = 1; }
//   Summary.Value { string tag = 1; float simple_value = 2; Image image = 4; }
//   Summary.Image { int32 height = 1; int32 width = 2; int32 colorspace = 3; bytes encoded_image_string = 4; }
// The file starts with an Event whose file_version is "brain.Event:2". No reader here.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "util/tfrecord.h"

namespace dlt {

// An Event carrying file_version.
std::string encode_file_version_event(double wall_time, const std::string& version = "brain.Event:2");
// An Event with one Summary.Value{tag, simple_value} per entry, all at `step`.
std::string encode_scalars_event(double wall_time, int64_t step,
                                 const std::vector<std::pair<std::string, float>>& values);
// An Event with one Summary.Value{tag, image}: encoded PNG (or JPEG) bytes, colorspace as
// summary.proto numbers it (1 grey, 3 RGB, 4 RGBA).
std::string encode_image_event(double wall_time, int64_t step, const std::string& tag, int height, int width,
                               int colorspace, const std::string& encoded);

// The name TensorBoard globs for: events.out.tfevents.<seconds since 1970>.<host name>.
std::string event_file_name(double wall_time);

class EventFileWriter {
 public:
  // Creates `dir` and a new event file in it (a name already taken gets .1, .2 ... appended),
  // and writes the file_version record. Throws Error naming the folder or file.
  explicit EventFileWriter(const std::string& dir);
  const std::string& path() const { return file_->path(); }
  // Each call appends one record (one write(2)); wall_time is the time now.
  void add_scalars(int64_t step, const std::vector<std::pair<std::string, float>>& values);
  void add_image(int64_t step, const std::string& tag, int height, int width, int colorspace,
                 const std::string& encoded);

 private:
  std::unique_ptr<TfRecordWriter> file_;
};

// Seconds since 1970 as a double (Event.wall_time).
double wall_time_now();

}  // namespace dlt
