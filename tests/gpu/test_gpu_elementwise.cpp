// (b) The element-wise, loss, optimizer, synchronized-batch-norm and upload methods of the
// device backend against the CPU backend on the same random inputs. Sizes are odd and large
// enough (> 1e5 elements) to take several blocks and the CPU's parallel paths.
#include <catch2/catch.hpp>

#include <cmath>

#include "gpu/gpu_test_util.h"
#include "support/reference_ops.h"
#include "support/updates.h"

namespace dlt::test::gpu {

namespace {

constexpr int64_t kN = 100003;  // odd, several blocks, above the CPU's parallel threshold

void check_close(const char* what, const Tensor& got, const Tensor& want, double tol) {
  Comparison c = compare_tensors(got, want);
  INFO(what << ": " << c.str());
  CHECK(!c.size_mismatch);
  CHECK(c.rel <= tol);
}

void check_equal(const char* what, const Tensor& got, const Tensor& want) {
  Vec g = to_vec(got), w = to_vec(want);
  REQUIRE(g.size() == w.size());
  int64_t differ = 0, first = -1;
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i] != w[i] && !(std::isnan(g[i]) && std::isnan(w[i]))) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++differ;
    }
  INFO(what << ": " << differ << " of " << g.size() << " elements differ"
            << (first >= 0 ? " (first at " + std::to_string(first) + ": " + std::to_string(g[first]) + " vs " +
                                 std::to_string(w[first]) + ")"
                           : std::string()));
  CHECK(differ == 0);
}

}  // namespace

TEST_CASE("gpu elementwise: fill, copy, axpby, sum, scale, clamp, mul", "[gpu][elementwise]") {
  Backend& be = dut_backend();
  Backend& cpu = cpu_be();
  Rng rng(101);
  const Shape s{kN};
  Tensor t(s, device_under_test());
  be.fill(t, 0.375f);
  Tensor want = Tensor(s);
  cpu.fill(want, 0.375f);
  check_equal("fill", t, want);

  auto x = random_pair(s, rng), y = random_pair(s, rng);
  Tensor yc = y.cpu.clone(), yd = y.dev.clone();
  be.copy(x.dev, yd);
  check_equal("copy", yd, x.cpu);

  yc = y.cpu.clone(), yd = y.dev.clone();
  cpu.axpby(0.7f, x.cpu, -1.3f, yc);
  be.axpby(0.7f, x.dev, -1.3f, yd);
  check_equal("axpby", yd, yc);    // no FMA contraction: bit for bit
  cpu.axpby(1.f, x.cpu, 0.f, yc);  // b = 0: y is overwritten
  be.axpby(1.f, x.dev, 0.f, yd);
  check_equal("axpby b=0", yd, x.cpu);

  auto z = random_pair(s, rng);
  Tensor sc(s), sd(s, device_under_test());
  cpu.sum({&x.cpu, &y.cpu, &z.cpu}, sc);
  be.sum({&x.dev, &y.dev, &z.dev}, sd);
  check_equal("sum of 3", sd, sc);
  cpu.sum({&x.cpu}, sc);
  be.sum({&x.dev}, sd);
  check_equal("sum of 1", sd, x.cpu);

  yc = y.cpu.clone(), yd = y.dev.clone();
  cpu.scale(yc, -2.5f);
  be.scale(yd, -2.5f);
  check_equal("scale", yd, yc);

  yc = y.cpu.clone(), yd = y.dev.clone();
  cpu.clamp(yc, -0.25f, 0.5f);
  be.clamp(yd, -0.25f, 0.5f);
  check_equal("clamp", yd, yc);

  cpu.multiply(x.cpu, y.cpu, sc);
  be.multiply(x.dev, y.dev, sd);
  check_equal("mul", sd, sc);
}

TEST_CASE("gpu elementwise: sum_squares", "[gpu][elementwise]") {
  Rng rng(102);
  for (int64_t n : {int64_t{1}, int64_t{1000}, kN, int64_t{3} << 20}) {
    auto x = random_pair(Shape{n}, rng, -2.f, 3.f);
    const double want = cpu_be().sum_squares(x.cpu);
    const double got = dut_backend().sum_squares(x.dev);
    INFO("n = " << n << ": " << got << " vs " << want);
    CHECK(got == Approx(want).epsilon(1e-5));
  }
}

