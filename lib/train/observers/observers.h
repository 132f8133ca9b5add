// The run's observers (observer.h), listed once in make_observers (observers.cpp), and the
// trainer's two phases over them: every observer's requests, merged (order-free).
#pragma once
#include <memory>
#include <vector>

#include "train/observer.h"
#include "train/training_run.h"
#include "train/watchdog.h"

namespace dlt {

using Observers = std::vector<std::unique_ptr<TrainingObserver>>;

// Every rank gets the observers whose requests change the run (ValidationPatience: every rank
// must stop together); rank 0 alone gets those that print or write files. Their order does not
// matter (observer.h).
Observers make_observers(const TrainingRun& run);

// Each observer's on_validation / on_iteration, their requests merged (Requests::merge).
Requests on_validation(const Observers& observers, const IterationRecord& rec, const RunState& state);
Requests on_iteration(const Observers& observers, const IterationRecord& rec, const RunState& state);

// The learning watchdog for a network of `classes` classes; what its warning names.
std::unique_ptr<TrainingObserver> make_learning_watchdog(int64_t classes, WatchdogContext context);

}  // namespace dlt
