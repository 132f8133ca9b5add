// Network generators with MATLAB's names: `layers: {segnetLayers: {...}}` (or unetLayers)
// expands, when the config loads and before --set on layers, into the
// layer list MATLAB's function returns (same layer names and order), so that
// `--set layers.NAME.Option=...` and the resolved config.yaml see ordinary layers. The output
// layer follows training.Loss (pixelClassification for none and crossentropy). Beyond MATLAB's
// options, ClassWeights goes to the pixelClassification layer (seed 003 replaces that layer by
// one with weights; here it is one key).
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "config/choice.h"
#include "config/options.h"
#include "config/sections.h"
#include "util/error.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace dlt::cfg {

namespace {

// A generator's options as given, read with the generator's name and the file's lines.
class GeneratorArgs {
 public:
  GeneratorArgs(const std::string& name, const YAML::Node& node, const Origin& origin)
      : name_(name), node_(node), origin_(origin) {
    if (!node.IsMap())
      throw ConfigError(origin.at(node) + name +
                        " must be a map of options such as {ImageSize: [360, 480, 3], "
                        "NumClasses: 11}, got '" +
                        node_text(node) + "'");
    for (const Entry& e : map_entries(node, origin, name)) entries_[e.key] = e;
  }

  const Entry* find(const std::string& key) {
    used_.push_back(key);
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }
  const std::string& name() const { return name_; }
  // "file:line: <generator>: " for an entry's messages.
  std::string at(const Entry& e) const { return origin_.loc(e.key_node, e.value).prefix() + name_ + ": "; }
  [[noreturn]] void fail(const Entry& e, const std::string& what) const {
    throw ConfigError(origin_.loc(e.key_node, e.value).prefix() + name_ + ": " + e.key + " " + what + ", got '" +
                      node_text(e.value) + "'");
  }
  std::vector<int64_t> ints(const std::string& key, std::vector<int64_t> def, int64_t min) {
    const Entry* e = find(key);
    if (!e) return def;
    std::vector<int64_t> out;
    std::vector<YAML::Node> items;
    if (e->value.IsScalar())
      items.push_back(e->value);
    else if (e->value.IsSequence())
      for (const auto& n : list_items(e->value)) items.push_back(n);
    for (const auto& n : items) {
      int64_t v = 0;
      if (!n.IsScalar() || !parse_int(n.Scalar(), &v) || v < min)
        fail(*e, "must be an integer >= " + std::to_string(min) + " or a list of them");
      out.push_back(v);
    }
    if (out.empty()) fail(*e, "must be an integer or a list of integers");
    return out;
  }
  int64_t integer(const std::string& key, int64_t def, int64_t min, bool required = false) {
    if (required && !entries_.count(key)) throw ConfigError(origin_.at(node_) + name_ + " needs " + key);
    const std::vector<int64_t> v = ints(key, {def}, min);
    if (v.size() != 1) fail(*find(key), "must be one integer");
    return v[0];
  }
  double number(const std::string& key, double def, double lo, double hi) {
    const Entry* e = find(key);
    if (!e) return def;
    double v = 0;
    if (!e->value.IsScalar() || !parse_double(e->value.Scalar(), &v) || !(v >= lo && v <= hi))
      fail(*e, "must be a number in [" + format_double(lo) + ", " + format_double(hi) + "]");
    return v;
  }
  std::string word(const std::string& key, const std::string& def, const std::vector<std::string>& choices) {
    const Entry* e = find(key);
    if (!e) return def;
    if (e->value.IsScalar())
      for (const auto& c : choices)
        if (iequals(c, e->value.Scalar())) return c;
    fail(*e, "must be one of " + join(choices, ", "));
  }
  // Per-stage values: one number for every stage or one per stage.
  // max: the largest value (a count of layers; the generated network stays a few thousand
  // layers at most).
  std::vector<int64_t> per_stage(const std::string& key, std::vector<int64_t> def, int64_t stages,
                                 int64_t max = INT64_MAX) {
    std::vector<int64_t> v = ints(key, def, 1);
    if (v.size() == 1) v.assign(static_cast<size_t>(stages), v[0]);
    if (static_cast<int64_t>(v.size()) != stages)
      fail(*find(key), "must be one integer or one per encoder stage (" + std::to_string(stages) + ")");
    for (int64_t x : v)
      if (x > max) fail(*find(key), "must be at most " + std::to_string(max));
    return v;
  }
  void check_all_used() const {
    for (const auto& [key, e] : entries_) {
      bool used = false;
      for (const auto& u : used_) used = used || u == key;
      if (!used)
        throw ConfigError(origin_.loc(e.key_node, e.value).prefix() + name_ + ": unknown option '" + key + "'" +
                          did_you_mean(key, used_));
    }
  }

