// Which rank was lost, for the message of a failed collective. A collective that times out
// only says that it waited too long, and in a ring every rank waits on its neighbour, so a
// rank cannot tell from Gloo which peer is dead, stopped or cut off. With a TCP rendezvous
// (rank 0's store, tcp_store.h) every rank bumps its own key in the store every `interval`
// from a background thread and reads the others'; a rank whose counter has not moved for
// 3 intervals is lost, and so is rank 0 when its store stops answering.
#pragma once
#include <chrono>
#include <memory>
#include <string>

#include "dist/tcp_store.h"

namespace dlt {

class PeerWatch {
 public:
  // Starts the heartbeat thread. store: rank 0's server on rank 0, a client of it elsewhere
  // (a connection of its own: the thread is its only user); `where` names it for messages.
  PeerWatch(std::shared_ptr<KeyValueStore> store, std::string where, int rank, int size,
            std::chrono::milliseconds timeout);
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  // "lost rank 2 (no heartbeat for 3.4 s)" or "lost rank 0 (the rendezvous server at H:P,
  // which it runs, has not answered for 1.2 s)"; waits up to 4 intervals for the evidence (a peer killed a moment ago
  // still looks alive). Empty when every peer still beats (a hang inside a live process).
  // A rank that finds a lost peer itself publishes its finding in the store for the others.
  std::string lost_ranks();

  // The heartbeat period for a collective timeout: timeout / 8, within 0.1 .. 2 s.
  static std::chrono::milliseconds interval_for(std::chrono::milliseconds timeout);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace dlt
