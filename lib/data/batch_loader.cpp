// BatchLoader: epoch order, rank shards, per-image pipeline (cache -> decode -> resize/crop ->
// augment -> float) on a ThreadPool, and the producer thread that keeps a bounded queue full.
#include "data/batch_loader.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <string>

#include "data/decode.h"
#include "data/image_cache.h"
#include "data/transform.h"
#include "util/error.h"
#include "util/log.h"
#include "util/rng.h"

namespace dlt {

namespace {
constexpr int kQueueDepth = 3;  // batches prepared ahead of the consumer
constexpr uint64_t kShuffleStream = 0x5348554646ULL;

// A bad image's error as a skip warning: the advice to set OnBadImage: skip, which is set,
// becomes what skipping means and how to use the image instead.
std::string skip_message(std::string what) {
  const std::string advice = kBadImageAdvice;
  const size_t at = what.rfind(advice);
  if (at != std::string::npos && at + advice.size() == what.size()) what.erase(at);
  return what + " (OnBadImage: skip leaves it out; replace the file to use it)";
}
}  // namespace

struct BatchLoader::Scratch {
  Image decoded, base, work, tmp;
  Image label_decoded, label_base, label_work;  // segmentation
  int source_height = 0, source_width = 0;      // the decoded image's size
};

int64_t memory_cache_limit() {
  const int64_t four_gib = int64_t(4) << 30;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return four_gib;
  return std::min(four_gib, int64_t(pages) * page / 4);
}

LoaderOptions loader_options(const DataOptions& data, const TrainingOptions& training, const Shape& input,
                             bool for_training) {
  LoaderOptions o;
  o.input = input;
  o.batch_size = training.mini_batch_size;
  o.shuffle = for_training ? training.shuffle : Shuffle::kNever;
  o.drop_last = for_training;
  o.training = for_training;
  o.seed = training.seed;
  o.worker_load = training.worker_load;
  o.threads = static_cast<int>(data.loader_threads);
  o.background = training.dispatch_in_background;
  o.cache = data.cache;
  o.on_bad_image = data.on_bad_image;
  o.output_size_mode = data.output_size_mode;
  o.augment = data.augment;
  return o;
}

std::vector<int64_t> BatchLoader::shares(int64_t batch, int world_size, const std::vector<double>& load) {
  std::vector<int64_t> out(world_size, 0);
  if (load.empty()) {
    for (int r = 0; r < world_size; ++r) out[r] = batch / world_size + (r < batch % world_size);
    return out;
  }
  const double total = std::accumulate(load.begin(), load.end(), 0.0);
  std::vector<std::pair<double, int>> rest;
  int64_t given = 0;
  for (int r = 0; r < world_size; ++r) {
    const double exact = batch * load[r] / total;
    out[r] = static_cast<int64_t>(std::floor(exact));
    given += out[r];
    rest.push_back({exact - double(out[r]), r});
  }
  std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int64_t k = 0; given < batch; ++k, ++given) ++out[rest[k % world_size].second];
  return out;
}