 private:
  std::string name_;
  YAML::Node node_;
  const Origin& origin_;
  std::map<std::string, Entry> entries_;
  std::vector<std::string> used_;
};

// The image size [H W] or [H W C], big enough for depth halvings. Sizes need not divide by
// 2^depth: a pooling floors an odd size and its unpooling restores it (the last row or column
// of the decoder's map is then zero until the next convolution), as seed 003's 360x480 with
// five stages does in MATLAB.
std::vector<int64_t> image_size(GeneratorArgs& a, const YAML::Node& node, const Origin& origin, const std::string& gen,
                                int64_t depth) {
  if (!node["ImageSize"])
    throw ConfigError(origin.at(node) + gen + " needs ImageSize ([height width] or [height width channels])");
  std::vector<int64_t> size = a.ints("ImageSize", {}, 1);
  if (size.size() == 2) size.push_back(1);  // MATLAB: [h w] is one channel
  if (size.size() != 3) a.fail(*a.find("ImageSize"), "must be [height width] or [height width channels]");
  const int64_t f = int64_t{1} << depth;
  if (size[0] < f || size[1] < f)
    a.fail(*a.find("ImageSize"),
           "must be at least 2^EncoderDepth = " + std::to_string(f) + " high and wide (each encoder stage halves it)");
  return size;
}

YAML::Node list_of(const std::vector<int64_t>& v) {
  YAML::Node n(YAML::NodeType::Sequence);
  for (int64_t x : v) n.push_back(x);
  return n;
}

class LayerList {
 public:
  YAML::Node add(const std::string& type, const std::string& name) {  // a handle: edits reach the list
    YAML::Node n(YAML::NodeType::Map);
    n["type"] = type;
    n["Name"] = name;
    layers_.push_back(n);
    return layers_.back();
  }
  YAML::Node conv(const std::string& name, int64_t filter, int64_t filters) {
    YAML::Node n = add("convolution2d", name);
    n["FilterSize"] = filter;
    n["NumFilters"] = filters;
    n["Padding"] = "same";
    n["WeightsInitializer"] = "he";  // MATLAB's generators: MSRA / He
    return n;
  }
  YAML::Node node() const {
    YAML::Node seq(YAML::NodeType::Sequence);
    for (const auto& n : layers_) seq.push_back(n);
    return seq;
  }