TEST_CASE("gpu clipping by norm: l2_norm_into and clip_to_norm, nothing read back", "[gpu][elementwise]") {
  Rng rng(107);
  auto a = random_pair(Shape{kN}, rng, -2.f, 3.f);       // norm ~ 500: clipped to 10
  auto b = random_pair(Shape{777}, rng, -1e-3f, 1e-3f);  // norm ~ 0.016: under 10, unchanged
  auto norms = random_pair(Shape{3}, rng);               // slot 2 starts as garbage and is overwritten
  for (const bool dev : {false, true}) {
    Backend* be = dev ? &dut_backend() : &cpu_be();
    Tensor& n = dev ? norms.dev : norms.cpu;
    be->l2_norm_into(dev ? a.dev : a.cpu, n, 0, false);
    be->l2_norm_into(dev ? b.dev : b.cpu, n, 1, false);
    be->l2_norm_into(dev ? a.dev : a.cpu, n, 2, false);
    be->l2_norm_into(dev ? b.dev : b.cpu, n, 2, true);  // the global norm of a and b
    be->clip_to_norm(dev ? a.dev : a.cpu, n, 0, 10.0);
    be->clip_to_norm(dev ? b.dev : b.cpu, n, 1, 10.0);
  }
  const Vec nc = to_vec(norms.cpu), nd = to_vec(norms.dev);
  INFO("norms CPU " << nc[0] << " " << nc[1] << " " << nc[2] << ", device " << nd[0] << " " << nd[1] << " " << nd[2]);
  for (int i = 0; i < 3; ++i) CHECK(nd[i] == Approx(nc[i]).epsilon(1e-6));
  CHECK(nc[2] == Approx(std::hypot(static_cast<double>(nc[0]), nc[1])).epsilon(1e-6));
  CHECK(std::sqrt(cpu_be().sum_squares(a.cpu)) == Approx(10.0).epsilon(1e-5));
  check_close("clipped", a.dev, a.cpu, 1e-6);
  check_equal("under the threshold", b.dev, b.cpu);
  CHECK(nc[1] < 10.0);
  // A NaN norm leaves the tensor unchanged on both.
  auto c = random_pair(Shape{1000}, rng);
  Tensor nan_c = Tensor::zeros(Shape{1});
  nan_c.data()[0] = std::nanf("");
  Tensor nan_d = nan_c.to(device_under_test());
  const Vec before = to_vec(c.cpu);
  cpu_be().clip_to_norm(c.cpu, nan_c, 0, 1.0);
  dut_backend().clip_to_norm(c.dev, nan_d, 0, 1.0);
  CHECK(to_vec(c.cpu) == before);
  check_equal("NaN norm", c.dev, c.cpu);
  // A norm whose square is above FLT_MAX (5e30 * sqrt(2)) is kept, and clips (not zeroes).
  Tensor h = to_tensor({3e30f, 4e30f}, {2}).to(device_under_test());
  Tensor hn = Tensor::zeros(Shape{1}).to(device_under_test());
  dut_backend().l2_norm_into(h, hn, 0, false);
  dut_backend().l2_norm_into(h, hn, 0, true);
  CHECK(to_vec(hn)[0] == Approx(5e30 * std::sqrt(2.0)).epsilon(1e-6));
  dut_backend().clip_to_norm(h, hn, 0, std::sqrt(2.0));
  const Vec hv = to_vec(h);
  CHECK(hv[0] == Approx(0.6).epsilon(1e-6));
  CHECK(hv[1] == Approx(0.8).epsilon(1e-6));
}

TEST_CASE("gpu elementwise: shift_scale per image and per channel", "[gpu][elementwise]") {
  Rng rng(103);
  const Shape xs{7, 9, 11, 3};
  auto x = random_pair(xs, rng, 0.f, 255.f);
  auto mean_image = random_pair(Shape{9, 11, 3}, rng, 100.f, 150.f);
  auto mean_channel = random_pair(Shape{3}, rng, 100.f, 150.f);
  auto inv_std = random_pair(Shape{3}, rng, 0.01f, 0.03f);
  Tensor yc(xs), yd(xs, device_under_test());
  cpu_be().shift_scale(x.cpu, mean_image.cpu, Tensor(), yc);
  dut_backend().shift_scale(x.dev, mean_image.dev, Tensor(), yd);
  check_equal("shift by a mean image, no mul", yd, yc);
  cpu_be().shift_scale(x.cpu, mean_channel.cpu, inv_std.cpu, yc);
  dut_backend().shift_scale(x.dev, mean_channel.dev, inv_std.dev, yd);
  check_equal("per-channel shift and scale", yd, yc);
}

