// The graph-API convolution plans of cudnn_conv_engines.h: tensor, convolution, operation and
// graph descriptors, heuristics (mode A; exhaustive: B and fallback too), every engine (exhaustive:
// with each knob varied), filtering by the engines' notes,
// finalizing, executing through a variant pack.
#include "backend/cuda/cudnn_conv_engines.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <set>

#include "backend/cuda/cuda_common.h"
#include "util/log.h"

// CUDNN_ATTR_EXECUTION_PLAN_HANDLE and CUDNN_ATTR_OPERATIONGRAPH_HANDLE are marked deprecated in
// cuDNN 9.x (in favour of device-property descriptors for building without a GPU) and remain the
// way to build plans for the handle's GPU; cuDNN 9.0-9.19 accept them.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace dlt::cuda {

// Non-copyable owner of one backend descriptor.
class BackendDesc {
 public:
  explicit BackendDesc(cudnnBackendDescriptorType_t type) { DLT_CUDNN(cudnnBackendCreateDescriptor(type, &d_)); }
  ~BackendDesc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  BackendDesc(const BackendDesc&) = delete;
  BackendDesc& operator=(const BackendDesc&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  const cudnnBackendDescriptor_t* ptr() const { return &d_; }
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* v) {
    DLT_CUDNN(cudnnBackendSetAttribute(d_, name, type, count, v));
  }
  void finalize() { DLT_CUDNN(cudnnBackendFinalize(d_)); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// Everything a plan refers to, kept alive as long as any plan of the graph lives.
struct ConvGraph {
  std::unique_ptr<BackendDesc> x, w, y, conv, op, graph;
};

namespace {

constexpr int64_t kUidX = 'x', kUidW = 'w', kUidY = 'y';

// A 4-d tensor with logical dims (d0, d1, d2, d3) = (N, C, H, W) or (K, C, kh, kw), stored
// channels last (NHWC / KRSC).
std::unique_ptr<BackendDesc> channels_last(int64_t uid, int64_t n, int64_t c, int64_t h, int64_t w,
                                           cudnnDataType_t dtype) {
  auto t = std::make_unique<BackendDesc>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const int64_t dims[4] = {n, c, h, w};
  const int64_t strides[4] = {h * w * c, 1, w * c, c};
  const int64_t alignment = 16;
  t->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dtype);
  t->set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
  t->set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
  t->set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  t->set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  t->finalize();
  return t;
}

std::shared_ptr<ConvGraph> build_graph(cudnnHandle_t handle, const ConvGeometry& g, ConvDirection dir) {
  auto cg = std::make_shared<ConvGraph>();
  cg->x = channels_last(kUidX, g.n, g.c, g.hx, g.wx, g.dtype);
  cg->w = channels_last(kUidW, g.k, g.c / g.groups, g.kh, g.kw, g.dtype);  // grouped: (K, C/G, kh, kw)
  cg->y = channels_last(kUidY, g.n, g.k, g.oh, g.ow, g.dtype);

  cg->conv = std::make_unique<BackendDesc>(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const int64_t spatial = 2;
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t pad[2] = {g.pad_h, g.pad_w}, stride[2] = {g.stride_h, g.stride_w},
                dilation[2] = {g.dilation_h, g.dilation_w};
  cg->conv->set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  cg->conv->set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  cg->conv->set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  cg->conv->set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  cg->conv->set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  cg->conv->set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation);
  cg->conv->set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride);
  cg->conv->finalize();

  // The operation of each direction and its attributes, in the order x, w, y (dx / dw / dy where
  // the direction writes or reads a gradient), convolution, alpha, beta.
  struct OpAttributes {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  };
  static constexpr OpAttributes kForward = {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  static constexpr OpAttributes kBackwardData = {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                                                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
  static constexpr OpAttributes kBackwardFilter = {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                                                   CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                                                   CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                                                   CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                                                   CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                                                   CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                                                   CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  const OpAttributes& at = dir == ConvDirection::kForward        ? kForward
                           : dir == ConvDirection::kBackwardData ? kBackwardData
                                                                 : kBackwardFilter;
  const float alpha = 1.f, beta = 0.f;
  cg->op = std::make_unique<BackendDesc>(at.type);
  cg->op->set(at.x, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, cg->x->ptr());
  cg->op->set(at.w, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, cg->w->ptr());
  cg->op->set(at.y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, cg->y->ptr());
  cg->op->set(at.conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, cg->conv->ptr());
  cg->op->set(at.alpha, CUDNN_TYPE_FLOAT, 1, &alpha);
  cg->op->set(at.beta, CUDNN_TYPE_FLOAT, 1, &beta);
  cg->op->finalize();

  cg->graph = std::make_unique<BackendDesc>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  cg->graph->set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  cg->graph->set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, cg->op->ptr());
  cg->graph->finalize();
  return cg;
}

// The engine configurations heuristics mode `mode` suggests for the graph (empty when the mode
// has none or refuses the graph).
std::vector<std::unique_ptr<BackendDesc>> heuristic_configs(const ConvGraph& cg, cudnnBackendHeurMode_t mode) {
  std::vector<std::unique_ptr<BackendDesc>> out;
  BackendDesc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, cg.graph->ptr());
  heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (cudnnBackendFinalize(heur.get()) != CUDNN_STATUS_SUCCESS) return out;
  int64_t count = 0;
  if (cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0)
    return out;
  std::vector<cudnnBackendDescriptor_t> raw(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    out.push_back(std::make_unique<BackendDesc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw[i] = out.back()->get();
  }
  int64_t got = 0;
  if (cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                               raw.data()) != CUDNN_STATUS_SUCCESS)
    return {};
  out.resize(static_cast<size_t>(std::clamp<int64_t>(got, 0, count)));
  return out;
}

// An engine configuration beside what it refers to: the engine descriptor (null for heuristics'
// configurations, which own theirs) and the knob choices it was built from (exhaustive search).
struct EngineConfig {
  std::vector<std::unique_ptr<BackendDesc>> choices;  // destroyed after the configuration
  std::unique_ptr<BackendDesc> engine, config;
};

// A configuration of every engine the graph supports, with the engine's default knobs (the
// engines heuristics rank low or leave out: cuDNN's own exhaustive search), each beside the
// engine descriptor it refers to.
std::vector<EngineConfig> every_engine_config(const ConvGraph& cg) {
  std::vector<EngineConfig> out;
  int64_t count = 0, got = 0;
  if (cudnnBackendGetAttribute(cg.graph->get(), CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1,
                               &got, &count) != CUDNN_STATUS_SUCCESS)
    return out;
  for (int64_t i = 0; i < count; ++i) {
    auto engine = std::make_unique<BackendDesc>(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    if (cudnnBackendSetAttribute(engine->get(), CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 cg.graph->ptr()) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendSetAttribute(engine->get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &i) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendFinalize(engine->get()) != CUDNN_STATUS_SUCCESS)
      continue;  // this engine does not support the graph
    auto config = std::make_unique<BackendDesc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    if (cudnnBackendSetAttribute(config->get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 engine->ptr()) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendFinalize(config->get()) != CUDNN_STATUS_SUCCESS)
      continue;
    out.push_back({{}, std::move(engine), std::move(config)});
  }
  return out;
}

// Up to CUDNN_KNOB_TYPE_COUNTS descriptors of `type` read from the array attribute `name` of d
// (as cudnn-frontend reads knob infos and choices: a fixed array, no count query first); empty
// when cuDNN does not say.
std::vector<std::unique_ptr<BackendDesc>> descriptor_array(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                                                           cudnnBackendDescriptorType_t type) {
  constexpr int64_t kMax = CUDNN_KNOB_TYPE_COUNTS;
  std::vector<std::unique_ptr<BackendDesc>> descs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < kMax; ++i) {
    descs.push_back(std::make_unique<BackendDesc>(type));
    raw.push_back(descs.back()->get());
  }
  int64_t got = 0;
  if (cudnnBackendGetAttribute(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, kMax, &got, raw.data()) != CUDNN_STATUS_SUCCESS)
    return {};
  descs.resize(static_cast<size_t>(std::clamp<int64_t>(got, 0, kMax)));
  return descs;
}

// One tunable parameter of an engine (tile size, split-k, swizzle, stages, ...): its type and
// the values it takes, min to max in steps of stride.
struct KnobInfo {
  cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_COUNTS;
  int64_t min = 0, max = 0, stride = 1;
};
std::vector<KnobInfo> engine_knobs(const BackendDesc& engine) {
  std::vector<KnobInfo> out;
  for (const auto& info :
       descriptor_array(engine.get(), CUDNN_ATTR_ENGINE_KNOB_INFO, CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR)) {
    KnobInfo k;
    int64_t n = 0;
    if (cudnnBackendGetAttribute(info->get(), CUDNN_ATTR_KNOB_INFO_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n, &k.type) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(info->get(), CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE, CUDNN_TYPE_INT64, 1, &n, &k.min) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(info->get(), CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE, CUDNN_TYPE_INT64, 1, &n, &k.max) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(info->get(), CUDNN_ATTR_KNOB_INFO_STRIDE, CUDNN_TYPE_INT64, 1, &n, &k.stride) !=
            CUDNN_STATUS_SUCCESS)
      continue;
    if (k.stride < 1 || k.max <= k.min) continue;  // one value: nothing to vary
    out.push_back(k);
  }
  return out;
}

// The knob types cudnn_graph.h marks CUDNN_DEPRECATED_ENUM (numbers: -Werror refuses the names).
// Exhaustive search never forces them: on the H200 (cuDNN 9.19), plans that finalized with one
// forced gave wrong results: USE_TEX = 1 on engine 1 (bfloat16 backward filter, 3x3) was 2.1
// (relative) from the double reference, SPLIT_K 18-22 on engine 47 (bfloat16 depthwise backward
// filter) 1.1e-2, five times the output's own rounding.
bool deprecated_knob(cudnnBackendKnobType_t type) {
  static constexpr int kDeprecated[] = {0, 3, 5, 6, 7, 8, 9, 10, 16, 19, 20, 21, 22, 26, 32};
  return std::find(std::begin(kDeprecated), std::end(kDeprecated), static_cast<int>(type)) != std::end(kDeprecated);
}

// CudnnEngines: exhaustive. For each engine the graph supports, configurations that set one knob
// to one of its values (at most kValuesPerKnob values of each), taken round-robin over the knobs
// (every knob's first value, then every knob's second, ...) up to kVariantsPerEngine per engine:
// the tile shapes and split-k choices heuristics and the default knobs do not reach (PyTorch
// 2.11's forward on ResNet-18's 32x32 layers runs a 256x64 tile we did not time;
// docs/performance.md). cuDNN rejects the combinations an engine cannot run when the
// configuration or its plan is finalized. Engines in the order `first` names them (those the
// heuristics rank high), then the others by index. *knobs counts the knobs seen (debug log).
std::vector<EngineConfig> knob_variants(const ConvGraph& cg, const std::vector<int64_t>& first, int64_t* knobs) {
  constexpr int64_t kValuesPerKnob = 24, kVariantsPerEngine = 48;
  std::vector<EngineConfig> out;
  int64_t count = 0, got = 0;
  if (cudnnBackendGetAttribute(cg.graph->get(), CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1,
                               &got, &count) != CUDNN_STATUS_SUCCESS)
    return out;
  std::vector<int64_t> order;
  for (int64_t i : first)
    if (i >= 0 && i < count && std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  for (int64_t i = 0; i < count; ++i)
    if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  for (int64_t i : order) {
    BackendDesc probe(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    if (cudnnBackendSetAttribute(probe.get(), CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 cg.graph->ptr()) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendSetAttribute(probe.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &i) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendFinalize(probe.get()) != CUDNN_STATUS_SUCCESS)
      continue;
    const std::vector<KnobInfo> ks = engine_knobs(probe);
    *knobs += static_cast<int64_t>(ks.size());
    int64_t made = 0;
    for (int64_t step = 0; step < kValuesPerKnob && made < kVariantsPerEngine; ++step) {
      bool any = false;
      for (const KnobInfo& k : ks) {
        if (made >= kVariantsPerEngine) break;
        const int64_t v = k.min + step * k.stride;
        if (v > k.max) continue;
        if (deprecated_knob(k.type)) continue;
        any = true;
        // Each configuration refers to its own engine descriptor (a plan keeps both alive).
        auto choice = std::make_unique<BackendDesc>(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
        auto engine = std::make_unique<BackendDesc>(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
        auto config = std::make_unique<BackendDesc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
        if (cudnnBackendSetAttribute(engine->get(), CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                     cg.graph->ptr()) != CUDNN_STATUS_SUCCESS ||
            cudnnBackendSetAttribute(engine->get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &i) !=
                CUDNN_STATUS_SUCCESS ||
            cudnnBackendFinalize(engine->get()) != CUDNN_STATUS_SUCCESS ||
            cudnnBackendSetAttribute(choice->get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
                                     &k.type) != CUDNN_STATUS_SUCCESS ||
            cudnnBackendSetAttribute(choice->get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &v) !=
                CUDNN_STATUS_SUCCESS ||
            cudnnBackendFinalize(choice->get()) != CUDNN_STATUS_SUCCESS ||
            cudnnBackendSetAttribute(config->get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                     engine->ptr()) != CUDNN_STATUS_SUCCESS ||
            cudnnBackendSetAttribute(config->get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                     choice->ptr()) != CUDNN_STATUS_SUCCESS ||
            cudnnBackendFinalize(config->get()) != CUDNN_STATUS_SUCCESS)
          continue;
        EngineConfig c;
        c.choices.push_back(std::move(choice));
        c.engine = std::move(engine);
        c.config = std::move(config);
        out.push_back(std::move(c));
        ++made;
      }
      if (!any) break;  // every knob's values used up
    }
  }
  return out;
}

// What tells two configurations apart: the engine's global index and every knob choice
// ("28:3=1,7=2,"); "" when cuDNN does not say (never taken for a duplicate).
std::string config_key(const BackendDesc& cfg, int64_t engine_index) {
  std::vector<std::pair<int64_t, int64_t>> kv;
  for (const auto& choice :
       descriptor_array(cfg.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR)) {
    cudnnBackendKnobType_t type{};
    int64_t value = 0, n = 0;
    if (cudnnBackendGetAttribute(choice->get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n, &type) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(choice->get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &n, &value) !=
            CUDNN_STATUS_SUCCESS)
      return "";
    kv.emplace_back(static_cast<int64_t>(type), value);
  }
  std::sort(kv.begin(), kv.end());
  std::string key = std::to_string(engine_index) + ":";
  for (const auto& [t, v] : kv) key += std::to_string(t) + "=" + std::to_string(v) + ",";
  return key;
}

// The engine of a configuration: its global index and notes. False when cuDNN does not say.
struct EngineInfo {
  int64_t index = -1;
  std::vector<cudnnBackendNumericalNote_t> numerical;
  std::vector<cudnnBackendBehaviorNote_t> behavior;
};
bool engine_info(const BackendDesc& cfg, EngineInfo* info) {
  BackendDesc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t got = 0;
  if (cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &e) !=
      CUDNN_STATUS_SUCCESS)
    return false;
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got, &info->index) !=
      CUDNN_STATUS_SUCCESS)
    return false;
  cudnnBackendNumericalNote_t num[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &got, num) != CUDNN_STATUS_SUCCESS)
    return false;
  info->numerical.assign(num, num + std::clamp<int64_t>(got, 0, CUDNN_NUMERICAL_NOTE_TYPE_COUNT));
  cudnnBackendBehaviorNote_t beh[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &got, beh) != CUDNN_STATUS_SUCCESS)
    return false;
  info->behavior.assign(beh, beh + std::clamp<int64_t>(got, 0, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT));
  return true;
}

template <class T>
bool has(const std::vector<T>& v, T x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Whether the switches allow the engine, with its notes in words for the debug log.
bool allowed(const EngineInfo& e, const ConvGeometry& g, ConvDirection dir, const PlanSearch& search,
             std::string* notes) {
  const bool fp32 = g.dtype == CUDNN_DATA_FLOAT;
  if (fp32 && dir == ConvDirection::kBackwardFilter && e.index == kImpreciseFloatWgradEngine &&
      !search.imprecise_float_wgrad)
    return false;
  const bool tensor = has(e.numerical, CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
  if (fp32 && !search.tf32 && (tensor || has(e.numerical, CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS))) return false;
  const bool reduced = has(e.numerical, CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION);
  if (reduced && (fp32 || !search.reduced_precision_reduction)) return false;
  const bool deterministic = search.deterministic;
  const bool nondet = has(e.numerical, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC);
  if (deterministic && nondet) return false;
  const bool compiled = has(e.behavior, CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION);
  if (compiled && !search.runtime_compiled) return false;
  *notes = tensor ? "tensor-op" : "fma";
  if (compiled) *notes += ", runtime-compiled";
  if (has(e.numerical, CUDNN_NUMERICAL_NOTE_FFT)) *notes += ", fft";
  if (has(e.numerical, CUDNN_NUMERICAL_NOTE_WINOGRAD)) *notes += ", winograd";
  *notes += nondet ? ", non-deterministic" : ", deterministic";
  if (reduced) *notes += ", reduced-precision reduction";
  return true;
}

}  // namespace

ConvPlan::ConvPlan(std::shared_ptr<ConvGraph> graph, std::unique_ptr<BackendDesc> engine,
                   std::unique_ptr<BackendDesc> config, std::vector<std::unique_ptr<BackendDesc>> choices,
                   std::unique_ptr<BackendDesc> plan, int64_t index, size_t workspace, std::string notes)
    : graph_(std::move(graph)),
      engine_desc_(std::move(engine)),
      choices_(std::move(choices)),
      config_(std::move(config)),
      plan_(std::move(plan)),
      engine_(index),
      workspace_(workspace),
      notes_(std::move(notes)) {}

ConvPlan::~ConvPlan() = default;

std::string ConvPlan::describe() const { return "engine " + std::to_string(engine_) + " (" + notes_ + ")"; }

cudnnStatus_t ConvPlan::execute(cudnnHandle_t handle, void* x, void* w, void* y, void* workspace) const {
  cudnnBackendDescriptor_t pack = nullptr;
  cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  void* ptrs[3] = {x, w, y};
  const int64_t uids[3] = {kUidX, kUidW, kUidY};
  if ((s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs)) ==
          CUDNN_STATUS_SUCCESS &&
      (s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids)) ==
          CUDNN_STATUS_SUCCESS &&
      (s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace)) ==
          CUDNN_STATUS_SUCCESS &&
      (s = cudnnBackendFinalize(pack)) == CUDNN_STATUS_SUCCESS)
    s = cudnnBackendExecute(handle, plan_->get(), pack);
  cudnnBackendDestroyDescriptor(pack);
  return s;
}