BatchLoader::BatchLoader(const ImageDatastore& datastore, LoaderOptions options)
    : ds_(datastore), opt_(std::move(options)) {
  const Shape& in = opt_.input;
  if (in.rank() != 3 || in[0] <= 0 || in[1] <= 0 || (in[2] != 1 && in[2] != 3))
    throw ConfigError("data loader: InputSize " + in.str() + " must be HxWx1 or HxWx3 (grey or RGB images)");
  if (opt_.batch_size <= 0) throw ConfigError("MiniBatchSize " + std::to_string(opt_.batch_size) + " must be positive");
  if (opt_.world_size < 1 || opt_.rank < 0 || opt_.rank >= opt_.world_size)
    throw ConfigError("data loader: rank " + std::to_string(opt_.rank) + " outside world of " +
                      std::to_string(opt_.world_size));
  if (!opt_.worker_load.empty()) {
    double total = 0;
    for (double w : opt_.worker_load) {
      if (!(w >= 0)) throw ConfigError("WorkerLoad entries must be >= 0");
      total += w;
    }
    if (int(opt_.worker_load.size()) != opt_.world_size || total <= 0)
      throw ConfigError("WorkerLoad has " + std::to_string(opt_.worker_load.size()) + " entries for " +
                        std::to_string(opt_.world_size) + " workers (give one positive share per worker)");
  }
  const int64_t n = ds_.size();
  batch_ = opt_.drop_last ? std::min(opt_.batch_size, std::max<int64_t>(n, 1)) : opt_.batch_size;
  num_batches_ = opt_.drop_last ? n / batch_ : (n + batch_ - 1) / batch_;
  full_share_ = shares(batch_, opt_.world_size, opt_.worker_load);
  const int64_t last = n - (num_batches_ - 1) * batch_;
  last_share_ = shares(num_batches_ > 0 ? std::min(last, batch_) : 0, opt_.world_size, opt_.worker_load);
  bad_.reset(new std::atomic<uint8_t>[std::max<int64_t>(n, 1)]);
  for (int64_t i = 0; i < n; ++i) bad_[i].store(0, std::memory_order_relaxed);
  pool_ = std::make_unique<ThreadPool>(opt_.threads, "dlt-decode");
  for (int w = 0; w < pool_->size(); ++w) scratch_.push_back(std::make_unique<Scratch>());
  free_.reserve(kQueueDepth + 1);
  ready_.reserve(kQueueDepth + 1);
  for (int k = 0; k < kQueueDepth; ++k) free_.push_back(std::make_unique<Batch>());
  setup_cache();
}

BatchLoader::~BatchLoader() { stop_producer(); }

void BatchLoader::setup_cache() {
  namespace fs = std::filesystem;
  const int64_t n = ds_.size();
  const int64_t c = opt_.input[2];
  int64_t bytes = n * opt_.input[0] * opt_.input[1] * c;
  if (opt_.output_size_mode != OutputSizeMode::kResize && n > 0) {  // full images: estimate from a sample
    int64_t sum = 0, k = 0;
    for (int64_t i = 0; i < n && k < 16; i += std::max<int64_t>(1, n / 16), ++k) {
      int h = 0, w = 0;
      try {
        image_size(ds_.path(i), h, w);
      } catch (const DataError&) {
      }
      sum += int64_t(h) * w * c;
    }
    bytes = k ? sum / k * n : 0;
  }
  ImageCache::Kind kind = ImageCache::Kind::kNone;
  switch (opt_.cache) {
    case Cache::kMemory:
      kind = ImageCache::Kind::kMemory;
      break;
    case Cache::kFile:
      kind = ImageCache::Kind::kFile;
      break;
    case Cache::kAuto:
      kind = bytes <= memory_cache_limit() ? ImageCache::Kind::kMemory : ImageCache::Kind::kFile;
      break;
    case Cache::kNone:
      break;
  }
  std::string dir;
  if (kind == ImageCache::Kind::kFile) {
    dir = ds_.root();
    if (dir.empty() || ::access(dir.c_str(), W_OK) != 0) dir = fs::temp_directory_path().string();
  }
  const std::string geometry = opt_.input.str() + "/" + to_string(opt_.output_size_mode);
  const uint64_t key = kind == ImageCache::Kind::kFile ? cache_key(ds_.paths(), geometry) : 0;
  cache_ = std::make_unique<ImageCache>(kind, n, key, dir);
  // Label images: one byte per pixel at the same geometry, cached the same way.
  const uint64_t label_key = ds_.has_pixel_labels() && kind == ImageCache::Kind::kFile
                                 ? cache_key(ds_.label_paths(), geometry + "/labels/" + ds_.pixel_ids().key())
                                 : 0;
  label_cache_ =
      std::make_unique<ImageCache>(ds_.has_pixel_labels() ? kind : ImageCache::Kind::kNone, n, label_key, dir);
  if (kind != ImageCache::Kind::kNone)
    log::debug("image cache: {} ({} MiB estimated){}", cache_kind(), bytes >> 20,
               cache_->file_path().empty() ? "" : " at " + cache_->file_path());
}

