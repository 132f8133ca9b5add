#include "support/grad_check.h"

#include <cmath>
#include <memory>

#include "backend/backend.h"
#include "layers/layer.h"
#include "net/network.h"
#include "support/tensor_utils.h"
#include "util/rng.h"

namespace dlt::test {

LayerSpec layer_spec(const std::string& type, const std::vector<std::string>& options, const std::string& name) {
  LayerSpec s;
  s.type = type;
  s.name = name;
  for (const auto& kv : options) {
    size_t eq = kv.find('=');
    std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
    SpecValue v;
    if (!value.empty() && value.front() == '[') {
      v.is_list = true;
      std::string body = value.substr(1, value.size() - 2), item;
      for (char c : body + ",") {
        if (c == ',') {
          if (!item.empty()) v.items.push_back(item);
          item.clear();
        } else if (c != ' ') {
          item += c;
        }
      }
    } else {
      v.items = {value};
    }
    s.options[key] = v;
  }
  return s;
}

namespace {

void fill_uniform(Tensor& t, Rng& rng, double scale, double guard) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = rng.uniform(-scale, scale);
    if (guard > 0 && std::fabs(v) < guard) v = v < 0 ? v - guard : v + guard;
    t.data()[i] = static_cast<float>(v);
  }
}

// Checks d(loss)/d(t[i]) for sampled i against analytic[i].
template <typename LossFn>
void check_tensor(const std::string& what, Tensor& t, const std::vector<float>& analytic, LossFn loss,
                  const GradCheckOptions& o, Rng& rng, GradCheckReport& rep) {
  int64_t n = t.numel();
  int samples = static_cast<int>(std::min<int64_t>(n, o.samples));
  for (int s = 0; s < samples; ++s) {
    int64_t i = samples == n ? s : static_cast<int64_t>(rng.below(static_cast<uint64_t>(n)));
    float orig = t.data()[i];
    auto numeric = [&](double h) {
      t.data()[i] = static_cast<float>(orig + h);
      double up = loss();
      t.data()[i] = static_cast<float>(orig - h);
      double down = loss();
      t.data()[i] = orig;
      return (up - down) / (2 * h);
    };
    double n1 = numeric(o.step), n2 = numeric(o.step / 2);
    double a = analytic[static_cast<size_t>(i)];
    double tol1 = o.atol + o.rtol * std::max(std::fabs(n1), std::fabs(n2));
    if (std::fabs(n1 - n2) > tol1) {  // the derivative changes inside the step: a kink
      ++rep.skipped_kinks;
      continue;
    }
    double err = std::fabs(a - n2) / (o.atol + o.rtol * std::max(std::fabs(a), std::fabs(n2)));
    ++rep.checked;
    if (err > 1) ++rep.failed;
    if (err > rep.max_error) {
      rep.max_error = err;
      rep.worst =
          what + "[" + std::to_string(i) + "]: analytic " + std::to_string(a) + " numeric " + std::to_string(n2);
    }
  }
}

// The cap on skipped points: more than o.max_skipped_fraction of the sampled ones is a failure.
void cap_skipped(const GradCheckOptions& o, GradCheckReport& rep) {
  const int sampled = rep.checked + rep.skipped_kinks;
  if (rep.skipped_kinks <= o.max_skipped_fraction * sampled) return;
  ++rep.failed;
  rep.worst = std::to_string(rep.skipped_kinks) + " of " + std::to_string(sampled) +
              " sampled points skipped as kinks, more than the cap of " + std::to_string(o.max_skipped_fraction) +
              " (worst checked: " + rep.worst + ")";
}

std::vector<float> host_vector(const Tensor& t) { return std::vector<float>(t.data(), t.data() + t.numel()); }

}  // namespace

std::vector<double> forward_on_cpu(Layer& layer, const Shape& in, const Shape& out, int64_t n,
                                   const std::vector<double>& x) {
  layer.setup(n, backend_for(Device::cpu()));
  const Tensor tx = to_tensor(x, Shape{n, in[0], in[1], in[2]});
  Tensor y(Shape{n, out[0], out[1], out[2]});
  layer.forward({&tx}, y, RunContext{false, 0, 0});
  return to_vec(y);
}

