// Network::append_loss_layer and check_loss_matches: training.Loss (trainnet's lossFcn) and
// the output layer that computes it.
#include "layers/layer.h"
#include "net/network.h"
#include "util/error.h"

namespace dlt {

namespace {

struct LossLayer {
  const char* type;
  const char* loss_function;  // regression's LossFunction, or null
  LossKind kind;
};

// The output layer of each loss name (crossentropy: classification, which Network::build
// turns into pixelClassification after a per-pixel softmax).
LossLayer loss_layer(const std::string& name) {
  if (name == "crossentropy" || name == "index-crossentropy")
    return {"classification", nullptr, LossKind::kCrossEntropy};
  if (name == "binary-crossentropy") return {"multilabelClassification", nullptr, LossKind::kBinaryCrossEntropy};
  if (name == "mse" || name == "mean-squared-error") return {"regression", "mse", LossKind::kMse};
  if (name == "mae" || name == "mean-absolute-error") return {"regression", "mae", LossKind::kMae};
  if (name == "huber") return {"regression", "huber", LossKind::kHuber};
  if (name == "generalized-dice") return {"dicePixelClassification", nullptr, LossKind::kGeneralizedDice};
  if (name == "focal-crossentropy") return {"focalLoss", nullptr, LossKind::kFocalCrossEntropy};
  if (name == "tversky") return {"tverskyPixelClassification", nullptr, LossKind::kTversky};
  throw ConfigError("training.Loss '" + name + "' is not a loss dltrain knows");
}

}  // namespace

int Network::append_loss_layer() {
  if (spec_.loss.empty() || spec_.loss == "none") return -1;
  const LossLayer l = loss_layer(spec_.loss);
  if (make_layer(spec_.layers.back())->role() == Layer::Role::kOutput) return -1;
  LayerSpec out;
  out.type = l.type;
  out.name = "output";
  for (int k = 2; spec_.find(out.name); ++k) out.name = "output_" + std::to_string(k);
  out.loc = spec_.loss_loc;
  if (l.loss_function) out.set("LossFunction", l.loss_function);
  spec_.layers.push_back(std::move(out));
  return static_cast<int>(spec_.layers.size()) - 1;
}

std::string Network::task() const {
  if (regression_loss(loss_.kind)) return "regression";
  if (loss_.kind == LossKind::kBinaryCrossEntropy) return "multilabel";
  return loss_.per_pixel ? "segmentation" : "classification";
}

void Network::check_loss_matches(const Node& last) const {
  const LossLayer l = loss_layer(spec_.loss);
  if (last.layer->loss_spec().kind == l.kind) return;
  throw ConfigError(spec_.loss_loc.prefix() + "training.Loss is " + spec_.loss + " but the network ends in " +
                    last.layer->type() + " layer '" + last.layer->name() +
                    "', which computes another loss (remove the output layer or the Loss option, or make them agree)");
}

}  // namespace dlt