std::string BatchLoader::cache_kind() const {
  switch (cache_->kind()) {
    case ImageCache::Kind::kMemory:
      return "memory";
    case ImageCache::Kind::kFile:
      return "file";
    default:
      return "none";
  }
}
std::string BatchLoader::cache_file() const { return cache_->file_path(); }
int64_t BatchLoader::skipped_images() const { return skipped_.load(); }
int64_t BatchLoader::decoded_images() const { return decoded_.load(); }

void BatchLoader::make_order(int64_t epoch) {
  const int64_t n = ds_.size();
  auto permutation = [n](uint64_t seed, uint64_t id) {
    std::vector<int64_t> p(n);
    std::iota(p.begin(), p.end(), 0);
    Rng rng = Rng::derive(seed, {kShuffleStream, id});
    for (int64_t k = n; k > 1; --k) std::swap(p[k - 1], p[rng.below(uint64_t(k))]);
    return p;
  };
  if (opt_.shuffle == Shuffle::kNever) {
    order_.resize(n);
    std::iota(order_.begin(), order_.end(), 0);
  } else if (opt_.shuffle == Shuffle::kOnce) {
    if (once_order_.empty()) once_order_ = permutation(opt_.seed, 0);
    order_ = once_order_;
  } else {
    order_ = permutation(opt_.seed, uint64_t(epoch));
  }
}

void BatchLoader::base_labels(int64_t item, Scratch& s, int image_height, int image_width) {
  if (label_cache_->get(item, s.label_base)) return;
  const int h = int(opt_.input[0]), w = int(opt_.input[1]);
  const std::string& path = ds_.label_path(item);
  if (image_height == 0) image_size(ds_.path(item), image_height, image_width);
  ds_.pixel_ids().decode(path, s.label_decoded);
  if (s.label_decoded.height != image_height || s.label_decoded.width != image_width)
    throw DataError(path + ": label image is " + std::to_string(s.label_decoded.height) + "x" +
                    std::to_string(s.label_decoded.width) + " but its image " + ds_.path(item) + " is " +
                    std::to_string(image_height) + "x" + std::to_string(image_width) + " (they must match)");
  if (opt_.output_size_mode == OutputSizeMode::kResize)
    resize_nearest(s.label_decoded, h, w, s.label_base);
  else  // the crop modes keep the whole label image, as the image cache keeps the whole image
    std::swap(s.label_base, s.label_decoded);
  label_cache_->put(item, s.label_base);
}