 private:
  std::vector<YAML::Node> layers_;
};

std::string str(int64_t v) { return std::to_string(v); }

// The output layer that ends a generated network, named `name`, as training.Loss (`loss`: the
// file's or --set's value, or null) asks: pixelClassification for none and the cross-entropies,
// with the generator's ClassWeights; dicePixelClassification for generalized-dice, focalLoss
// for focal-crossentropy and tverskyPixelClassification for tversky, which take no class weights. A loss that is not
// per pixel is an error here; a name that is no loss is left to the training section to report.
void add_output(LayerList& l, GeneratorArgs& a, const std::string& name, const YAML::Node& loss, const Origin& origin) {
  const std::string gen = a.name();
  const std::string want = loss.IsDefined() && loss.IsScalar() ? loss.Scalar() : "";
  LossName kind = LossName::kNone;
  parse_choice(want, &kind);  // a word that is no loss stays kNone: the training section reports it
  std::string type;
  switch (kind) {
    case LossName::kNone:
    case LossName::kCrossEntropy:
    case LossName::kIndexCrossEntropy:
      type = "pixelClassification";
      break;
    case LossName::kGeneralizedDice:
      type = "dicePixelClassification";
      break;
    case LossName::kFocalCrossEntropy:
      type = "focalLoss";
      break;
    case LossName::kTversky:
      type = "tverskyPixelClassification";
      break;
    case LossName::kBinaryCrossEntropy:
    case LossName::kMse:
    case LossName::kMeanSquaredError:
    case LossName::kMae:
    case LossName::kMeanAbsoluteError:
    case LossName::kHuber:
      throw ConfigError(origin.at(loss) + "training.Loss " + want + " is not a per-pixel loss, and " + gen +
                        " ends in a per-pixel output layer (Loss none or crossentropy: pixelClassification; "
                        "generalized-dice: dicePixelClassification; focal-crossentropy: focalLoss; tversky: "
                        "tverskyPixelClassification)");
  }
  YAML::Node out = l.add(type, name);
  const Entry* w = a.find("ClassWeights");
  if (!w || w->value.IsNull() || (w->value.IsScalar() && iequals(w->value.Scalar(), "none"))) return;
  if (type != "pixelClassification")
    throw ConfigError(a.at(*w) + "ClassWeights '" + node_text(w->value) + "' applies to the pixelClassification " +
                      "output (training.Loss none or crossentropy); with Loss " + want + " the network ends in " +
                      type + ", which takes no class weights (MATLAB's " +
                      (type == "focalLoss" ? "focalLossLayer has Gamma and Alpha"
                       : type == "tverskyPixelClassification"
                           ? "Tversky loss example weighs its errors by Alpha and Beta"
                           : "dicePixelClassificationLayer weights each class by 1 / "
                             "its pixel count squared") +
                      "): remove ClassWeights");
  out["ClassWeights"] = YAML::Clone(w->value);
}

// segnetLayers(imageSize, numClasses, encoderDepth, NumConvolutionLayers=2,
// NumOutputChannels=min(64*2^(i-1), 512), FilterSize=3): encoder stages of conv-bn-relu and a
// 2x2 max pooling that keeps its indices; decoder stages that unpool with them, in reverse,
// each ending with the channels of the stage above (the last with NumClasses); softmax and
// training.Loss's output layer (add_output).
YAML::Node segnet(const YAML::Node& node, const Origin& origin, const YAML::Node& loss) {
  GeneratorArgs a("segnetLayers", node, origin);
  const int64_t depth = a.integer("EncoderDepth", 4, 1, true);
  const std::vector<int64_t> size = image_size(a, node, origin, "segnetLayers", depth);
  const int64_t classes = a.integer("NumClasses", 0, 2, true);
  std::vector<int64_t> def_channels;
  for (int64_t i = 0; i < depth; ++i) def_channels.push_back(std::min<int64_t>(int64_t{64} << i, 512));
  const std::vector<int64_t> convs = a.per_stage("NumConvolutionLayers", {2}, depth, 64);
  const std::vector<int64_t> channels = a.per_stage("NumOutputChannels", def_channels, depth);
  const int64_t filter = a.integer("FilterSize", 3, 1);
  const std::string norm = a.word("Normalization", "zerocenter", {"zerocenter", "zscore", "none"});
  a.find("ClassWeights");  // add_output reads it
  a.check_all_used();

  LayerList l;
  YAML::Node in = l.add("imageInput", "inputImage");
  in["InputSize"] = list_of(size);
  in["Normalization"] = norm;
  auto conv_bn_relu = [&](const std::string& stage, int64_t j, int64_t k) {
    l.conv(stage + "_conv" + str(j), filter, k);
    l.add("batchNormalization", stage + "_bn_" + str(j));
    l.add("relu", stage + "_relu_" + str(j));
  };
  for (int64_t i = 1; i <= depth; ++i) {
    const std::string stage = "encoder" + str(i);
    for (int64_t j = 1; j <= convs[i - 1]; ++j) conv_bn_relu(stage, j, channels[i - 1]);
    YAML::Node pool = l.add("maxPooling2d", stage + "_maxpool");
    pool["PoolSize"] = 2;
    pool["Stride"] = 2;
    pool["HasUnpoolingOutputs"] = "true";
  }
  for (int64_t i = depth; i >= 1; --i) {
    const std::string stage = "decoder" + str(i);
    YAML::Node unpool = l.add("maxUnpooling2d", stage + "_unpool");
    unpool["PoolingLayer"] = "encoder" + str(i) + "_maxpool";
    for (int64_t j = convs[i - 1]; j >= 1; --j)
      conv_bn_relu(stage, j, j > 1 ? channels[i - 1] : i > 1 ? channels[i - 2] : classes);
  }
  l.add("softmax", "softmax");
  add_output(l, a, "pixelLabels", loss, origin);
  return l.node();
}

// unetLayers(imageSize, numClasses, EncoderDepth=4, NumFirstEncoderFilters=32, FilterSize=3,
// ConvolutionPadding='same'), with MATLAB's layer names: encoder stages of two conv-relu pairs
// (Encoder-Stage-i-Conv-j, -ReLU-j) and a 2x2 stride-2 max pooling, the last stage with a
// dropout before it; a bridge of two conv-relu pairs and a dropout; decoder stages that
// up-convolve (2x2 stride-2 transposedConv2d, -UpConv, -UpReLU), concatenate the encoder
// stage's ReLU-2 output of the same size (-DepthConcatenation) and apply two conv-relu pairs;
// a 1x1 convolution to NumClasses, softmax and training.Loss's output layer (add_output).
// Channels double per encoder stage from NumFirstEncoderFilters and halve per decoder stage.
YAML::Node unet(const YAML::Node& node, const Origin& origin, const YAML::Node& loss) {
  GeneratorArgs a("unetLayers", node, origin);
  const int64_t depth = a.integer("EncoderDepth", 4, 1);
  const std::vector<int64_t> size = image_size(a, node, origin, "unetLayers", depth);
  const int64_t classes = a.integer("NumClasses", 0, 2, true);
  const int64_t first = a.integer("NumFirstEncoderFilters", 32, 1);
  const int64_t filter = a.integer("FilterSize", 3, 1);
  a.word("ConvolutionPadding", "same", {"same"});  // MATLAB's 'valid' (with crop layers) is not offered yet
  const std::string norm = a.word("Normalization", "zerocenter", {"zerocenter", "zscore", "none"});
  a.find("ClassWeights");  // add_output reads it
  a.check_all_used();
  const int64_t f = int64_t{1} << depth;
  if (size[0] % f || size[1] % f)
    a.fail(*a.find("ImageSize"), "must be a multiple of 2^EncoderDepth = " + std::to_string(f) +
                                     " high and wide with ConvolutionPadding 'same' (each decoder stage doubles "
                                     "the size and concatenates the encoder map of that size)");

  LayerList l;
  YAML::Node in = l.add("imageInput", "ImageInputLayer");
  in["InputSize"] = list_of(size);
  in["Normalization"] = norm;
  auto conv_relu = [&](const std::string& prefix, int64_t j, int64_t k) {
    l.conv(prefix + "-Conv-" + str(j), filter, k);
    l.add("relu", prefix + "-ReLU-" + str(j));
  };
  for (int64_t i = 1; i <= depth; ++i) {
    const std::string stage = "Encoder-Stage-" + str(i);
    conv_relu(stage, 1, first << (i - 1));
    conv_relu(stage, 2, first << (i - 1));
    if (i == depth) l.add("dropout", stage + "-DropOut")["Probability"] = 0.5;
    YAML::Node pool = l.add("maxPooling2d", stage + "-MaxPool");
    pool["PoolSize"] = 2;
    pool["Stride"] = 2;
  }
  conv_relu("Bridge", 1, first << depth);
  conv_relu("Bridge", 2, first << depth);
  l.add("dropout", "Bridge-DropOut")["Probability"] = 0.5;
  for (int64_t i = 1; i <= depth; ++i) {
    const std::string stage = "Decoder-Stage-" + str(i);
    const int64_t k = first << (depth - i);
    YAML::Node up = l.add("transposedConv2d", stage + "-UpConv");
    up["FilterSize"] = 2;
    up["NumFilters"] = k;
    up["Stride"] = 2;
    up["WeightsInitializer"] = "he";
    l.add("relu", stage + "-UpReLU");
    YAML::Node cat = l.add("depthConcatenation", stage + "-DepthConcatenation");
    cat["NumInputs"] = 2;
    cat["Inputs"] = YAML::Node(YAML::NodeType::Sequence);
    cat["Inputs"].push_back(stage + "-UpReLU");
    cat["Inputs"].push_back("Encoder-Stage-" + str(depth - i + 1) + "-ReLU-2");
    conv_relu(stage, 1, k);
    conv_relu(stage, 2, k);
  }
  l.conv("Final-ConvolutionLayer", 1, classes);
  l.add("softmax", "Softmax-Layer");
  add_output(l, a, "Segmentation-Layer", loss, origin);
  return l.node();
}

struct Generator {
  const char* name;
  YAML::Node (*expand)(const YAML::Node& options, const Origin&, const YAML::Node& loss);
};
const std::vector<Generator>& generators() {
  static const std::vector<Generator> g = {{"segnetLayers", segnet}, {"unetLayers", unet}};
  return g;
}

}  // namespace