std::vector<std::shared_ptr<const ConvPlan>> conv_plans(cudnnHandle_t handle, const ConvGeometry& g, ConvDirection dir,
                                                        const PlanSearch& search) {
  std::vector<std::shared_ptr<const ConvPlan>> plans;
  std::shared_ptr<ConvGraph> cg;
  try {
    cg = build_graph(handle, g, dir);
  } catch (const DeviceError& e) {  // the graph API refuses the problem: legacy algorithms only
    log::debug("cuDNN graph API: no convolution graph ({})", e.what());
    return plans;
  }
  // Mode A's configurations (heuristic knobs) first; exhaustive: mode B's and the fallback
  // mode's; then, unless heuristics only, every engine with its default knobs; exhaustive: every
  // engine with one knob changed. Exhaustive drops repeated configurations (same engine, same
  // knob choices).
  std::vector<EngineConfig> candidates;
  std::vector<cudnnBackendHeurMode_t> modes = {CUDNN_HEUR_MODE_A};
  if (search.exhaustive) modes.insert(modes.end(), {CUDNN_HEUR_MODE_B, CUDNN_HEUR_MODE_FALLBACK});
  std::string counts;  // exhaustive's debug line: how many candidates each source gave
  for (cudnnBackendHeurMode_t mode : modes) {
    const size_t before = candidates.size();
    for (std::unique_ptr<BackendDesc>& c : heuristic_configs(*cg, mode))
      candidates.push_back({{}, nullptr, std::move(c)});
    counts += std::string(mode == CUDNN_HEUR_MODE_A   ? "mode A "
                          : mode == CUDNN_HEUR_MODE_B ? ", mode B "
                                                      : ", fallback ") +
              std::to_string(candidates.size() - before);
  }
  if (!search.heuristics_only) {
    const size_t before = candidates.size();
    for (EngineConfig& c : every_engine_config(*cg)) candidates.push_back(std::move(c));
    counts += ", engines " + std::to_string(candidates.size() - before);
  }
  if (search.exhaustive && !search.heuristics_only) {
    const size_t before = candidates.size();
    std::vector<int64_t> ranked;  // the engines of the heuristics' configurations, in their order
    for (const EngineConfig& c : candidates) {
      EngineInfo info;
      if (engine_info(*c.config, &info)) ranked.push_back(info.index);
    }
    int64_t knobs = 0;
    for (EngineConfig& c : knob_variants(*cg, ranked, &knobs)) candidates.push_back(std::move(c));
    counts +=
        ", knob variants " + std::to_string(candidates.size() - before) + " over " + std::to_string(knobs) + " knobs";
  }
  // Exhaustive: at most 3 plan finalizations per plan wanted (each costs host time, and a
  // bfloat16 problem admits nearly every engine).
  const int max_attempts = search.exhaustive ? 3 * search.max_plans : std::numeric_limits<int>::max();
  int attempts = 0, distinct = 0, compiled = 0;
  std::set<std::string> seen;
  for (EngineConfig& cand : candidates) {
    if (static_cast<int>(plans.size()) >= search.max_plans || attempts >= max_attempts) break;
    EngineInfo info;
    std::string notes;
    if (!engine_info(*cand.config, &info) || !allowed(info, g, dir, search, &notes)) continue;
    const bool runtime_compiled = has(info.behavior, CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION);
    if (runtime_compiled && compiled >= PlanSearch::kMaxRuntimeCompiled) continue;  // each costs a compilation
    if (search.exhaustive) {
      const std::string key = config_key(*cand.config, info.index);
      if (!key.empty() && !seen.insert(key).second) continue;
      if (key.size() > key.find(':') + 1) notes += ", knobs " + key.substr(key.find(':') + 1);
    }
    ++distinct;
    ++attempts;
    auto plan = std::make_unique<BackendDesc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    if (cudnnBackendSetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendSetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 cand.config->ptr()) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendFinalize(plan->get()) != CUDNN_STATUS_SUCCESS)
      continue;  // this configuration does not support the problem
    int64_t ws = 0, got = 0;
    if (cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got,
                                 &ws) != CUDNN_STATUS_SUCCESS ||
        ws < 0 || static_cast<size_t>(ws) > search.workspace_limit)
      continue;
    compiled += runtime_compiled;
    plans.push_back(std::make_shared<ConvPlan>(cg, std::move(cand.engine), std::move(cand.config),
                                               std::move(cand.choices), std::move(plan), info.index,
                                               static_cast<size_t>(ws), notes));
  }
  if (search.exhaustive)
    log::debug("cuDNN graph API, exhaustive: candidates {}; {} allowed and distinct tried, {} plans", counts, distinct,
               plans.size());
  return plans;
}

float best_time_ms(cudaStream_t stream, const std::function<cudnnStatus_t()>& run, float cutoff_ms) {
  constexpr float kFailed = std::numeric_limits<float>::infinity();
  if (run() != CUDNN_STATUS_SUCCESS) return kFailed;  // untimed: loads the kernels
  cudaEvent_t start = nullptr, stop = nullptr;
  DLT_CUDA(cudaEventCreate(&start));
  DLT_CUDA(cudaEventCreate(&stop));
  float best = kFailed;
  for (int r = 0; r < 3; ++r) {
    DLT_CUDA(cudaEventRecord(start, stream));
    const cudnnStatus_t s = run();
    DLT_CUDA(cudaEventRecord(stop, stream));
    DLT_CUDA(cudaEventSynchronize(stop));
    float ms = 0.f;
    DLT_CUDA(cudaEventElapsedTime(&ms, start, stop));
    if (s != CUDNN_STATUS_SUCCESS) {
      best = kFailed;
      break;
    }
    best = std::min(best, ms);
    if (best > cutoff_ms) break;  // far behind: no need to know by how much
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

}  // namespace dlt::cuda