TEST_CASE("gpu elementwise: dropout masks are bit-identical to the CPU's", "[gpu][elementwise]") {
  Rng rng(104);
  const Shape s{kN};
  auto x = random_pair(s, rng);
  for (float p : {0.1f, 0.5f, 0.9f}) {
    for (uint64_t stream : {uint64_t{0}, uint64_t{17}}) {
      Tensor yc(s), mc(s), yd(s, device_under_test()), md(s, device_under_test());
      cpu_be().dropout_forward(x.cpu, yc, mc, p, 1234, stream);
      dut_backend().dropout_forward(x.dev, yd, md, p, 1234, stream);
      INFO("p = " << p << ", stream " << stream);
      check_equal("dropout mask", md, mc);
      check_equal("dropout y", yd, yc);
      Vec m = to_vec(md);
      int64_t zeros = 0;
      for (double v : m) zeros += v == 0;
      CHECK(static_cast<double>(zeros) / kN == Approx(p).margin(0.01));
    }
  }
  // Another seed gives another mask.
  Tensor y1(s, device_under_test()), m1(s, device_under_test()), m2(s, device_under_test());
  dut_backend().dropout_forward(x.dev, y1, m1, 0.5f, 1, 0);
  dut_backend().dropout_forward(x.dev, y1, m2, 0.5f, 2, 0);
  CHECK(compare_tensors(m1, m2).rel > 0.5);
}

TEST_CASE("gpu loss: cross_entropy loss, correct count and dlogits", "[gpu][loss]") {
  Rng rng(105);
  for (auto [n, c] : {std::pair<int64_t, int64_t>{256, 10}, {3, 1000}, {1, 2}, {1000, 37}}) {
    Vec probs = ref::softmax_forward(n, c, random_vec(n * c, rng, -4.0, 4.0));
    Tensor pc = to_tensor(probs, {n, 1, 1, c}), pd = pc.to(device_under_test());
    Tensor lc = random_labels(n, c, rng), ld = lc.to(device_under_test());
    Tensor dc(pc.shape()), dd(pc.shape(), device_under_test());
    int64_t cc = -1, cd = -2;
    const double want = cpu_be().cross_entropy(pc, lc, dc, &cc);
    const double got = dut_backend().cross_entropy(pd, ld, dd, &cd);
    INFO(n << "x" << c);
    CHECK(got == Approx(want).epsilon(1e-5));
    CHECK(cd == cc);
    check_equal("dlogits", dd, dc);
    Tensor none;
    int64_t c2 = -1;
    CHECK(dut_backend().cross_entropy(pd, ld, none, &c2) == Approx(want).epsilon(1e-5));  // no dlogits
    CHECK(c2 == cc);
    CHECK(dut_backend().cross_entropy(pd, ld, none, nullptr) == Approx(want).epsilon(1e-5));
  }
}

