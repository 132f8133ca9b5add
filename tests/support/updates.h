// The solvers' updates by value, as tests call them: thin wrappers around the one
// Backend::optimizer_update path (formulas in backend/solver.h).
#pragma once
#include "backend/backend.h"

namespace dlt::test {

inline void sgdm_update(Backend& be, Tensor& w, const Tensor& g, Tensor& v, float lr, float momentum, float l2) {
  UpdateRule r;
  r.solver = Solver::kSgdm;
  r.momentum = momentum;
  r.l2 = l2;
  Tensor none;
  be.optimizer_update(r, StepScalars::at_step(r, lr, 1), w, g, v, none);
}

inline void adam_update(Backend& be, Tensor& w, const Tensor& g, Tensor& m, Tensor& s, float lr, float b1, float b2,
                        float eps, int64_t t, float l2) {
  UpdateRule r;
  r.solver = Solver::kAdam;
  r.b1 = b1;
  r.b2 = b2;
  r.eps = eps;
  r.l2 = l2;
  be.optimizer_update(r, StepScalars::at_step(r, lr, t), w, g, m, s);
}

inline void adamw_update(Backend& be, Tensor& w, const Tensor& g, Tensor& m, Tensor& s, float lr, float b1, float b2,
                         float eps, int64_t t, float l2, float wd) {
  UpdateRule r;
  r.solver = Solver::kAdamW;
  r.b1 = b1;
  r.b2 = b2;
  r.eps = eps;
  r.l2 = l2;
  r.wd = wd;
  be.optimizer_update(r, StepScalars::at_step(r, lr, t), w, g, m, s);
}

inline void rmsprop_update(Backend& be, Tensor& w, const Tensor& g, Tensor& s, float lr, float b2, float eps,
                           float l2) {
  UpdateRule r;
  r.solver = Solver::kRmsprop;
  r.b2 = b2;
  r.eps = eps;
  r.l2 = l2;
  Tensor none;
  be.optimizer_update(r, StepScalars::at_step(r, lr, 1), w, g, none, s);
}

}  // namespace dlt::test
