// Numerical gradient checks: central differences, accumulated in double precision, against
// a layer's (or a whole network's) analytical backward. A random subset of elements is
// checked for big tensors; elements where the derivative changes between step sizes (a
// ReLU or max-pool kink inside the step) are skipped and counted, up to a cap: more skipped
// points than max_skipped_fraction of those sampled count as a failure (a backward that is
// wrong everywhere must not pass as "all kinks").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "layers/data_format.h"
#include "layers/layer.h"
#include "layers/spec.h"
#include "tensor/shape.h"

namespace dlt::test {

struct GradCheckOptions {
  int64_t batch = 2;
  int samples = 24;    // elements checked per tensor
  double step = 1e-2;  // finite-difference step
  double rtol = 2e-2, atol = 2e-3;
  bool training = true;
  double input_scale = 1.0;  // inputs ~ U(-scale, scale)
  double kink_guard = 0.0;   // inputs with |x| < guard are pushed away from 0
  uint64_t seed = 1;
  double undefined_fraction = 0.25;  // per-pixel losses: labels left undefined (-1)
  double max_skipped_fraction = 0.2;  // of the sampled points; more is one failure
};

struct GradCheckReport {
  int checked = 0, failed = 0, skipped_kinks = 0;  // failed includes one for too many skipped
  double max_error = 0;  // worst |analytic - numeric| / (atol + rtol * max(|a|, |n|))
  std::string worst;     // which tensor and element
};

// The inference output of `layer` (its output shape `out` already inferred from `in`, both
// per image) on the CPU for n images x (n * in's values, NHWC).
std::vector<double> forward_on_cpu(Layer& layer, const Shape& in, const Shape& out, int64_t n,
                                   const std::vector<double>& x);

// Layer alone: loss = sum(y .* r) for a fixed random r. Checks every input and parameter.
// formats: the inputs' data formats (default: images, SSCB).
GradCheckReport check_layer(const LayerSpec& spec, const std::vector<Shape>& input_shapes,
                            const GradCheckOptions& options, const std::vector<DataFormat>& formats = {});

// Whole network with its loss on random labels (per pixel for a per-pixel output, some
// undefined), random responses (regression) or random 0/1 targets (multi-label): checks every
// parameter.
GradCheckReport check_network(const NetworkSpec& spec, const GradCheckOptions& options);

// A LayerSpec from "type" and "key=value" options (lists as "[1,2]").
LayerSpec layer_spec(const std::string& type, const std::vector<std::string>& options,
                     const std::string& name = "layer");

}  // namespace dlt::test