// read_loss waits for the loss kernel only (an event behind a pinned copy of the totals) when
// the totals are those of the last cross_entropy_async; otherwise it reads them from the
// device after the stream. Both must give the CPU's values, with other read-backs and kernels
// issued in between and with two losses in flight.
TEST_CASE("gpu loss: cross_entropy_async then read_loss, two losses in flight", "[gpu][loss]") {
  Rng rng(107);
  const int64_t n = 64, c = 10;
  Vec pa = ref::softmax_forward(n, c, random_vec(n * c, rng, -4.0, 4.0));
  Vec pb = ref::softmax_forward(n, c, random_vec(n * c, rng, -4.0, 4.0));
  Tensor pac = to_tensor(pa, {n, c}), pbc = to_tensor(pb, {n, c});
  Tensor lc = random_labels(n, c, rng);
  Tensor pad = pac.to(device_under_test()), pbd = pbc.to(device_under_test()), ld = lc.to(device_under_test());
  Tensor none;
  int64_t ca = -1, cb = -1;
  const double want_a = cpu_be().cross_entropy(pac, lc, none, &ca);
  const double want_b = cpu_be().cross_entropy(pbc, lc, none, &cb);
  Tensor ta(Shape{Backend::kLossTotalsFloats}, device_under_test());
  Tensor tb(Shape{Backend::kLossTotalsFloats}, device_under_test());
  Tensor work = to_tensor(random_vec(kN, rng), {kN}).to(device_under_test());
  Backend& be = dut_backend();
  be.cross_entropy_async(pad, ld, none, ta);
  be.cross_entropy_async(pbd, ld, none, tb);
  const double squares = be.sum_squares(work);  // a read-back of its own in between
  be.scale(work, 0.5f);                         // and a kernel
  int64_t got_ca = -2, got_cb = -2, again_cb = -2;
  const double got_b = be.read_loss(tb, ld, &got_cb);      // the last one: its event
  const double got_a = be.read_loss(ta, ld, &got_ca);      // an earlier one: from the device
  const double again_b = be.read_loss(tb, ld, &again_cb);  // read twice: from the device
  CHECK(got_a == Approx(want_a).epsilon(1e-5));
  CHECK(got_b == Approx(want_b).epsilon(1e-5));
  CHECK(again_b == got_b);
  CHECK(got_ca == ca);
  CHECK(got_cb == cb);
  CHECK(again_cb == cb);
  CHECK(be.sum_squares(work) == Approx(squares * 0.25).epsilon(1e-5));
}

// Every other loss kind through loss_async, five in flight with a read-back and a kernel in
// between, read in reverse order (the last one through its event, the others from the device):
// the CPU backend's totals and gradients. A binary target of 0.5 is a DataError read from the
// device.
TEST_CASE("gpu loss: mse, binary cross-entropy, Dice, focal and Tversky in flight against the CPU", "[gpu][loss]") {
  Rng rng(108);
  const int64_t n = 6, r = 5, c = 7, pixels = 300;
  struct Loss {
    LossOptions opt;
    Tensor outputs, targets;                        // host
    Tensor dev_outputs, dev_targets, grad, totals;  // device, alive until read
  };
  std::vector<Loss> losses(5);
  losses[0].opt.kind = LossKind::kMse;
  losses[0].outputs = to_tensor(random_vec(n * r, rng, -2.0, 2.0), {n, r});
  losses[0].targets = to_tensor(random_vec(n * r, rng, -2.0, 2.0), {n, r});
  losses[1].opt.kind = LossKind::kBinaryCrossEntropy;
  Vec p = random_vec(n * c, rng, 0.01, 0.99), t(p.size());
  for (double& v : t) v = static_cast<double>(rng.below(2));
  losses[1].outputs = to_tensor(p, {n, c});
  losses[1].targets = to_tensor(t, {n, c});
  for (int i = 2; i < 5; ++i) {
    losses[i].opt.kind = i == 2   ? LossKind::kGeneralizedDice
                         : i == 3 ? LossKind::kFocalCrossEntropy
                                  : LossKind::kTversky;
    losses[i].opt.tversky_alpha = 0.4f, losses[i].opt.tversky_beta = 0.9f;
    losses[i].opt.undefined_labels = true;
    losses[i].outputs =
        to_tensor(ref::softmax_forward(n * pixels, c, random_vec(n * pixels * c, rng, -3.0, 3.0)), {n, pixels, 1, c});
    Tensor labels = random_labels(n * pixels, c, rng);
    for (int64_t j = 0; j < labels.numel(); j += 9) labels.data_i32()[j] = -1;
    losses[i].targets = labels;
  }
  Backend& be = dut_backend();
  for (Loss& l : losses) {
    l.opt.images = n;
    l.grad = Tensor(l.outputs.shape(), device_under_test());
    l.totals = Tensor(Shape{Backend::kLossTotalsFloats}, device_under_test());
    l.dev_outputs = l.outputs.to(device_under_test());
    l.dev_targets = l.targets.to(device_under_test());
    be.loss_async(l.dev_outputs, l.dev_targets, l.grad, l.totals, l.opt);
  }
  Tensor work = to_tensor(random_vec(kN, rng), {kN}).to(device_under_test());
  const double squares = be.sum_squares(work);
  be.scale(work, 0.5f);
  for (int i = 4; i >= 0; --i) {
    Loss& l = losses[static_cast<size_t>(i)];
    INFO("loss kind " << static_cast<int>(l.opt.kind));
    const LossTotals got = be.read_loss_totals(l.totals, l.dev_targets);
    Tensor want_grad(l.outputs.shape());
    LossTotals want = cpu_be().loss(l.outputs, l.targets, want_grad, l.opt);
    CHECK(got.loss_sum == Approx(want.loss_sum / want.weight_sum).epsilon(1e-5));
    CHECK(got.weight_sum == want.weight_sum);
    CHECK(got.correct == want.correct);
    CHECK(got.counted == want.counted);
    CHECK(got.sq_sum == Approx(want.sq_sum).epsilon(1e-5));
    CHECK(got.ape_count == want.ape_count);
    CHECK(got.tp == want.tp);
    CHECK(got.exact == want.exact);
    check_close("grad", l.grad, want_grad, 1e-5);
  }
  CHECK(be.sum_squares(work) == Approx(squares * 0.25).epsilon(1e-5));
  // A target that is neither 0 nor 1, read back from the device for the message.
  t[3 * c + 2] = 0.5;
  Tensor bad = to_tensor(t, {n, c}).to(device_under_test()), none;
  Tensor totals(Shape{Backend::kLossTotalsFloats}, device_under_test());
  be.loss_async(losses[1].dev_outputs, bad, none, totals, losses[1].opt);
  CHECK_THROWS_WITH(be.read_loss_totals(totals, bad), Catch::Contains("target 0.5 of image 3, class 2 is not 0 or 1"));
}

