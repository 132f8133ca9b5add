// Agreement rows of the attention op (backend/attention_op.h): forward and backward on random
// token tensors against the double reference (support/reference_attention.h). Part of
// agreement_rows() (op_agreement.h).
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/attention_op.h"
#include "backend/backend.h"
#include "support/reference_attention.h"
#include "support/tensor_utils.h"

namespace dlt::test {
namespace agreement {

// Q and K in [-2, 2) so that the softmax is far from uniform; O, dQ, dK and dV each checked.
inline AgreementRow attention_row(std::string name, AttentionDesc d) {
  return {"attention " + name, {AttentionDesc::kOp}, [d](Backend& be, double tol) {
            Rng rng(61);
            const Vec q = random_vec(d.q_numel(), rng, -2.0, 2.0), k = random_vec(d.k_numel(), rng, -2.0, 2.0);
            const Vec v = random_vec(d.v_numel(), rng), dout = random_vec(d.o_numel(), rng);
            const Device dev = be.device();
            const Shape qs{d.n, d.seq_q, 1, d.heads * d.key_dim}, ks{d.n, d.seq_kv, 1, d.heads * d.key_dim};
            const Shape vs{d.n, d.seq_kv, 1, d.heads * d.value_dim}, os{d.n, d.seq_q, 1, d.heads * d.value_dim};
            Tensor tq = to_tensor(q, qs, dev), tk = to_tensor(k, ks, dev), tv = to_tensor(v, vs, dev);
            Tensor to(os, dev), tdq(qs, dev), tdk(ks, dev), tdv(vs, dev);
            auto op = be.make(d);
            // With bias: values in [-3, 3), large enough to move the probabilities.
            const Vec bias = d.bias_n > 0 ? random_vec(d.bias_numel(), rng, -3.0, 3.0) : Vec{};
            const Shape bs{d.bias_n, d.heads, d.seq_q, d.seq_kv};
            Tensor tb = d.bias_n > 0 ? to_tensor(bias, bs, dev) : Tensor(),
                   tdb = d.bias_n > 0 ? Tensor(bs, dev) : Tensor();
            if (d.bias_n > 0) op->set_bias(tb);
            const Vec* pb = d.bias_n > 0 ? &bias : nullptr;
            // With talking heads: mixes in [-1, 1) (the packed layout of the reference), as four
            // tensors, and their gradients.
            const int64_t h = d.heads;
            const int64_t mix_numel = 2 * h * h + h + d.mix_bias_numel(1);
            const Vec mix = d.talking_heads ? random_vec(mix_numel, rng, -1.0, 1.0) : Vec{};
            Tensor tmix[4], tdmix[4];
            HeadMixGrads grads;
            if (d.talking_heads) {
              for (int i = 0; i < 4; ++i) {
                const int64_t at = (i / 2) * (h * h + h) + (i % 2) * h * h;
                const int64_t count = i % 2 ? d.mix_bias_numel(i / 2) : h * h;
                tmix[i] = to_tensor(Vec(mix.begin() + at, mix.begin() + at + count), Shape{count}, dev);
                tdmix[i] = Tensor(Shape{count}, dev);
                be.fill(tdmix[i], 123.f);
              }
              op->set_head_mix(tmix[0], tmix[1], tmix[2], tmix[3]);
              grads = HeadMixGrads{{&tdmix[0], &tdmix[2]}, {&tdmix[1], &tdmix[3]}};
            }
            const Vec* pm = d.talking_heads ? &mix : nullptr;
            // With dropout: the training forward's mask (the same key on every backend).
            const bool drop = d.dropout > 0.f;
            const uint64_t key = 0x5eedf00dULL;
            if (drop)
              op->forward_dropout(tq, tk, tv, to, key);
            else
              op->forward(tq, tk, tv, to);
            check_close("forward", to, ref::attention_forward(d, q, k, v, drop, key, pb, pm), tol);
            be.fill(tdq, 123.f);  // must be overwritten, not accumulated
            be.fill(tdk, 123.f);
            be.fill(tdv, 123.f);
            if (pb) be.fill(tdb, 123.f);
            op->backward(tq, tk, tv, to_tensor(dout, os, dev), tdq, tdk, tdv, pb ? &tdb : nullptr,
                         pm ? &grads : nullptr);
            Vec dq, dk, dv, db, dmix;
            ref::attention_backward(d, q, k, v, dout, dq, dk, dv, drop, key, pb, pb ? &db : nullptr, pm,
                                    pm ? &dmix : nullptr);
            check_close("backward dQ", tdq, dq, tol);
            check_close("backward dK", tdk, dk, tol);
            check_close("backward dV", tdv, dv, tol);
            if (pb) check_close("backward dB", tdb, db, tol);
            if (pm) {
              const char* what[4] = {"backward dWs (scores' head mix)", "backward dbs", "backward dWp (probabilities')",
                                     "backward dbp"};
              // Each mix gradient sums n * seq_q * seq_kv terms per entry. dbs is 0 in exact
              // arithmetic (a constant added to a softmax's row does not move it): its float sums
              // of the rows' cancelling gradients are held to tol of dWs's largest value.
              const double floor = sum_floor(d.probs_numel() / d.heads, kFloorFraction);
              for (int i = 0; i < 4; ++i) {
                const int64_t at = (i / 2) * (h * h + h) + (i % 2) * h * h;
                const int64_t count = i % 2 ? d.mix_bias_numel(i / 2) : h * h;
                if (i != 1) {
                  check_close(what[i], tdmix[i], Vec(dmix.begin() + at, dmix.begin() + at + count), tol, floor);
                  continue;
                }
                double got = 0, scale = 0;
                for (double x : to_vec(tdmix[1])) got = std::max(got, std::fabs(x));
                for (int64_t e = 0; e < h * h; ++e) scale = std::max(scale, std::fabs(dmix[static_cast<size_t>(e)]));
                INFO(what[1] << ": largest " << got << ", dWs's largest " << scale);
                CHECK(got <= tol * scale);
              }
            }
            // dK and dV over K and V themselves (the layers' use): the same gradients.
            Tensor ak = to_tensor(k, ks, dev), av = to_tensor(v, vs, dev);
            op->backward(tq, ak, av, to_tensor(dout, os, dev), tdq, ak, av, pb ? &tdb : nullptr, pm ? &grads : nullptr);
            check_close("backward dQ, dK over K, dV over V", tdq, dq, tol);
            check_close("backward dK over K", ak, dk, tol);
            check_close("backward dV over V", av, dv, tol);
          }};
}

// {n, heads, seq_q, seq_kv, key_dim, value_dim, causal, scale}
inline std::vector<AgreementRow> attention_rows() {
  std::vector<AgreementRow> rows;
  rows.push_back(attention_row("one head, 2 images of 7 tokens, dim 8", {2, 1, 7, 7, 8, 8, false, 0.f}));
  rows.push_back(attention_row("3 heads, one token", {2, 3, 1, 1, 16, 16, false, 0.f}));
  rows.push_back(
      attention_row("4 heads, 5 queries over 9 keys, key dim 6 value dim 10", {2, 4, 5, 9, 6, 10, false, 0.f}));
  rows.push_back(attention_row("causal, 2 heads of 65 tokens", {2, 2, 65, 65, 16, 16, true, 0.f}));
  rows.push_back(attention_row("causal, 7 queries over 4 keys (top-left)", {2, 2, 7, 4, 8, 5, true, 0.f}));
  rows.push_back(attention_row("causal, 3 queries over 8 keys, scale 0.3", {1, 3, 3, 8, 4, 4, true, 0.3f}));
  rows.push_back(attention_row("ViT-Tiny: 3 heads of 197 tokens, dim 64", {1, 3, 197, 197, 64, 64, false, 0.f}));
  AttentionDesc dropout{2, 3, 9, 9, 4, 5, false, 0.f};
  dropout.dropout = 0.3f;
  rows.push_back(attention_row("dropout 0.3, 3 heads of 9 tokens", dropout));
  AttentionDesc long_dropout{3, 2, 2048, 2048, 4, 4, false, 0.f};
  long_dropout.dropout = 0.1f;
  // 96 MiB of probabilities: the CPU op runs image by image and computes P again in backward.
  rows.push_back(attention_row("3 images of 2 heads of 2048 tokens, causal", {3, 2, 2048, 2048, 4, 4, true, 0.f}));
  rows.push_back(attention_row("3 images of 2 heads of 2048 tokens, dropout 0.1", long_dropout));
  AttentionDesc window{6, 3, 16, 16, 8, 8, false, 0.f};
  window.bias_n = 1;  // Swin's relative position bias: one table for every window
  rows.push_back(attention_row("bias shared by 6 windows of 3 heads of 4x4 tokens", window));
  AttentionDesc shifted{8, 2, 9, 9, 4, 4, false, 0.f};
  shifted.bias_n = 4;  // 2 images of 4 windows, a bias per window (the shift mask)
  shifted.dropout = 0.2f;
  rows.push_back(attention_row("bias per window of 2 images, dropout 0.2", shifted));
  AttentionDesc long_bias{3, 1, 2400, 2400, 4, 4, false, 0.f};
  long_bias.bias_n = 2;  // 66 MiB of probabilities: the CPU runs image by image; entries 0 and 2 share
  rows.push_back(attention_row("bias of 2 entries over 3 images of 2400 tokens (image by image)", long_bias));
  AttentionDesc talking{2, 4, 7, 7, 4, 4, false, 0.f};
  talking.talking_heads = true;  // CaiT's talking heads: the scores and probabilities mixed across heads
  rows.push_back(attention_row("talking heads, 4 heads of 7 tokens", talking));
  AttentionDesc talking_all{4, 3, 5, 6, 3, 2, true, 0.4f};
  talking_all.talking_heads = true;
  talking_all.bias_n = 2;
  talking_all.dropout = 0.25f;
  rows.push_back(
      attention_row("talking heads, causal, bias per window, dropout 0.25, 5 queries over 6 keys", talking_all));
  AttentionDesc talking_long{2, 4, 1100, 1100, 4, 4, false, 0.f};
  talking_long.talking_heads = true;  // 2 x 37 MiB of P and A: the CPU runs image by image
  rows.push_back(attention_row("talking heads, 2 images of 4 heads of 1100 tokens (image by image)", talking_long));
  AttentionDesc convit{3, 4, 16, 16, 4, 4, false, 0.f};
  convit.talking_heads = true;  // ConViT's gated positional attention: a bias per head and pair after the softmax
  convit.pair_probs_bias = true;
  rows.push_back(
      attention_row("talking heads, a bias per head and pair on the probabilities, 4 heads of 16 tokens", convit));
  AttentionDesc convit_long = talking_long;
  convit_long.pair_probs_bias = true;
  convit_long.dropout = 0.1f;
  rows.push_back(
      attention_row("talking heads, a bias per pair, dropout 0.1, 1100 tokens (image by image)", convit_long));
  AttentionDesc cait{3, 4, 17, 17, 4, 4, false, 0.f};
  cait.talking_heads = true;  // the size of tests/data/onnx_zoo/cait_timm: 16 patches and the class token
  rows.push_back(attention_row("talking heads, CaiT fixture's 4 heads of 17 tokens", cait));
  return rows;
}

}  // namespace agreement
}  // namespace dlt::test
