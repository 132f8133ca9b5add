// File rendezvous for small blobs (the NCCL unique id): one rank publishes bytes under a name
// in a directory every rank sees (write to a temporary name, then rename, so readers never
// see a partial file); the others poll for it until a deadline. No sockets, no CUDA.
#pragma once
#include <chrono>
#include <string>

namespace dlt {

// Writes bytes to dir/name atomically (creates dir). Throws CommError naming the path and the
// fix when the directory cannot be written.
void publish_file(const std::string& dir, const std::string& name, const std::string& bytes);

// Waits until dir/name holds exactly `bytes` bytes and returns them. Throws CommError naming
// `who` (e.g. "rank 1 of 2"), the path and the timeout when it does not appear in time.
std::string wait_for_file(const std::string& dir, const std::string& name, size_t bytes,
                          std::chrono::milliseconds timeout, const std::string& who);

}  // namespace dlt
