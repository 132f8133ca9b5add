// LayoutPath: the reorder between a caller's tensor layout and the layout a oneDNN
// primitive chose, with the op-owned buffer for the latter. Used by the convolution ops.
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

  void init(const memory::desc& user_md, const memory::desc& want, const dnnl::engine& eng,
            bool to_blocked) {
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

}  // namespace dlt::cpu
