// The CUDA-graph step's CPU-side logic: the conditions that keep a
// step uncaptured (each named in the reason), and StepGraph on a backend that cannot capture
// (the CPU): warm-up steps, then off with the reason, every step issued exactly once.
#include <catch2/catch.hpp>

#include "config/config.h"
#include "net/network.h"
#include "train/step_graph.h"

namespace dlt::test {

namespace {

NetworkSpec network(bool dropout) {
  std::string yaml =
      "layers:\n"
      "  - {type: imageInput, Name: input, InputSize: [8, 8, 1], Normalization: none}\n"
      "  - {type: fullyConnected, Name: fc1, OutputSize: 6}\n"
      "  - {type: relu, Name: relu1}\n";
  if (dropout) yaml += "  - {type: dropout, Name: drop1, Probability: 0.3}\n";
  yaml +=
      "  - {type: fullyConnected, Name: fc2, OutputSize: 3}\n"
      "  - {type: softmax, Name: softmax}\n"
      "  - {type: classification, Name: output}\n";
  return load_config_text(yaml, "step_graph_test").network;
}

}  // namespace

TEST_CASE("step graph: the conditions that keep a step uncaptured", "[train]") {
  Network plain(network(false), Device::cpu()), with_dropout(network(true), Device::cpu());
  const Device gpu = Device::cuda(0);  // only named: nothing runs on it
  CHECK(step_graph_blocker(plain, gpu, 1).empty());
  CHECK_THAT(step_graph_blocker(plain, Device::cpu(), 1), Catch::Contains("CPU"));
  CHECK_THAT(step_graph_blocker(plain, gpu, 2), Catch::Contains("data-parallel"));
  CHECK_THAT(step_graph_blocker(with_dropout, gpu, 1), Catch::Contains("'drop1' is dropout"));
}

TEST_CASE("step graph: a backend that cannot capture runs every step directly", "[train]") {
  StepGraph g(Device::cpu(), 2);
  int issued = 0;
  auto issue = [&] { ++issued; };
  CHECK(g.run(4, issue) == StepGraph::How::kDirect);  // warm-up
  CHECK(g.run(4, issue) == StepGraph::How::kDirect);
  CHECK(g.enabled());
  CHECK(g.run(4, issue) == StepGraph::How::kDirect);  // the capture is refused: off
  CHECK_FALSE(g.enabled());
  CHECK(g.run(4, issue) == StepGraph::How::kDirect);
  CHECK(g.run_uncaptured(issue) == StepGraph::How::kDirect);
  CHECK(issued == 5);
  CHECK(g.direct_steps() == 5);
  CHECK(g.replays() == 0);
  CHECK(g.captures() == 0);
  CHECK_THAT(g.summary(), Catch::Contains("off") && Catch::Contains("cannot capture"));
}

TEST_CASE("step graph: a failed capture issues the step again, for real", "[train]") {
  // On the CPU begin_capture() refuses before issue() runs; the count shows the step ran
  // once per call even on the path where the capture is attempted.
  StepGraph g(Device::cpu(), 0);
  int issued = 0;
  CHECK(g.run(8, [&] { ++issued; }) == StepGraph::How::kDirect);
  CHECK(issued == 1);
  CHECK_FALSE(g.enabled());
}

}  // namespace dlt::test
