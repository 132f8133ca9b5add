// RunState (run_state.h): the stop words, order-free merging of requests.
#include "train/run_state.h"

#include <algorithm>
#include <iterator>
#include <tuple>

namespace dlt {

namespace {
constexpr const char* kStopWords[] = {"none", "max-epochs", "validation-patience", "diverged", "error", "signal"};
}  // namespace

const char* to_string(StopKind k) { return kStopWords[static_cast<int>(k)]; }

std::string after_iterations(int64_t n) {
  return "after " + std::to_string(n) + (n == 1 ? " iteration" : " iterations");
}

void Requests::merge(Requests other) {
  if (other.stop && (!stop || std::tie(other.stop->kind, other.stop->message) < std::tie(stop->kind, stop->message)))
    stop = std::move(other.stop);
  keep_network = keep_network || other.keep_network;
  // ValidationPatience alone makes it; of two, the one that sorts first, as for stops.
  auto key = [](const ObjectiveProgress& p) { return std::tie(p.best_score, p.since_best, p.best_iteration); };
  if (other.objective && (!objective || key(*other.objective) < key(*objective))) objective = other.objective;
  warnings.insert(warnings.end(), other.warnings.begin(), other.warnings.end());
  std::sort(warnings.begin(), warnings.end());
  if (!other.plot_note.empty() && (plot_note.empty() || other.plot_note < plot_note))
    plot_note = std::move(other.plot_note);
}

void RunState::set_validation(const Evaluation& e, bool at_this_iteration) {
  validation_ = e;
  validated_ = at_this_iteration;
}

void RunState::apply(const Requests& r) {
  if (r.stop && !stopping()) stop_ = *r.stop;
  warnings_.insert(warnings_.end(), r.warnings.begin(), r.warnings.end());
  if (!r.plot_note.empty()) plot_note_ = r.plot_note;
}

void RunState::keep_best(int64_t iteration, double value) {
  best_iteration_ = iteration;
  best_objective_ = value;
}

void RunState::end(RunStatus status, StopReason why) {
  status_ = status;
  stop_ = std::move(why);
}

}  // namespace dlt
