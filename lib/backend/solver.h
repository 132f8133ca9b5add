// The optimizers (MATLAB's solvers and dltrain's adamw), for one parameter w with gradient g:
//   sgdm:    v = momentum * v - lr * (g + l2 * w); w += v                      (state m = v)
//   adam:    g' = g + l2 * w; m = b1 m + (1-b1) g'; s = b2 s + (1-b2) g'^2;
//            w -= lr * (m * c1) / (sqrt(s * c2) + eps), c1 = 1 / (1-b1^t), c2 = 1 / (1-b2^t)
//   rmsprop: g' = g + l2 * w; s = b2 s + (1-b2) g'^2; w -= lr * g' / (sqrt(s) + eps)
//   adamw:   dltrain's own (MATLAB has no AdamW): PyTorch's torch.optim.AdamW, decoupled weight
//            decay wd before adam's step: w' = w * (1 - lr * wd); then adam as above with g'
//            from the undecayed w (l2 is 0 unless L2Regularization is set), w = w' - lr * ...
// The training option Solver (config/options.h) holds one; UpdateRule (backend.h) carries it.
#pragma once

namespace dlt {

enum class Solver { kSgdm, kAdam, kRmsprop, kAdamW };

// Whether the solver keeps Adam's two moments and needs the bias corrections c1, c2.
constexpr bool adam_family(Solver s) { return s == Solver::kAdam || s == Solver::kAdamW; }

}  // namespace dlt
