// The run's state and the observers' requests: ValidationPatience (stops after exactly N
// validations without a strictly better objective, loss- or accuracy-like, ties and NaN never
// improve, Inf never stops, a resumed count goes on), OutputNetwork best-validation (asks to
// keep the network at each new best only), the status words, and that the observers' merged
// requests do not depend on the observers' order.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

#include "config/config.h"
#include "train/observers/observers.h"
#include "train/observers/patience.h"
#include "train/run_state.h"

using namespace dlt;

namespace {

IterationRecord validated(int64_t it, double loss, double accuracy = std::nan("")) {
  IterationRecord r;
  r.iteration = it;
  r.epoch = 1 + (it - 1) / 10;
  r.minibatch_loss = 1;
  r.validation_loss = loss;
  r.validation_accuracy = accuracy * 100;
  if (!std::isnan(accuracy)) r.validation_metrics = {{"accuracy", accuracy}};
  return r;
}

// The validation (1-based) at which the observer first asks to stop; 0: never.
int64_t stops_at(ValidationPatience& p, const std::vector<IterationRecord>& recs, std::string* message = nullptr) {
  RunState state;
  for (size_t i = 0; i < recs.size(); ++i) {
    Requests r = p.on_validation(recs[i], state);
    if (r.stop) {
      CHECK(r.stop->kind == StopKind::kValidationPatience);
      if (message) *message = r.stop->message;
      return static_cast<int64_t>(i + 1);
    }
  }
  return 0;
}

std::vector<IterationRecord> losses(const std::vector<double>& values) {
  std::vector<IterationRecord> recs;
  for (size_t i = 0; i < values.size(); ++i) recs.push_back(validated(10 * static_cast<int64_t>(i + 1), values[i]));
  return recs;
}

}  // namespace

TEST_CASE("ValidationPatience: loss stops after exactly N validations without a lower loss", "[train][runstate]") {
  ValidationPatience p(Metric::kLoss, 3, OutputNetwork::kLastIteration);
  std::string message;
  // best 0.9 at the 2nd (iteration 20); the 3rd, 4th and 5th are not lower.
  CHECK(stops_at(p, losses({1.0, 0.9, 0.95, 0.92, 0.91, 0.5}), &message) == 5);
  CHECK(message ==
        "validation loss did not improve for 3 validations in a row (ValidationPatience 3); its best, 0.9, came "
        "after 20 iterations");
  ValidationPatience improving(Metric::kLoss, 3, OutputNetwork::kLastIteration);
  CHECK(stops_at(improving, losses({1.0, 0.9, 0.95, 0.92, 0.8, 0.85, 0.84})) == 0);  // the 5th resets the count
}

TEST_CASE("ValidationPatience: an accuracy objective needs a higher value, a tie is no improvement",
          "[train][runstate]") {
  ValidationPatience p(Metric::kAccuracy, 2, OutputNetwork::kLastIteration);
  std::vector<IterationRecord> recs = {validated(10, 0.3, 0.5), validated(20, 0.2, 0.7), validated(30, 0.1, 0.7),
                                       validated(40, 0.05, 0.6)};
  std::string message;
  CHECK(stops_at(p, recs, &message) == 4);  // lower losses do not count; 0.7 again is a tie
  CHECK(message.find("validation accuracy did not improve for 2 validations") == 0);
  CHECK(message.find("its best, 0.7, came after 20 iterations") != std::string::npos);
  ValidationPatience ties(Metric::kLoss, 2, OutputNetwork::kLastIteration);
  CHECK(stops_at(ties, losses({0.5, 0.5, 0.5})) == 3);
}

TEST_CASE("ValidationPatience: NaN is never a best, Inf never stops, a resumed count goes on", "[train][runstate]") {
  const double nan = std::nan("");
  ValidationPatience p(Metric::kLoss, 2, OutputNetwork::kBestValidation);
  RunState state;
  Requests r = p.on_validation(validated(10, nan), state);
  CHECK_FALSE(r.keep_network);
  CHECK(r.objective->since_best == 1);
  r = p.on_validation(validated(20, 0.4), state);
  CHECK(r.keep_network);
  CHECK(r.objective->since_best == 0);
  CHECK_FALSE(p.on_validation(validated(30, nan), state).stop);
  r = p.on_validation(validated(40, nan), state);
  REQUIRE(r.stop);
  CHECK(r.objective->best_iteration == 20);
  CHECK(r.objective->best_value == 0.4);
  CHECK_FALSE(r.keep_network);

  ValidationPatience inf(Metric::kLoss, -1, OutputNetwork::kLastIteration);  // ValidationPatience: Inf
  std::vector<double> worse(100, 2.0);
  worse[0] = 1.0;
  CHECK(stops_at(inf, losses(worse)) == 0);

  ObjectiveProgress resumed;  // a checkpoint's: best 0.3, one validation since
  resumed.best_score = 0.3;
  resumed.since_best = 1;
  ValidationPatience goes_on(Metric::kLoss, 2, OutputNetwork::kLastIteration, resumed);
  std::string message;
  CHECK(stops_at(goes_on, losses({0.4}), &message) == 1);
  CHECK(message.find("its best, 0.3, was before the resumed checkpoint") != std::string::npos);
}