void BatchLoader::process(int64_t item, int worker, float* dst, int32_t* label_dst) {
  Scratch& s = *scratch_[worker];
  const int h = int(opt_.input[0]), w = int(opt_.input[1]), c = int(opt_.input[2]);
  const std::string& path = ds_.path(item);
  const bool resize_mode = opt_.output_size_mode == OutputSizeMode::kResize;
  s.source_height = s.source_width = 0;
  if (!cache_->get(item, s.base)) {
    decode_image(path, c, s.decoded);
    s.source_height = s.decoded.height;
    s.source_width = s.decoded.width;
    decoded_.fetch_add(1, std::memory_order_relaxed);
    if (resize_mode) {
      resize_bilinear(s.decoded, h, w, s.base);
    } else {
      if (s.decoded.height < h || s.decoded.width < w)
        center_crop(s.decoded, h, w, path, s.base);  // throws the size error
      std::swap(s.base, s.decoded);
    }
    cache_->put(item, s.base);
  }
  Rng rng = Rng::derive(opt_.seed, {uint64_t(epoch_), uint64_t(item)});
  if (label_dst) {  // segmentation: the same crop window and augmentation for image and labels
    base_labels(item, s, s.source_height, s.source_width);
    if (resize_mode) {
      s.work = s.base;
      s.label_work = s.label_base;
    } else if (opt_.training && opt_.output_size_mode == OutputSizeMode::kRandCrop) {
      Rng same = rng;  // the labels' window from the same draws as the image's
      random_crop(s.base, h, w, path, rng, s.work);
      random_crop(s.label_base, h, w, ds_.label_path(item), same, s.label_work);
    } else {
      center_crop(s.base, h, w, path, s.work);
      center_crop(s.label_base, h, w, ds_.label_path(item), s.label_work);
    }
    if (opt_.training && opt_.augment.any())
      augment_pair(s.work, s.label_work, opt_.augment, kUndefinedPixel, rng, s.tmp);
    const size_t count = size_t(h) * w * c;
    for (size_t i = 0; i < count; ++i) dst[i] = s.work.pixels[i];
    const size_t pixels = size_t(h) * w;
    for (size_t i = 0; i < pixels; ++i) {
      const uint8_t l = s.label_work.pixels[i];
      label_dst[i] = l == kUndefinedPixel ? -1 : int32_t(l);
    }
    return;
  }
  const Image* img = &s.base;
  if (!resize_mode) {
    if (opt_.training && opt_.output_size_mode == OutputSizeMode::kRandCrop)
      random_crop(s.base, h, w, path, rng, s.work);
    else
      center_crop(s.base, h, w, path, s.work);
    img = &s.work;
  }
  if (opt_.training && opt_.augment.any()) {
    if (img != &s.work) s.work = s.base;
    augment(s.work, opt_.augment, rng, s.tmp);
    img = &s.work;
  }
  const uint8_t* px = img->pixels.data();
  const size_t count = size_t(h) * w * c;
  for (size_t i = 0; i < count; ++i) dst[i] = px[i];
}

void BatchLoader::fill(int64_t g, Batch& out) {
  const int64_t n = ds_.size();
  const int64_t begin = g * batch_, end = std::min(n, begin + batch_);
  const auto& share = end - begin == batch_ ? full_share_ : last_share_;
  int64_t lo = begin;
  for (int r = 0; r < opt_.rank; ++r) lo += share[r];
  const int64_t count = share[opt_.rank];
  const Shape& in = opt_.input;
  const int64_t per_image = in.numel();
  if (!out.images.defined() || out.images.numel() < batch_ * per_image)  // first use only
    out.images = Tensor(batch_shape(batch_, in));
  const bool pixels = ds_.has_pixel_labels();
  const int64_t per_label = pixels ? in[0] * in[1] : 1;
  auto label_shape = [&](int64_t k) { return pixels ? Shape{k, in[0], in[1]} : Shape{k}; };
  if (!out.labels.defined() || out.labels.numel() < batch_ * per_label)
    out.labels = Tensor(label_shape(batch_), Device::cpu(), DType::kI32);
  const int64_t width = ds_.target_width();  // tables: responses or classes per row
  if (width > 0 && !out.targets.defined()) out.targets = Tensor(Shape{batch_, width});
  if (width == 0 && out.targets.defined()) out.targets = Tensor();  // a Batch another loader filled
  out.images.resize(batch_shape(count, in));
  out.labels.resize(label_shape(count));
  if (width > 0) out.targets.resize(Shape{count, width});  // within its capacity after the first batch
  out.items.reserve(size_t(batch_));
  out.items.resize(size_t(count));
  for (int64_t k = 0; k < count; ++k) out.items[k] = order_[lo + k];
  out.global_size = end - begin;

  float* images = out.images.data();
  int32_t* labels = out.labels.data_i32();
  struct Work {
    BatchLoader* self;
    const int64_t* items;
    float* images;
    int32_t* labels;  // segmentation: (N, H, W); null otherwise
    int64_t per_image, per_label;
    bool skip, warn;
  } work{this,
         out.items.data(),
         images,
         pixels ? labels : nullptr,
         per_image,
         per_label,
         opt_.on_bad_image == OnBadImage::kSkip,
         opt_.warn_skipped};
  // One captured pointer: fits std::function's inline buffer, so no allocation per batch.
  pool_->parallel_for(count, [w = &work](int64_t k, int worker) {
    const int64_t item = w->items[k];
    if (w->self->bad_[item].load(std::memory_order_relaxed)) return;
    try {
      w->self->process(item, worker, w->images + k * w->per_image, w->labels ? w->labels + k * w->per_label : nullptr);
    } catch (const DataError& e) {
      if (!w->skip) throw;
      uint8_t expected = 0;
      if (w->self->bad_[item].compare_exchange_strong(expected, 1)) {
        w->self->skipped_.fetch_add(1);
        if (w->warn) log::warn("skipping bad image: {}", skip_message(e.what()));
      }
    }
  });
  int64_t kept = 0;  // compact away skipped images
  for (int64_t k = 0; k < count; ++k) {
    const int64_t item = out.items[k];
    if (bad_[item].load(std::memory_order_relaxed)) continue;
    if (kept != k) {
      std::copy(images + k * per_image, images + (k + 1) * per_image, images + kept * per_image);
      if (pixels) std::copy(labels + k * per_label, labels + (k + 1) * per_label, labels + kept * per_label);
    }
    out.items[kept] = item;
    if (!pixels) labels[kept] = ds_.label(item);
    if (width > 0) std::copy_n(ds_.targets(item), width, out.targets.data() + kept * width);
    ++kept;
  }
  out.items.resize(size_t(kept));
  out.size = kept;
  out.images.resize(batch_shape(kept, in));
  out.labels.resize(label_shape(kept));
  if (width > 0) out.targets.resize(Shape{kept, width});
}

