// imageInput (with zerocenter / zscore normalization from training-data statistics),
// classification (the output layer: the network computes its cross-entropy loss), addition
// and depthConcatenation (the DAG joins).
#include "layers/io_layers.h"

#include "layers/layer_util.h"
#include "util/strings.h"

namespace dlt {

ImageInputLayer::ImageInputLayer(const LayerSpec& spec) : Layer(spec) {
  const SpecValue* v = spec_.get("InputSize");
  if (!v) throw ConfigError(spec.where() + "option InputSize is required (e.g. InputSize: [32, 32, 3])");
  size_t n = v->items.size();
  if (n != 2 && n != 3)
    throw ConfigError(spec.where() + "option InputSize must be [height, width, channels] or [height, width], got '" + v->str() + "'");
  auto sz = spec_.get_ints("InputSize", {}, n, 1);
  if (n == 2) sz.push_back(1);
  shape_ = Shape{sz[0], sz[1], sz[2]};
  normalization_ = spec_.get_choice("Normalization", "zerocenter", {"none", "zerocenter", "zscore"});
  spec_.get("DataAugmentation");
}

Shape ImageInputLayer::infer(const std::vector<Shape>& inputs) {
  if (!inputs.empty()) shape_error(spec_, "imageInput must be the first layer and takes no Inputs");
  states_.clear();
  if (normalization_ == "zerocenter") states_.push_back(State{"Mean", shape_, 0.f, {}});
  if (normalization_ == "zscore") {
    states_.push_back(State{"Mean", Shape{1, 1, shape_[2]}, 0.f, {}});
    states_.push_back(State{"StandardDeviation", Shape{1, 1, shape_[2]}, 1.f, {}});
  }
  return shape_;
}

void ImageInputLayer::setup(int64_t, Backend& be) {
  if (normalization_ == "zscore" && !inv_std_.defined()) inv_std_ = Tensor(Shape{shape_[2]}, be.device());
  refresh_inv_std();
}

void ImageInputLayer::refresh_inv_std() {
  if (normalization_ != "zscore" || !inv_std_.defined()) return;
  Tensor sd = states_[1].value.to(Device::cpu());
  Tensor inv(Shape{shape_[2]});
  for (int64_t c = 0; c < shape_[2]; ++c) inv.data()[c] = sd.data()[c] > 0 ? 1.f / sd.data()[c] : 1.f;
  inv_std_.copy_from(inv);
}

void ImageInputLayer::set_statistics(const Tensor& mean_image, const Tensor& channel_mean, const Tensor& channel_std) {
  if (normalization_ == "zerocenter") states_[0].value.copy_from(mean_image);
  if (normalization_ == "zscore") {
    states_[0].value.copy_from(channel_mean);
    states_[1].value.copy_from(channel_std);
    refresh_inv_std();
  }
}

void ImageInputLayer::forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) {
  Backend& be = backend_for(y.device());
  if (normalization_ == "none") be.copy(*x[0], y);
  else if (normalization_ == "zerocenter") be.shift_scale(*x[0], states_[0].value, Tensor(), y);
  else be.shift_scale(*x[0], states_[0].value, inv_std_, y);
}

void ImageInputLayer::backward(const std::vector<const Tensor*>&, const Tensor&, Tensor&, const std::vector<Tensor*>&,
                               const RunContext&) {}

int64_t ImageInputLayer::stored_statistics() const {
  return normalization_ == "zerocenter" ? shape_.numel() : 0;
}

namespace {

class ClassificationLayer final : public Layer {
 public:
  explicit ClassificationLayer(const LayerSpec& spec) : Layer(spec) { spec_.get("Classes"); }
  Shape infer(const std::vector<Shape>& inputs) override {
    expect_inputs(spec_, inputs, 1);
    if (inputs[0][0] != 1 || inputs[0][1] != 1)
      shape_error(spec_, "input is " + inputs[0].str() + " but classification needs 1x1xK class scores (put a fullyConnected and a softmax layer before it)");
    return inputs[0];
  }
  void setup(int64_t, Backend&) override {}
  // The network computes the loss from the softmax output; this layer holds no data.
  void forward(const std::vector<const Tensor*>&, Tensor&, const RunContext&) override {}
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor&, const std::vector<Tensor*>&,
                const RunContext&) override {}
};