TEST_CASE("OutputNetwork best-validation keeps the network at each new best only", "[train][runstate]") {
  ValidationPatience p(Metric::kLoss, -1, OutputNetwork::kBestValidation);
  RunState state;
  std::vector<int64_t> kept;
  for (const IterationRecord& rec : losses({0.8, 0.6, 0.7, 0.6, 0.5, 0.9})) {
    Requests r = p.on_validation(rec, state);
    if (r.keep_network) kept.push_back(r.objective->best_iteration);
    CHECK(r.objective->best_value == (rec.iteration < 20 ? 0.8 : rec.iteration < 50 ? 0.6 : 0.5));
  }
  CHECK(kept == std::vector<int64_t>{10, 20, 50});  // not 40: a tie
  ValidationPatience last(Metric::kLoss, -1, OutputNetwork::kLastIteration);
  for (const IterationRecord& rec : losses({0.8, 0.6})) CHECK_FALSE(last.on_validation(rec, state).keep_network);
}

TEST_CASE("run status words: one table, read back", "[train][runstate]") {
  for (RunStatus s : {RunStatus::kRunning, RunStatus::kCompleted, RunStatus::kStoppedEarly, RunStatus::kDiverged,
                      RunStatus::kFailed, RunStatus::kInterrupted})
    CHECK(parse_run_status(to_string(s)) == s);
  CHECK(std::string(to_string(RunStatus::kInterrupted)) == "interrupted");
  CHECK(std::string(status_phrase(RunStatus::kInterrupted)) == "interrupted");
  CHECK(ended_with_model(RunStatus::kInterrupted));  // model.bin is written when a signal stops the run
  CHECK(std::string(to_string(StopKind::kSignal)) == "signal");
  CHECK(std::string(to_string(RunStatus::kStoppedEarly)) == "stopped-early");  // old summaries' word
  CHECK(std::string(status_phrase(RunStatus::kCompleted)) == "finished");
  CHECK_FALSE(parse_run_status("unknown"));
  CHECK(ended_with_model(RunStatus::kStoppedEarly));
  CHECK_FALSE(ended_with_model(RunStatus::kDiverged));
  CHECK(std::string(to_string(StopKind::kValidationPatience)) == "validation-patience");
  CHECK(after_iterations(1) == "after 1 iteration");
  CHECK(after_iterations(20) == "after 20 iterations");
}

// The trainer's phases over a record sequence (observer.h): validation every 5 iterations,
// each phase's merged requests applied to the state after it. Returns every phase's requests.
std::vector<Requests> drive(Observers& observers, const std::vector<IterationRecord>& recs, RunState& state) {
  Config config;
  const std::string dir = "unused";
  const std::vector<std::string> classes = {"a", "b", "c", "d"};
  for (auto& o : observers) o->on_start(RunInfo{config, dir, 10, 100, true, false, classes, true});
  std::vector<Requests> out;
  for (const IterationRecord& rec : recs) {
    state.start_iteration();
    if (!std::isnan(rec.validation_loss)) {
      out.push_back(on_validation(observers, rec, state));
      state.apply(out.back());
    }
    out.push_back(on_iteration(observers, rec, state));
    state.apply(out.back());
    if (state.stopping()) break;
  }
  return out;
}

TEST_CASE("observers: their merged requests do not depend on their order", "[train][runstate]") {
  // A run that does not learn: the loss at ln 4 from the first epoch on, the validation loss
  // rising after iteration 30, so two learning watchdogs (different causes) warn and two
  // ValidationPatience observers (loss, accuracy) ask to stop at the same iteration.
  std::vector<IterationRecord> recs;
  for (int64_t it = 1; it <= 100; ++it) {
    IterationRecord r;
    r.iteration = it;
    r.epoch = 1 + (it - 1) / 10;
    r.minibatch_loss = std::log(4.0);
    r.minibatch_accuracy = 25;
    if (it % 5 == 0) {
      r = validated(it, it <= 30 ? 1.0 - it / 100.0 : 1.0, 0.25);
      r.minibatch_loss = std::log(4.0);
      r.epoch = 1 + (it - 1) / 10;
    }
    recs.push_back(r);
  }
  auto make = [](bool reversed) {
    Observers list;
    list.push_back(std::make_unique<ValidationPatience>(Metric::kLoss, 6, OutputNetwork::kBestValidation));
    list.push_back(std::make_unique<ValidationPatience>(Metric::kAccuracy, 11, OutputNetwork::kLastIteration));
    list.push_back(make_learning_watchdog(4, WatchdogContext{"zeros", 0.01, "zscore"}));
    list.push_back(make_learning_watchdog(4, WatchdogContext{"glorot (the default)", 0.5, "none"}));
    if (reversed) std::reverse(list.begin(), list.end());
    return list;
  };
  Observers forward = make(false), backward = make(true);
  RunState a, b;
  const std::vector<Requests> ra = drive(forward, recs, a), rb = drive(backward, recs, b);
  CHECK(ra == rb);
  CHECK(a.warnings() == b.warnings());
  CHECK(a.stop_reason() == b.stop_reason());
  CHECK(a.plot_note() == b.plot_note());
  // What happened: both watchdogs warned once, and both patience observers asked to stop at
  // iteration 60 (loss: 6 validations after 30; accuracy: 11 after 5).
  CHECK(a.warnings().size() == 2);
  CHECK(a.plot_note() == "warning: not learning (summary.json)");
  REQUIRE(a.stopping());
  CHECK(a.stop_reason().message.find("validation accuracy did not improve for 11 validations") == 0);
  size_t stops = 0, kept = 0;
  for (const Requests& r : ra) {
    stops += r.stop ? 1 : 0;
    kept += r.keep_network ? 1 : 0;
  }
  CHECK(stops == 1);
  CHECK(kept == 6);  // iterations 5, 10, ..., 30: each a new best loss
}
