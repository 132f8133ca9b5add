// Helpers for tests that train whole runs in process: a config file written and trained on the
// CPU, and the states a layer's written model.bin holds.
#pragma once
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "net/model_file.h"
#include "onnx/transfer.h"
#include "train/trainer.h"

namespace dlt::test {

// Writes `yaml` to dir/out.yaml, trains it on the CPU into dir/out with `overrides` (after quiet,
// plot-less, seeded defaults; base: loaded) and returns the states of `layer` in its model.bin.
inline std::vector<NamedTensor> train_and_read_states(const std::string& dir, const std::string& out,
                                                      const std::string& yaml, const std::string& layer,
                                                      const std::vector<std::string>& overrides) {
  const std::string path = dir + "/" + out + ".yaml";
  std::ofstream(path) << yaml;
  std::vector<std::string> o = {"training.Verbose=false", "training.Plots=none", "training.Seed=1",
                                "training.ExecutionEnvironment=cpu"};
  o.insert(o.end(), overrides.begin(), overrides.end());
  Config c = load_config(path, o);
  apply_transfer(c);
  TrainArgs args;
  args.output_dir = dir + "/" + out;
  args.config_text = dump_config(c);
  args.device = Device::cpu();
  const TrainResult r = train_network(c, args);
  REQUIRE(r.status == "completed");
  std::vector<NamedTensor> states;
  for (const NamedTensor& t : load_model(r.model_path).states)
    if (t.layer == layer) states.push_back(t);
  return states;
}

// The state called `name` among `states` (fails the test when there is none).
inline const NamedTensor& state_named(const std::vector<NamedTensor>& states, const std::string& name) {
  for (const NamedTensor& t : states)
    if (t.name == name) return t;
  FAIL("no state " << name);
  throw 0;
}

}  // namespace dlt::test