class AdditionLayer final : public Layer {
 public:
  explicit AdditionLayer(const LayerSpec& spec) : Layer(spec) { num_ = spec_.get_int("NumInputs", 0, 2); }
  int num_inputs() const override { return -1; }
  Shape infer(const std::vector<Shape>& inputs) override {
    if (inputs.size() < 2) shape_error(spec_, "addition needs at least 2 Inputs, got " + std::to_string(inputs.size()));
    if (num_ && static_cast<int64_t>(inputs.size()) != num_)
      shape_error(spec_, "NumInputs is " + std::to_string(num_) + " but " + std::to_string(inputs.size()) + " Inputs are named");
    for (size_t i = 1; i < inputs.size(); ++i)
      if (inputs[i] != inputs[0])
        shape_error(spec_, "inputs " + spec_.inputs[0] + " (" + inputs[0].str() + ") and " + spec_.inputs[i] + " (" +
                               inputs[i].str() + ") differ in size");
    return inputs[0];
  }
  void setup(int64_t, Backend&) override {}
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    backend_for(y.device()).sum(x, y);
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    Backend& be = backend_for(dy.device());
    for (Tensor* d : dx)
      if (d) be.copy(dy, *d);
  }
  int64_t flops_per_image() const override { return 0; }

 private:
  int64_t num_ = 0;
};

class DepthConcatenationLayer final : public Layer {
 public:
  explicit DepthConcatenationLayer(const LayerSpec& spec) : Layer(spec) { num_ = spec_.get_int("NumInputs", 0, 2); }
  int num_inputs() const override { return -1; }
  Shape infer(const std::vector<Shape>& inputs) override {
    if (inputs.size() < 2) shape_error(spec_, "depthConcatenation needs at least 2 Inputs, got " + std::to_string(inputs.size()));
    if (num_ && static_cast<int64_t>(inputs.size()) != num_)
      shape_error(spec_, "NumInputs is " + std::to_string(num_) + " but " + std::to_string(inputs.size()) + " Inputs are named");
    channels_.clear();
    int64_t c = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i][0] != inputs[0][0] || inputs[i][1] != inputs[0][1])
        shape_error(spec_, "inputs " + spec_.inputs[0] + " (" + inputs[0].str() + ") and " + spec_.inputs[i] + " (" +
                               inputs[i].str() + ") differ in height or width");
      channels_.push_back(inputs[i][2]);
      c += inputs[i][2];
    }
    h_ = inputs[0][0];
    w_ = inputs[0][1];
    return Shape{h_, w_, c};
  }
  void setup(int64_t n, Backend& be) override { op_ = be.make_concat(n, h_, w_, channels_); }
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override { op_->forward(x, y); }
  void backward(const std::vector<const Tensor*>&, const Tensor&, Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext&) override {
    op_->backward(dy, dx);
  }

 private:
  int64_t num_ = 0, h_ = 0, w_ = 0;
  std::vector<int64_t> channels_;
  std::unique_ptr<ConcatOp> op_;
};

}  // namespace

std::unique_ptr<Layer> make_image_input_layer(const LayerSpec& s) { return std::make_unique<ImageInputLayer>(s); }
std::unique_ptr<Layer> make_classification_layer(const LayerSpec& s) { return std::make_unique<ClassificationLayer>(s); }
std::unique_ptr<Layer> make_addition_layer(const LayerSpec& s) { return std::make_unique<AdditionLayer>(s); }
std::unique_ptr<Layer> make_depth_concatenation_layer(const LayerSpec& s) {
  return std::make_unique<DepthConcatenationLayer>(s);
}

}  // namespace dlt
