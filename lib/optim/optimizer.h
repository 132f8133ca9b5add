// Solvers (sgdm, adam, rmsprop and dltrain's adamw) over the network's parameters, with
// MATLAB's per-parameter learn-rate and L2 factors (the L2 factor also scales adamw's
// WeightDecay) and gradient clipping (GradientThreshold / GradientThresholdMethod);
// the learning-rate schedule is optim/schedule.h. State tensors are allocated once, on the
// parameters' device.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "config/options.h"
#include "layers/layer.h"

namespace dlt {

class Optimizer {
 public:
  Optimizer(const TrainingOptions& options, std::vector<Param*> params);
  // Clips the gradients, then updates every non-frozen parameter with base rate lr.
  void step(double lr);
  int64_t steps() const { return t_; }

  // Per-step scalars in device memory, for a step captured as a CUDA graph (docs/gpu.md):
  // step(lr) becomes prepare(lr) + update(). prepare counts the step and uploads its learning
  // rates and Adam's corrections in one copy (outside any capture); update clips and issues
  // the updates reading them (capturable: clipping reads nothing back either). Bit-identical to
  // the by-value updates. Off by default. A replayed graph runs the updates without update()
  // being called, so prepare() may follow prepare(); update() may be issued again for the
  // same step (a capture that failed is issued directly).
  void set_device_scalars(bool on);
  bool device_scalars() const { return scalars_.defined(); }
  void prepare(double lr);
  void update();

  // Solver state for checkpoints: named per parameter index ("p3/m").
  struct Slot {
    std::string name;
    Tensor* tensor;
  };
  std::vector<Slot> state();
  void set_steps(int64_t t) { t_ = t; }

 private:
  void clip();
  UpdateRule rule(const Param& p) const;  // the solver's constants and p's L2 factor (L2 and adamw's decay)
  TrainingOptions o_;
  std::vector<Param*> params_;
  std::vector<Tensor> m_, s_;  // sgdm velocity / adam(w) first moment; adam(w) and rmsprop second moment
  Tensor norms_;               // clipping by norm: L2 norms, per parameter (l2norm) or one (global)
  int64_t t_ = 0;
  // Device-scalar mode: [c1, c2, lr of parameter 0, 1, ...] on the host and on the device.
  Tensor scalars_host_, scalars_;
  int64_t prepared_step_ = -1;  // t_ of the last prepare(): update() needs it to be t_
};

}  // namespace dlt
