// Network::run_empty_share: a data-parallel rank with no images of the global batch still
// joins the collectives of the layers that run them (synchronized batch norm); and the pass of
// BatchNormalizationStatistics population over the layers.
#include <algorithm>

#include "backend/collectives.h"
#include "net/network.h"

namespace dlt {

void Network::run_empty_share_forward(const RunContext& ctx) {
  if (!ctx.comm || ctx.comm->size() <= 1) return;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if (n.alias_of >= 0 || !n.layer->joins_collectives()) continue;
    Tensor x(batch_shape(0, nodes_[root(n.inputs[0])].shape), device_);
    Tensor y(batch_shape(0, n.shape), device_);
    n.layer->forward({&x}, y, ctx);
  }
}

bool Network::has_population_statistics() const {
  return std::any_of(nodes_.begin(), nodes_.end(),
                     [](const Node& n) { return n.alias_of < 0 && n.layer->has_population_statistics(); });
}

void Network::start_population_statistics() {
  for (Node& n : nodes_)
    if (n.alias_of < 0) n.layer->start_population_statistics();
}

void Network::finish_population_statistics() {
  for (Node& n : nodes_)
    if (n.alias_of < 0) n.layer->finish_population_statistics();
}

void Network::run_empty_share(const RunContext& ctx) {
  backend_->fill(flat_grads_, 0.f);
  if (ctx.comm && ctx.comm->size() > 1) {
    auto joins = [&](const Node& n) { return n.alias_of < 0 && n.layer->joins_collectives(); };
    Tensor y, dy, dx;
    run_empty_share_forward(ctx);
    for (int i = backward_from_; i >= 1; --i) {
      Node& n = nodes_[i];
      if (joins(n) && n.needs_grad) {
        Tensor x(batch_shape(0, nodes_[root(n.inputs[0])].shape), device_);
        y = Tensor(batch_shape(0, n.shape), device_);
        dy = Tensor(batch_shape(0, n.shape), device_);
        dx = Tensor(x.shape(), device_);
        n.layer->backward({&x}, y, dy, {grad_target(i, n.inputs[0]) ? &dx : nullptr}, ctx);
      }
      if (grads_ready_) grads_ready_(n.param_offset);
    }
  } else {
    for (int i = backward_from_; i >= 1; --i)
      if (grads_ready_) grads_ready_(nodes_[i].param_offset);
  }
  if (grads_ready_) grads_ready_(0);
}

}  // namespace dlt
