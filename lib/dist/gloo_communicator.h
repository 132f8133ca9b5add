// GlooCommunicator: CPU collectives over Gloo's TCP transport; ranks meet through a
// FileStore in a directory every rank can see (local /tmp for one machine, a shared file
// system across nodes) or through rank 0's TCP store (options.rendezvous_tcp, tcp_store.h).
// Built only when Gloo is found (DLT_HAVE_GLOO).
#pragma once
#include <memory>

#include "dist/communicator.h"

namespace dlt {

// Connects the full mesh; throws CommError naming the rank, the rendezvous and the fix when
// peers do not show up within options.timeout.
std::unique_ptr<Communicator> make_gloo_communicator(const CommOptions& options);

}  // namespace dlt