TEST_CASE("gpu optimizers: sgdm, adam, rmsprop, adamw over several steps", "[gpu][optim]") {
  Rng rng(106);
  const Shape s{kN};
  auto w = random_pair(s, rng), g = random_pair(s, rng);
  SECTION("sgdm") {
    Tensor vc = Tensor::zeros(s), vd = Tensor::zeros(s).to(device_under_test());
    for (int t = 0; t < 3; ++t) {
      sgdm_update(cpu_be(), w.cpu, g.cpu, vc, 0.01f, 0.9f, 5e-4f);
      sgdm_update(dut_backend(), w.dev, g.dev, vd, 0.01f, 0.9f, 5e-4f);
    }
    check_equal("sgdm w", w.dev, w.cpu);  // the update kernels are bit-equal
    check_equal("sgdm v", vd, vc);
  }
  SECTION("adam") {
    Tensor mc = Tensor::zeros(s), sc = Tensor::zeros(s);
    Tensor md = mc.to(device_under_test()), sd = sc.to(device_under_test());
    for (int64_t t = 1; t <= 3; ++t) {
      adam_update(cpu_be(), w.cpu, g.cpu, mc, sc, 1e-3f, 0.9f, 0.999f, 1e-8f, t, 1e-4f);
      adam_update(dut_backend(), w.dev, g.dev, md, sd, 1e-3f, 0.9f, 0.999f, 1e-8f, t, 1e-4f);
    }
    check_equal("adam w", w.dev, w.cpu);
    check_equal("adam m", md, mc);
    check_equal("adam s", sd, sc);
  }
  SECTION("adamw") {
    Tensor mc = Tensor::zeros(s), sc = Tensor::zeros(s);
    Tensor md = mc.to(device_under_test()), sd = sc.to(device_under_test());
    for (int64_t t = 1; t <= 3; ++t) {
      const float lr = 1e-3f * static_cast<float>(t);  // a rate that changes, as a schedule's
      adamw_update(cpu_be(), w.cpu, g.cpu, mc, sc, lr, 0.9f, 0.999f, 1e-8f, t, 1e-4f, 0.05f);
      adamw_update(dut_backend(), w.dev, g.dev, md, sd, lr, 0.9f, 0.999f, 1e-8f, t, 1e-4f, 0.05f);
    }
    check_equal("adamw w", w.dev, w.cpu);
    check_equal("adamw m", md, mc);
    check_equal("adamw s", sd, sc);
  }
  SECTION("rmsprop") {
    Tensor sc = Tensor::zeros(s), sd = Tensor::zeros(s).to(device_under_test());
    for (int t = 0; t < 3; ++t) {
      rmsprop_update(cpu_be(), w.cpu, g.cpu, sc, 1e-3f, 0.9f, 1e-8f, 1e-4f);
      rmsprop_update(dut_backend(), w.dev, g.dev, sd, 1e-3f, 0.9f, 1e-8f, 1e-4f);
    }
    check_equal("rmsprop w", w.dev, w.cpu);
    check_equal("rmsprop s", sd, sc);
  }
}