void BatchLoader::stop_producer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancel_ = true;
  }
  cv_.notify_all();
  if (producer_.joinable()) producer_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& b : ready_) free_.push_back(std::move(b));
  ready_.clear();
  cancel_ = false;
  producer_done_ = true;
  error_ = nullptr;
}

void BatchLoader::start_epoch(int64_t epoch) {
  stop_producer();
  epoch_ = epoch;
  make_order(epoch);
  next_sync_ = 0;
  if (!opt_.background) return;
  producer_done_ = false;
  producer_ = std::thread([this, epoch] { producer_loop(epoch); });
}

void BatchLoader::producer_loop(int64_t) {
  set_thread_name("dlt-batches");
  for (int64_t g = 0; g < num_batches_; ++g) {
    std::unique_ptr<Batch> slot;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return cancel_ || !free_.empty(); });
      if (cancel_) break;
      slot = std::move(free_.back());
      free_.pop_back();
    }
    try {
      fill(g, *slot);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      free_.push_back(std::move(slot));
      error_ = std::current_exception();
      break;
    }
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back(std::move(slot));
    cv_.notify_all();
  }
  std::lock_guard<std::mutex> lock(mu_);
  producer_done_ = true;
  cv_.notify_all();
}

bool BatchLoader::next(Batch& out) {
  if (epoch_ < 0) start_epoch(0);
  if (!opt_.background) {
    if (next_sync_ >= num_batches_) return false;
    fill(next_sync_++, out);
    return true;
  }
  std::unique_ptr<Batch> slot;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !ready_.empty() || producer_done_; });
    if (ready_.empty()) {
      if (error_) {
        std::exception_ptr e = error_;
        error_ = nullptr;
        std::rethrow_exception(e);
      }
      return false;
    }
    slot = std::move(ready_.front());
    ready_.erase(ready_.begin());
  }
  std::swap(out, *slot);
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(slot));
  }
  cv_.notify_all();
  return true;
}

}  // namespace dlt
