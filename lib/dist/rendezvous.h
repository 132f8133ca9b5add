// Rendezvous for small blobs (the NCCL unique id). In a directory every rank sees: one rank
// publishes bytes under a name (a temporary name, then rename, so readers never see a partial
// file); the others poll for it until a deadline. Or through rank 0's TCP store (tcp_store.h)
// when the ranks share no directory. No CUDA.
#pragma once
#include <chrono>
#include <memory>
#include <string>

#include "dist/communicator.h"
#include "dist/tcp_store.h"

namespace dlt {

// Writes bytes to dir/name atomically (creates dir). Throws CommError naming the path and the
// fix when the directory cannot be written.
void publish_file(const std::string& dir, const std::string& name, const std::string& bytes);

// Waits until dir/name holds exactly `bytes` bytes and returns them. Throws CommError naming
// `who` (e.g. "rank 1 of 2"), the path and the timeout when it does not appear in time.
std::string wait_for_file(const std::string& dir, const std::string& name, size_t bytes,
                          std::chrono::milliseconds timeout, const std::string& who);

// The store of o's TCP rendezvous (o.rendezvous_tcp) for rank o.rank: rank 0 serves it on the
// address's port, the others connect to it (timeout o.timeout).
std::unique_ptr<KeyValueStore> open_rendezvous_store(const CommOptions& o);

// Rank 0's `bytes` (exactly `size` of them) to every rank of o's world under `name`: a file in
// o.rendezvous_dir, or a key of o.rendezvous_tcp's store. Returns them on every rank. For a TCP
// rendezvous `keep` receives rank 0's server, which must live until every rank has them.
std::string share_from_rank0(const CommOptions& o, const std::string& name, const std::string& bytes, size_t size,
                             std::unique_ptr<KeyValueStore>& keep);

// "rank R of N", for messages.
std::string rank_of(const CommOptions& o);
// Where o's ranks meet, for messages: "the rendezvous directory D" or "the rendezvous server
// at HOST:PORT".
std::string rendezvous_place(const CommOptions& o);

}  // namespace dlt
