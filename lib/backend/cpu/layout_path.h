// LayoutPath: the reorder between a caller's tensor layout and the layout a oneDNN
// primitive chose, with the op-owned buffer for the latter; ReuseOnce lets an op skip a
// conversion it made moments ago. Used by the convolution and fully connected ops.
#pragma once
#include "backend/cpu/cpu_ops.h"

namespace dlt::cpu {

// A tensor in the caller's layout (OHWI weights, NHWC activations) and, when a primitive
// wants another layout, the op's own copy in that layout with the reorder between them.
// `to_blocked` selects the direction.
struct LayoutPath {
  memory user;     // bound to the caller's tensor per call
  memory blocked;  // the op's own buffer (or == user when no reorder is needed)
  dnnl::reorder reorder;
  Args args;
  Tensor buf;
  bool needed = false;

  void init(const memory::desc& user_md, const memory::desc& want, const dnnl::engine& eng, bool to_blocked) {
    user = unbound(user_md, eng);
    needed = user_md != want;
    if (!needed) {
      blocked = user;
      return;
    }
    buf = host_buffer(want.get_size());
    blocked = memory(want, eng, buf.data());
    if (to_blocked) {
      reorder = dnnl::reorder(user, blocked);
      args = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, blocked}};
    } else {
      reorder = dnnl::reorder(blocked, user);
      args = {{DNNL_ARG_FROM, blocked}, {DNNL_ARG_TO, user}};
    }
  }
  void run(dnnl::stream& s) {
    if (needed) reorder.execute(s, args);
  }
};

// Remembers which tensor an op's converted copy (a LayoutPath's buffer) holds, so that one later
// pass of the same step can use the copy instead of converting again: forward's bfloat16 x in
// backward_weights, dy between the two backward passes. Each conversion serves one other pass,
// and forward forgets dy's. The caller keeps the tensor unchanged in between (ops.h).
class ReuseOnce {
 public:
  enum Pass { kForward, kBackwardData, kBackwardWeights };
  // Converts `t` through `p` unless the copy already holds it from another pass.
  void convert(LayoutPath& p, const Tensor& t, Pass pass, dnnl::stream& s) {
    const bool reuse = p.needed && src_ == t.data() && by_ != pass;
    src_ = nullptr;
    if (reuse) return;
    p.run(s);
    src_ = t.data();
    by_ = pass;
  }
  void forget() { src_ = nullptr; }

 private:
  const void* src_ = nullptr;
  Pass by_ = kForward;
};

}  // namespace dlt::cpu
