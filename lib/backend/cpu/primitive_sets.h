// The oneDNN primitive wiring several CPU ops share: a forward/backward pair (act_op,
// softmax_op), a training-forward/inference-forward/backward triple (lrn_op, pool_op), and on
// the triple a whole normalization (batch_norm_op, layer_norm_op) with its memories, argument
// maps and runs. Each op keeps in its own file its descriptors, flags, workspaces and any work
// around the primitives.
#pragma once
#include <string>

#include "backend/cpu/dnnl_util.h"

namespace dlt::cpu {

// Runs p with args on s and waits for it.
inline void run(const dnnl::primitive& p, dnnl::stream& s, const Args& args) {
  p.execute(s, args);
  s.wait();
}

// An eltwise-style forward and the backward it hints: the forward reads src and writes dst, both
// of one descriptor (md). User-scratchpad mode, one shared scratchpad; made in this order: the
// two primitive descriptors, the two primitives, the scratchpad. The op sets bwd_args, on src,
// dst and memories of its own.
template <class Fwd, class Bwd>
struct PrimitivePair {
  PrimitivePair(const typename Fwd::desc& fwd_d, const typename Bwd::desc& bwd_d, const memory::desc& md,
                const dnnl::engine& eng)
      : fwd_pd(fwd_d, user_scratchpad_attr(), eng),
        bwd_pd(bwd_d, user_scratchpad_attr(), eng, fwd_pd),
        fwd(fwd_pd),
        bwd(bwd_pd) {
    pad.need(fwd_pd.scratchpad_desc());
    pad.need(bwd_pd.scratchpad_desc());
    pad.allocate();
    src = unbound(md, eng);
    dst = unbound(md, eng);
    fwd_args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, fwd_pad(eng)}};
  }
  // The scratchpad argument of each primitive.
  memory fwd_pad(const dnnl::engine& eng) const { return pad.memory_for(fwd_pd.scratchpad_desc(), eng); }
  memory bwd_pad(const dnnl::engine& eng) const { return pad.memory_for(bwd_pd.scratchpad_desc(), eng); }
  // "fwd=<impl> bwd=<impl>" (ImplInfo).
  std::string impl_info() const { return "fwd=" + impl_of(fwd_pd) + " bwd=" + impl_of(bwd_pd); }

  // y = f(x): binds src and dst, runs the forward and waits.
  void forward(dnnl::stream& s, const Tensor& x, const Tensor& y) {
    bind(src, x);
    bind(dst, y);
    run(fwd, s, fwd_args);
  }
  // Runs the backward on bwd_args (bound by the op) and waits.
  void backward(dnnl::stream& s) { run(bwd, s, bwd_args); }

  typename Fwd::primitive_desc fwd_pd;
  typename Bwd::primitive_desc bwd_pd;
  Fwd fwd;
  Bwd bwd;
  Scratchpad pad;
  memory src, dst;  // md
  Args fwd_args, bwd_args;
};

// A training forward, an inference forward and the backward the training forward hints, in
// user-scratchpad mode and sharing one scratchpad; made in this order: the three primitive
// descriptors, the three primitives, the scratchpad.
template <class Fwd, class Bwd>
struct PrimitiveTriple {
  PrimitiveTriple(const typename Fwd::desc& train_d, const typename Fwd::desc& infer_d, const typename Bwd::desc& bwd_d,
                  const dnnl::engine& eng)
      : train_pd(train_d, user_scratchpad_attr(), eng),
        infer_pd(infer_d, user_scratchpad_attr(), eng),
        bwd_pd(bwd_d, user_scratchpad_attr(), eng, train_pd),
        train(train_pd),
        infer(infer_pd),
        bwd(bwd_pd) {
    pad.need(train_pd.scratchpad_desc());
    pad.need(infer_pd.scratchpad_desc());
    pad.need(bwd_pd.scratchpad_desc());
    pad.allocate();
  }
  memory train_pad(const dnnl::engine& eng) const { return pad.memory_for(train_pd.scratchpad_desc(), eng); }
  memory infer_pad(const dnnl::engine& eng) const { return pad.memory_for(infer_pd.scratchpad_desc(), eng); }
  memory bwd_pad(const dnnl::engine& eng) const { return pad.memory_for(bwd_pd.scratchpad_desc(), eng); }
  // Runs the training or the inference forward on its arguments and waits.
  void forward(dnnl::stream& s, bool training, const Args& train_args, const Args& infer_args) const {
    if (training) {
      run(train, s, train_args);
    } else {
      run(infer, s, infer_args);
    }
  }
  // "fwd=<impl> infer=<impl> bwd=<impl>" (ImplInfo).
  std::string impl_info() const {
    return "fwd=" + impl_of(train_pd) + " infer=" + impl_of(infer_pd) + " bwd=" + impl_of(bwd_pd);
  }

  typename Fwd::primitive_desc train_pd, infer_pd;
  typename Bwd::primitive_desc bwd_pd;
  Fwd train, infer;
  Bwd bwd;
  Scratchpad pad;
};

