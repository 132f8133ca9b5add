// Crash-safe file output: write to a temporary name in the same folder, flush and fsync,
// then rename over the target, so a reader never sees a half-written file and kill -9
// leaves either the old or the new one. A path that exists and is no regular file (a device
// such as /dev/null, a FIFO, /dev/stdout) is written through instead, never renamed over.
#pragma once
#include <cstddef>
#include <string>

namespace dlt {

// How bytes for an output path reach it (output_target):
//   kReplace: an absent path or a regular file: a temporary name in `path`'s folder, renamed
//     over `path`. A symbolic link is followed: to a regular file, that file (its canonical
//     path) is replaced in its own folder and the link stays; a dangling link is replaced.
//   kDescriptor: the path names one of this process's open descriptors (/dev/stdout,
//     /dev/fd/N, /proc/self/fd/N): the bytes are written to descriptor `fd`, as a shell's
//     redirection would, whatever it is open on (a pipe, a terminal, a file opened with >>).
//   kThrough: anything else that exists (character or block device, FIFO, socket, or a link to
//     one): opened for writing and written in place; a FIFO's open waits for its reader.
// A folder is kReplace: the rename fails and the error names it.
struct OutputTarget {
  enum class Kind { kReplace, kDescriptor, kThrough };
  Kind kind = Kind::kReplace;
  std::string path;  // kReplace: the file renamed over; kThrough: the path opened
  int fd = -1;       // kDescriptor: the descriptor written to
};
OutputTarget output_target(const std::string& path);
// Writes `size` bytes to a kDescriptor or kThrough target (flushing stdio's stdout/stderr
// first when the descriptor is theirs); throws Error naming `path` when it cannot.
void write_through(const OutputTarget& target, const std::string& path, const void* data, size_t size);
// Whether `path` is the file this process's standard output is (the same device and inode):
// /dev/stdout, or the terminal or file it goes to. A report then belongs on stderr.
bool is_standard_output(const std::string& path);

// Writes `contents` to `path` as output_target says: atomically (temporary name, checked
// write, fsync, rename) for kReplace, in place otherwise. Throws Error naming `path`.
void write_file_atomic(const std::string& path, const std::string& contents);
// The temporary name this process writes `path` under before renaming it: PATH.tmp-PID.
// It first removes PATH.tmp-N files left by processes of this host that are gone (a kill -9
// during a write), so repeated kills and resumes do not pile them up.
std::string temporary_name(const std::string& path);
std::string read_file(const std::string& path);  // throws DataError naming the path
// Creates a directory and its parents; throws Error naming the path on failure.
void make_dirs(const std::string& path);

}  // namespace dlt