TEST_CASE("gpu synchronized batch norm: channel_moments and batch_norm_dx_correction", "[gpu][bn]") {
  Rng rng(107);
  for (Shape xs : {Shape{8, 7, 5, 3}, Shape{32, 16, 16, 64}, Shape{2, 1, 1, 1000}}) {
    const int64_t c = xs[3];
    auto x = random_pair(xs, rng, 2.f, 5.f);  // an offset mean: variance by cancellation would lose digits
    Tensor mc(Shape{c}), vc(Shape{c}), md(Shape{c}, device_under_test()), vd(Shape{c}, device_under_test());
    cpu_be().channel_moments(x.cpu, mc, vc);
    dut_backend().channel_moments(x.dev, md, vd);
    INFO("x " << xs.str());
    check_close("mean", md, mc, 1e-5);
    check_close("var", vd, vc, 1e-4);

    auto scale = random_pair(Shape{c}, rng, 0.5f, 1.5f), dshift = random_pair(Shape{c}, rng);
    auto dscale = random_pair(Shape{c}, rng), dx = random_pair(xs, rng);
    const double m = static_cast<double>(xs.numel() / c) * 4;  // a global batch of 4 ranks
    cpu_be().batch_norm_dx_correction(x.cpu, mc, vc, scale.cpu, 1e-5f, m, dshift.cpu, dscale.cpu, dx.cpu);
    dut_backend().batch_norm_dx_correction(x.dev, mc.to(device_under_test()), vc.to(device_under_test()), scale.dev,
                                           1e-5f, m, dshift.dev, dscale.dev, dx.dev);
    check_equal("dx corrected", dx.dev, dx.cpu);  // same coefficients, no FMA
  }
  // No positions on this rank: mean = var = 0.
  Tensor empty(Shape{0, 4, 4, 8}, device_under_test());
  Tensor md(Shape{8}, device_under_test()), vd(Shape{8}, device_under_test());
  dut_backend().fill(md, 7.f);
  dut_backend().fill(vd, 7.f);
  dut_backend().channel_moments(empty, md, vd);
  CHECK(to_vec(md) == Vec(8, 0.0));
  CHECK(to_vec(vd) == Vec(8, 0.0));
}

TEST_CASE("gpu uploads: upload_begin / upload_wait deliver the host data", "[gpu][upload]") {
  Backend& be = dut_backend();
  Rng rng(108);
  const Shape xs{64, 32, 32, 3};
  Tensor a = random_images(64, Shape{32, 32, 3}, rng), b = random_images(64, Shape{32, 32, 3}, rng);
  Tensor da(xs, device_under_test()), db(xs, device_under_test());
  be.fill(da, -1.f);
  be.fill(db, -1.f);
  for (int round = 0; round < 3; ++round) {
    upload_begin(be, a, da);
    upload_begin(be, b, db);
    upload_wait(be);
    be.scale(db, 0.5f);  // compute issued after the wait sees the data
    be.synchronize();
    INFO("round " << round);
    check_equal("upload a", da, a);
    Tensor half = b.clone();
    cpu_be().scale(half, 0.5f);
    check_equal("upload b then scale", db, half);
    std::swap(a, b);
  }
  // labels (int32) travel the same way
  Tensor lab = random_labels(64, 10, rng), dl(Shape{64}, device_under_test(), DType::kI32);
  upload_begin(be, lab, dl);
  upload_wait(be);
  Tensor back = dl.to(Device::cpu());
  bool same = true;
  for (int64_t i = 0; i < 64; ++i) same = same && back.data_i32()[i] == lab.data_i32()[i];
  CHECK(same);
}

}  // namespace dlt::test::gpu