// A oneDNN normalization with use_scale | use_shift (batch or layer normalization: the two
// share their descriptors' signatures) on its triple: the training forward and the backward
// with train_flags, the inference forward with infer_flags; unbound memories for x, y / dy, dx
// (data_md), scale, shift, dscale, dshift (affine_md, 1-D) and mean, var (the training forward's
// statistics descriptor), and the three argument maps over them. Backward is handed a zero shift
// it asks for but does not read. An op adds any workspace to the maps itself; each run binds
// every memory, executes and waits.
template <class Fwd, class Bwd>
struct NormalizationPrimitives {
  NormalizationPrimitives(const memory::desc& data_md, const memory::desc& affine_md, float epsilon,
                          dnnl::normalization_flags train_flags, dnnl::normalization_flags infer_flags,
                          const dnnl::engine& eng)
      : prims({dnnl::prop_kind::forward_training, data_md, epsilon, train_flags},
              {dnnl::prop_kind::forward_inference, data_md, epsilon, infer_flags},
              {dnnl::prop_kind::backward, data_md, data_md, epsilon, train_flags}, eng) {
    const memory::desc stat_md = prims.train_pd.mean_desc();
    shift_zeros = Tensor::zeros(Shape{affine_md.dims()[0]});
    x = unbound(data_md, eng);
    y = unbound(data_md, eng);
    dx = unbound(data_md, eng);
    scale = unbound(affine_md, eng);
    shift = unbound(affine_md, eng);
    dscale = unbound(affine_md, eng);
    dshift = unbound(affine_md, eng);
    mean = unbound(stat_md, eng);
    var = unbound(stat_md, eng);
    train_args = {{DNNL_ARG_SRC, x},
                  {DNNL_ARG_SCALE, scale},
                  {DNNL_ARG_SHIFT, shift},
                  {DNNL_ARG_DST, y},
                  {DNNL_ARG_MEAN, mean},
                  {DNNL_ARG_VARIANCE, var},
                  {DNNL_ARG_SCRATCHPAD, prims.train_pad(eng)}};
    infer_args = train_args;
    infer_args[DNNL_ARG_SCRATCHPAD] = prims.infer_pad(eng);
    bwd_args = {{DNNL_ARG_SRC, x},
                {DNNL_ARG_DIFF_DST, y},
                {DNNL_ARG_SCALE, scale},
                {DNNL_ARG_SHIFT, memory(affine_md, eng, shift_zeros.data())},
                {DNNL_ARG_MEAN, mean},
                {DNNL_ARG_VARIANCE, var},
                {DNNL_ARG_DIFF_SRC, dx},
                {DNNL_ARG_DIFF_SCALE, dscale},
                {DNNL_ARG_DIFF_SHIFT, dshift},
                {DNNL_ARG_SCRATCHPAD, prims.bwd_pad(eng)}};
  }

  void forward_training(dnnl::stream& s, const Tensor& x_t, const Tensor& scale_t, const Tensor& shift_t, Tensor& y_t,
                        Tensor& mean_t, Tensor& var_t) {
    bind_forward(x_t, scale_t, shift_t, y_t, mean_t, var_t);
    run(prims.train, s, train_args);
  }
  // mean_t and var_t: the statistics to normalize with (batch norm's use_global_stats) or
  // where to write the row statistics (layer norm).
  void forward_inference(dnnl::stream& s, const Tensor& x_t, const Tensor& scale_t, const Tensor& shift_t,
                         const Tensor& mean_t, const Tensor& var_t, Tensor& y_t) {
    bind_forward(x_t, scale_t, shift_t, y_t, mean_t, var_t);
    run(prims.infer, s, infer_args);
  }
  void backward(dnnl::stream& s, const Tensor& x_t, const Tensor& dy_t, const Tensor& scale_t, const Tensor& mean_t,
                const Tensor& var_t, Tensor& dx_t, Tensor& dscale_t, Tensor& dshift_t) {
    bind(x, x_t);
    bind(y, dy_t);
    bind(dx, dx_t);
    bind(scale, scale_t);
    bind(mean, mean_t);
    bind(var, var_t);
    bind(dscale, dscale_t);
    bind(dshift, dshift_t);
    run(prims.bwd, s, bwd_args);
  }

  PrimitiveTriple<Fwd, Bwd> prims;
  memory x, y, dx;                      // data_md: src, dst / diff_dst, diff_src
  memory scale, shift, dscale, dshift;  // affine_md
  memory mean, var;                     // the statistics
  Tensor shift_zeros;                   // affine_md's size: the shift backward does not read
  Args train_args, infer_args, bwd_args;

 private:
  void bind_forward(const Tensor& x_t, const Tensor& scale_t, const Tensor& shift_t, const Tensor& y_t,
                    const Tensor& mean_t, const Tensor& var_t) {
    bind(x, x_t);
    bind(y, y_t);
    bind(scale, scale_t);
    bind(shift, shift_t);
    bind(mean, mean_t);
    bind(var, var_t);
  }
};

}  // namespace dlt::cpu
