// LearningWatchdog: warns once, after the first epoch, when the mini-batch loss stays at
// ln(K) for kWindow iterations or validation accuracy stays at chance; never for a run that
// learns, nor for a flat first epoch.
#include <catch2/catch.hpp>

#include <cmath>

#include "train/watchdog.h"

using namespace dlt;

namespace {
WatchdogContext context() { return {"glorot (the default)", 0.001, "zerocenter"}; }
IterationRecord rec(int64_t it, double loss, double val_acc = std::nan("")) {
  IterationRecord r;
  r.iteration = it;
  r.minibatch_loss = loss;
  r.validation_accuracy = val_acc;
  return r;
}
}  // namespace

TEST_CASE("watchdog: a loss pinned at ln(K) after the first epoch warns once", "[train]") {
  LearningWatchdog w(10, 100, context());
  const double chance = std::log(10.0);
  int64_t warned_at = 0;
  std::string text;
  for (int64_t it = 1; it <= 400; ++it) {
    auto m = w.observe(rec(it, chance + (it % 2 ? 0.01 : -0.01)));
    if (m) {
      CHECK(warned_at == 0);  // only once
      warned_at = it;
      text = *m;
    }
  }
  CHECK(warned_at == 100 + LearningWatchdog::kWindow);
  CHECK(text ==
        "the network is not learning: the mini-batch loss has stayed at ln(10) = 2.3026 (chance for 10 classes; mean "
        "2.3026) for 50 iterations after epoch 1. Likely causes: the weights initializer (glorot (the default); "
        "networks written for MATLAB before R2019a, such as the R2016b CIFAR-10 network, need WeightsInitializer: "
        "narrow-normal), the learning rate (InitialLearnRate 0.001: try 10x lower or higher), or the input scale "
        "(imageInput Normalization zerocenter)");
}

TEST_CASE("watchdog: no warning for a run that learns, a flat first epoch or a broken band", "[train]") {
  const double chance = std::log(4.0);
  LearningWatchdog learns(4, 20, context());
  for (int64_t it = 1; it <= 500; ++it) CHECK_FALSE(learns.observe(rec(it, chance * std::exp(-it / 50.0))));
  LearningWatchdog first_epoch(4, 200, context());  // flat for the whole first epoch, then learns
  for (int64_t it = 1; it <= 200; ++it) CHECK_FALSE(first_epoch.observe(rec(it, chance)));
  for (int64_t it = 201; it <= 400; ++it) CHECK_FALSE(first_epoch.observe(rec(it, 0.8 * chance)));
  LearningWatchdog broken(4, 10, context());  // 49 near chance, one far off, 49 near again
  int64_t it = 10;
  for (int i = 0; i < 49; ++i) CHECK_FALSE(broken.observe(rec(++it, chance)));
  CHECK_FALSE(broken.observe(rec(++it, 1.06 * chance)));
  for (int i = 0; i < 49; ++i) CHECK_FALSE(broken.observe(rec(++it, chance)));
  CHECK(broken.observe(rec(++it, chance)));  // the 50th in a row
  // Scattered by 4% around ln K (a small mini-batch) still counts; a mean 2% above does not.
  LearningWatchdog scattered(4, 10, context());
  std::optional<std::string> m;
  for (it = 11; it <= 60 && !m; ++it) m = scattered.observe(rec(it, chance * (it % 2 ? 1.04 : 0.96)));
  CHECK(m);
  LearningWatchdog above(4, 10, context());
  for (it = 11; it <= 300; ++it) CHECK_FALSE(above.observe(rec(it, chance * (it % 2 ? 1.04 : 1.0))));
}

TEST_CASE("watchdog: validation accuracy at chance after the first epoch", "[train]") {
  LearningWatchdog w(10, 50, context());
  CHECK_FALSE(w.observe(rec(50, 1.0, 10.0)));   // still epoch 1
  CHECK_FALSE(w.observe(rec(100, 1.0, 10.0)));  // first check after epoch 1
  CHECK_FALSE(w.observe(rec(120, 1.0)));        // no check at this iteration
  auto m = w.observe(rec(150, 1.0, 10.5));      // second in a row, within 1.1 x chance
  REQUIRE(m);
  CHECK(m->find("the validation accuracy is 10.50% (chance for 10 classes: 10.00%) at 2 checks in a row after "
                "epoch 1") != std::string::npos);
  LearningWatchdog v(10, 50, context());
  CHECK_FALSE(v.observe(rec(100, 1.0, 10.0)));
  CHECK_FALSE(v.observe(rec(150, 1.0, 25.0)));  // learning: the count starts again
  CHECK_FALSE(v.observe(rec(200, 1.0, 10.0)));
  LearningWatchdog one_class(1, 10, context());  // a single class: nothing is chance
  for (int64_t it = 1; it <= 100; ++it) CHECK_FALSE(one_class.observe(rec(it, 0.0, 100.0)));
}
