// Crash-safe file output: write to a temporary name in the same folder, flush and fsync,
// then rename over the target, so a reader never sees a half-written file and kill -9
// leaves either the old or the new one.
#pragma once
#include <string>

namespace dlt {

void write_file_atomic(const std::string& path, const std::string& contents);
// The temporary name this process writes `path` under before renaming it: PATH.tmp-PID.
// It first removes PATH.tmp-N files left by processes of this host that are gone (a kill -9
// during a write), so repeated kills and resumes do not pile them up.
std::string temporary_name(const std::string& path);
std::string read_file(const std::string& path);  // throws DataError naming the path
// Creates a directory and its parents; throws Error naming the path on failure.
void make_dirs(const std::string& path);

}  // namespace dlt
