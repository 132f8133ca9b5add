// The attention of selfAttention and windowAttention (attention_core.h).
#include "layers/attention_core.h"

#include <cmath>
#include <string>

#include "layers/layer_util.h"

namespace dlt {

namespace {
const char* const kMixNames[4] = {"ScoreMixWeights", "ScoreMixBias", "ProbabilityMixWeights", "ProbabilityMixBias"};
}  // namespace

TalkingHeads::TalkingHeads(const LayerSpec& spec) : on_(spec.get_bool("TalkingHeads", false)) {
  if (!on_) return;
  pairs_ = spec.get_bool("ProbabilityMixBiasPerPair", false);
  for (int i = 0; i < 4; ++i)
    templates_[i] = make_param(spec, kMixNames[i], Shape{}, i % 2 ? Init::kZeros : Init::kIdentity, i % 2 ? 0.f : 1.f);
}

void TalkingHeads::add_params(std::vector<Param>& params, int64_t heads, int64_t seq_q, int64_t seq_kv) const {
  if (!on_) return;
  for (int i = 0; i < 4; ++i) {
    Param p = templates_[i];
    p.shape = i % 2 == 0 ? Shape{heads, heads} : i == 3 && pairs_ ? Shape{heads, seq_q, seq_kv} : Shape{heads};
    p.fan_in = p.fan_out = heads;
    params.push_back(p);
  }
}

void TalkingHeads::set(AttentionOp& op, const Param* p) const {
  op.set_head_mix(p[0].value, p[1].value, p[2].value, p[3].value);
}

HeadMixGrads TalkingHeads::grads(Param* p) const {
  HeadMixGrads g;
  for (int m = 0; m < 2; ++m) {
    g.weights[m] = p[2 * m].frozen() ? nullptr : &p[2 * m].grad;
    g.bias[m] = p[2 * m + 1].frozen() ? nullptr : &p[2 * m + 1].grad;
  }
  return g;
}

std::vector<float> TalkingHeads::packed(const Param* p) {
  std::vector<float> all;
  for (int i = 0; i < 4; ++i) {
    const std::vector<float> v = host_values(p[i].value);
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

std::vector<std::string> TalkingHeads::names() { return {kMixNames, kMixNames + 4}; }

Rotary::Rotary(const LayerSpec& spec) {
  const std::string mode = spec.get_choice("RotaryEmbedding", "none", {"none", "interleaved", "half"});
  on_ = mode != "none";
  if (!on_) {
    for (const char* o : {"RotaryPrefixTokens", "RotaryBase", "RotaryGrid", "RotaryPerHead"})
      if (spec.has(o))
        throw ConfigError(spec.where() + "option " + o + " needs RotaryEmbedding interleaved or half (it is none)");
    return;
  }
  half_ = mode == "half";
  prefix_ = spec.get_int("RotaryPrefixTokens", 0, 0);
  per_head_ = spec.get_bool("RotaryPerHead", false);
  base_ = spec.get_double("RotaryBase", 10000.0);
  if (!(base_ > 1.0) || !std::isfinite(base_))
    throw ConfigError(spec.where() + "option RotaryBase must be a number above 1");
  if (spec.has("RotaryGrid")) grid_ = spec.get_ints("RotaryGrid", {}, 2, 1);
}

void Rotary::add_states(std::vector<State>& states, const LayerSpec& spec, int64_t seq, int64_t heads,
                        int64_t key_dim) const {
  if (!on_) return;
  const int64_t tokens = seq - prefix_;
  if (tokens < 1)
    throw ConfigError(spec.where() + "RotaryPrefixTokens (" + std::to_string(prefix_) + ") leaves no token of " +
                      std::to_string(seq) + " to rotate");
  if (key_dim % 2 != 0)
    throw ConfigError(spec.where() + "RotaryEmbedding rotates pairs of channels: each head's " +
                      std::to_string(key_dim) + " key channels must be even");
  if (!grid_.empty() && (grid_[0] * grid_[1] != tokens || key_dim % 4 != 0))
    throw ConfigError(spec.where() + "RotaryGrid [" + std::to_string(grid_[0]) + " " + std::to_string(grid_[1]) +
                      "] must cover the " + std::to_string(tokens) +
                      " rotated tokens, with each head's key channels a multiple of 4 (they are " +
                      std::to_string(key_dim) + ")");
  for (const char* name : {"RotaryCos", "RotarySin"})
    states.push_back(State{name, per_head_ ? Shape{heads, tokens, key_dim / 2} : Shape{tokens, key_dim / 2}, 0.f, {}});
}

void Rotary::fill(State* s) const {
  const Shape& sh = s[0].shape;
  const int64_t tokens = sh[sh.rank() - 2], pairs = sh[sh.rank() - 1], tables = sh.numel() / (tokens * pairs);
  Tensor c(s[0].shape), sn(s[1].shape);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t i = 0; i < pairs; ++i) {
      double angle;
      if (grid_.empty()) {
        angle =
            static_cast<double>(t) * std::pow(base_, -2.0 * static_cast<double>(i) / static_cast<double>(2 * pairs));
      } else {
        const int64_t q = pairs / 2, pos = i < q ? t / grid_[1] : t % grid_[1];
        angle = static_cast<double>(pos) * std::pow(base_, -static_cast<double>(i % q) / static_cast<double>(q));
      }
      for (int64_t h = 0; h < tables; ++h) {
        c.data()[(h * tokens + t) * pairs + i] = static_cast<float>(std::cos(angle));
        sn.data()[(h * tokens + t) * pairs + i] = static_cast<float>(std::sin(angle));
      }
    }
  s[0].value.copy_from(c);
  s[1].value.copy_from(sn);
}

void AttentionCore::add_params(std::vector<Param>& params, const Param& weight, const Param& bias,
                               const AttentionSizes& s) {
  // (name, rows, columns) of each projection's weights; its bias has `rows` values.
  const struct {
    const char* name;
    int64_t rows, cols;
  } proj[] = {{"Query", s.key, s.c}, {"Key", s.key, s.c}, {"Value", s.value, s.c}, {"Output", s.out, s.value}};
  const size_t first = s.query_input ? 1 : 0;  // no query projection
  for (size_t i = first; i < 4; ++i) {
    const auto& p = proj[i];
    Param w = weight;
    w.name = std::string(p.name) + "Weights";
    w.shape = Shape{p.rows, p.cols};
    w.fan_in = p.cols;
    w.fan_out = p.rows;
    params.push_back(w);
  }
  for (size_t i = first; i < 4; ++i) {
    const auto& p = proj[i];
    Param b = bias;
    b.name = std::string(p.name) + "Bias";
    b.shape = Shape{p.rows};
    b.fan_in = p.cols;
    b.fan_out = p.rows;
    params.push_back(b);
  }
}

void AttentionCore::setup(Backend& be, const AttentionSizes& s, int64_t sequences, int64_t seq, bool causal,
                          float dropout, int64_t bias_n, bool mixed, bool cosine, const TalkingHeads* talking,
                          const Rotary* rotary) {
  be_ = &be;
  query_input_ = s.query_input;
  const int64_t rows = sequences * seq;
  fc_[0] = query_input_ ? nullptr : be.make(FcDesc{rows, s.c, s.key, false, mixed});
  fc_[1] = be.make(FcDesc{rows, s.c, s.key, false, mixed});
  fc_[2] = be.make(FcDesc{rows, s.c, s.value, false, mixed});
  fc_[3] = be.make(FcDesc{rows, s.value, s.out, false, mixed});
  AttentionDesc d;
  d.n = sequences;
  d.heads = s.heads;
  d.seq_q = d.seq_kv = seq;
  d.key_dim = s.key / s.heads;
  d.value_dim = s.value / s.heads;
  d.causal = causal;
  d.dropout = dropout;
  d.bias_n = bias_n;
  d.talking_heads = talking && talking->on();
  d.pair_probs_bias = talking && talking->pair_bias();
  if (cosine) d.scale = 1.f;
  attention_ = be.make(d);
  const int64_t width[4] = {s.key, s.key, s.value, s.value};  // Q, K, V, A
  for (int i = 0; i < 4; ++i) act_[i] = Tensor(Shape{rows, width[i]}, be.device());
  // dA takes A's place once the output projection's weight gradient has read A; dK and dV take
  // K's and V's (the attention's backward reads each first, attention_op.h), and dx's parts
  // take dA's once the attention's backward has read it (when their sizes agree).
  grad_[0] = Tensor(Shape{rows, width[0]}, be.device());
  grad_[1] = act_[1];
  grad_[2] = act_[2];
  grad_[3] = act_[3];
  dx_part_ = s.value == s.c ? act_[3] : Tensor(Shape{rows, s.c}, be.device());
  norm_[0].reset();
  norm_[1].reset();
  rotary_.reset();
  DLT_CHECK(!(cosine && rotary && rotary->on()), "attention: cosine attention with a rotary embedding");
  if (rotary && rotary->on())
    rotary_ = be.make(RotaryDesc{sequences, seq, s.heads, s.key / s.heads, rotary->prefix(), rotary->half(),
                                 rotary->per_head() ? s.heads : 1});
  if (!cosine) return;
  // dK takes the normalized K's place, the raw K's gradient the raw K's (head normalize may
  // write dx over x).
  for (int i = 0; i < 2; ++i) {
    norm_[i] = be.make(HeadNormalizeDesc{rows, s.heads, s.key / s.heads});
    unit_[i] = Tensor(Shape{rows, s.key}, be.device());
  }
  grad_[1] = act_[1];
}

void AttentionCore::forward(const Tensor& x, Tensor& y, Param* params, bool dropout, uint64_t dropout_key,
                            const Param* logit) {
  for (int i = first(); i < 3; ++i) fc_[i]->forward(x, weight(params, i).value, bias(params, i).value, act_[i]);
  if (rotary_) {  // Q and K rotated in place: the attention's backward reads them so
    DLT_CHECK(rot_cos_ && rot_sin_, "attention: a rotary embedding without its tables (set_rotary)");
    for (int i = 0; i < 2; ++i) rotary_->forward(act_[i], *rot_cos_, *rot_sin_, act_[i]);
  }
  const bool cosine = norm_[0] != nullptr;
  if (cosine) {
    DLT_CHECK(logit, "attention: cosine attention without its logit scale");
    norm_[0]->forward(act_[0], logit->value, unit_[0]);
    norm_[1]->forward(act_[1], Tensor(), unit_[1]);
  }
  const Tensor& q = cosine ? unit_[0] : act_[0];
  const Tensor& k = cosine ? unit_[1] : act_[1];
  if (dropout)
    attention_->forward_dropout(q, k, act_[2], act_[3], dropout_key);
  else
    attention_->forward(q, k, act_[2], act_[3]);
  fc_[3]->forward(act_[3], weight(params, 3).value, bias(params, 3).value, y);
}

void AttentionCore::backward(const Tensor& x, Tensor& dy, Tensor* dx, Param* params, Tensor* dbias, Param* logit,
                             const HeadMixGrads* dmix) {
  update_grads(3, act_[3], dy, params);
  fc_[3]->backward_data(dy, weight(params, 3).value, grad_[3]);  // over A, read for the last time above
  if (norm_[0]) {
    // dQ' and dK' of the normalized ones (dK' over K'), then through the normalization.
    attention_->backward(unit_[0], unit_[1], act_[2], grad_[3], grad_[0], unit_[1], grad_[2], dbias, dmix);
    norm_[1]->backward(act_[1], Tensor(), unit_[1], grad_[1], nullptr);
    norm_[0]->backward(act_[0], logit->value, grad_[0], grad_[0], logit->frozen() ? nullptr : &logit->grad);
  } else {
    attention_->backward(act_[0], act_[1], act_[2], grad_[3], grad_[0], grad_[1], grad_[2], dbias, dmix);
    if (rotary_)  // the rotated Q's and K's gradients rotated back, in place
      for (int i = 0; i < 2; ++i) rotary_->backward(grad_[i], *rot_cos_, *rot_sin_, grad_[i]);
  }
  for (int i = first(); i < 3; ++i) update_grads(i, x, grad_[i], params);
  if (!dx) return;
  // dx = dQ Wq + dK Wk + dV Wv (without the first term with query_input)
  fc_[first()]->backward_data(grad_[first()], weight(params, first()).value, *dx);
  for (int i = first() + 1; i < 3; ++i) {
    fc_[i]->backward_data(grad_[i], weight(params, i).value, dx_part_);
    be_->axpby(1.f, dx_part_, 1.f, *dx);
  }
}

// Projection i's weight and bias gradients from its input and its output's gradient.
void AttentionCore::update_grads(int i, const Tensor& in, const Tensor& g, Param* params) {
  Param& w = weight(params, i);
  Param& b = bias(params, i);
  if (!w.frozen() || !b.frozen()) fc_[i]->backward_weights(in, g, w.grad, b.grad);
}

}  // namespace dlt