GradCheckReport check_layer(const LayerSpec& spec, const std::vector<Shape>& input_shapes, const GradCheckOptions& o,
                            const std::vector<DataFormat>& formats) {
  Backend& be = backend_for(Device::cpu());
  std::unique_ptr<Layer> layer = make_layer(spec);
  layer->set_input_formats(formats);
  Shape out_shape = layer->infer(input_shapes);
  Rng rng(o.seed);
  for (Param& p : layer->params()) {
    p.value = Tensor(p.shape);
    p.grad = Tensor(p.shape);
  }
  for (State& s : layer->states()) s.value = Tensor(s.shape);
  layer->init_params(rng);
  for (Param& p : layer->params()) {  // random values, not the initializer's (e.g. zero biases)
    fill_uniform(p.value, rng, 0.5, 0);
    if (p.name == "Scale")
      for (int64_t i = 0; i < p.value.numel(); ++i) p.value.data()[i] += 1.0f;
  }
  layer->setup(o.batch, be);

  std::vector<Tensor> xs;
  for (const Shape& s : input_shapes) {
    xs.emplace_back(batch_shape(o.batch, s));
    fill_uniform(xs.back(), rng, o.input_scale, o.kink_guard);
  }
  std::vector<const Tensor*> xp;
  for (auto& x : xs) xp.push_back(&x);
  Tensor y(batch_shape(o.batch, out_shape)), r(batch_shape(o.batch, out_shape));
  fill_uniform(r, rng, 1.0, 0);
  RunContext ctx{o.training, 7, 3};

  auto loss = [&]() {
    layer->forward(xp, y, ctx);
    double l = 0;
    for (int64_t i = 0; i < y.numel(); ++i) l += static_cast<double>(y.data()[i]) * r.data()[i];
    return l;
  };
  loss();
  Tensor dy = r.clone();
  std::vector<Tensor> dxs;
  std::vector<Tensor*> dxp;
  for (auto& x : xs) dxs.emplace_back(x.shape());
  for (auto& d : dxs) dxp.push_back(&d);
  layer->backward(xp, y, dy, dxp, ctx);

  GradCheckReport rep;
  for (size_t k = 0; k < xs.size(); ++k)
    check_tensor("input" + std::to_string(k), xs[k], host_vector(dxs[k]), loss, o, rng, rep);
  for (Param& p : layer->params()) {
    std::vector<float> g = host_vector(p.grad);
    check_tensor(p.name, p.value, g, loss, o, rng, rep);
  }
  cap_skipped(o, rep);
  return rep;
}

GradCheckReport check_network(const NetworkSpec& spec, const GradCheckOptions& o) {
  Network net(spec, Device::cpu());
  net.init_params(o.seed);
  net.set_batch(o.batch);
  Rng rng(o.seed + 1);
  Tensor x(batch_shape(o.batch, net.input_shape()));
  fill_uniform(x, rng, o.input_scale, 0);
  // One label per image, or per pixel of the output (a fraction of them undefined, -1);
  // regression: responses ~ U(-1, 1); multi-label: 0 or 1 per class.
  const Shape out = net.output_shape(net.size() - 1);
  Tensor labels;
  if (net.float_targets()) {
    labels = Tensor(Shape{o.batch, net.output_width()});
    const bool binary = net.loss_kind() == LossKind::kBinaryCrossEntropy;
    for (int64_t i = 0; i < labels.numel(); ++i)
      labels.data()[i] = binary ? static_cast<float>(rng.below(2)) : static_cast<float>(2 * rng.uniform() - 1);
  } else {
    labels = Tensor(net.per_pixel() ? Shape{o.batch, out[0], out[1]} : Shape{o.batch}, Device::cpu(), DType::kI32);
    for (int64_t i = 0; i < labels.numel(); ++i) {
      labels.data_i32()[i] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(net.num_classes())));
      if (net.per_pixel() && rng.uniform() < o.undefined_fraction) labels.data_i32()[i] = -1;
    }
  }
  RunContext ctx{o.training, 7, 3};
  auto loss = [&]() {
    net.forward(x, ctx);
    return net.loss_and_backward(labels, ctx, false, nullptr);
  };
  net.forward(x, ctx);
  net.loss_and_backward(labels, ctx, true, nullptr);
  std::vector<std::vector<float>> grads;  // copied before check_tensor reruns backward-free passes
  for (Param* p : net.params()) grads.push_back(host_vector(p->grad));
  GradCheckReport rep;
  size_t k = 0;
  for (Param* p : net.params()) check_tensor(p->name, p->value, grads[k++], loss, o, rng, rep);
  cap_skipped(o, rep);
  return rep;
}

}  // namespace dlt::test