std::vector<std::string> network_generator_names() {
  std::vector<std::string> names;
  for (const auto& g : generators()) names.push_back(g.name);
  return names;
}

void expand_layer_generators(YAML::Node& root, Origin& origin) {
  if (!root.IsMap()) return;
  YAML::Node layers = root["layers"];
  if (!layers || !layers.IsMap()) return;
  const std::vector<Entry> entries = map_entries(layers, origin, "layers");
  if (entries.size() != 1)
    throw ConfigError(origin.at(layers) + "layers: is a list of layers or one network generator (" +
                      join(network_generator_names(), ", ") + "), got a map of " + std::to_string(entries.size()) +
                      " keys");
  const Entry& e = entries[0];
  const YAML::Node& croot = root;  // const: reading a missing key adds nothing
  const YAML::Node training = croot["training"];
  const YAML::Node loss = training.IsDefined() && training.IsMap() ? training["Loss"] : YAML::Node();
  for (const auto& g : generators()) {
    if (!iequals(e.key, g.name)) continue;
    const SourceLoc at = origin.loc(e.key_node, e.value);
    YAML::Node list = g.expand(e.value, origin, loss);
    const std::string what = at.file + (at.line > 0 ? ":" + std::to_string(at.line) : "") + " (" + g.name + ")";
    origin.mark_override(list, what);
    root["layers"] = list;
    return;
  }
  throw ConfigError(origin.loc(e.key_node, e.value).prefix() + "layers: unknown network generator '" + e.key + "'" +
                    did_you_mean(e.key, network_generator_names()) + " (layers: is a list of layers or one of " +
                    join(network_generator_names(), ", ") + ")");
}

}  // namespace dlt::cfg
