// The run's observers (observer.h), listed once in make_observers (observers.cpp).
#pragma once
#include <memory>
#include <vector>

#include "train/observer.h"
#include "train/training_run.h"

namespace dlt {

using Observers = std::vector<std::unique_ptr<TrainingObserver>>;

// Every rank gets the observers that complete the record or stop the run (validation is a
// collective); rank 0 alone gets those that print or write files. The order is the order of
// every phase (observer.h).
Observers make_observers(TrainingRun& run);

}  // namespace dlt
