// The optimizers (MATLAB's solvers), for one parameter w with gradient g:
//   sgdm:    v = momentum * v - lr * (g + l2 * w); w += v                      (state m = v)
//   adam:    g' = g + l2 * w; m = b1 m + (1-b1) g'; s = b2 s + (1-b2) g'^2;
//            w -= lr * (m * c1) / (sqrt(s * c2) + eps), c1 = 1 / (1-b1^t), c2 = 1 / (1-b2^t)
//   rmsprop: g' = g + l2 * w; s = b2 s + (1-b2) g'^2; w -= lr * g' / (sqrt(s) + eps)
// The training option Solver (config/options.h) holds one; UpdateRule (backend.h) carries it.
#pragma once

namespace dlt {

enum class Solver { kSgdm, kAdam, kRmsprop };

}  // namespace dlt
