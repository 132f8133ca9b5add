// BatchLoader: augmentedImageDatastore's mini-batches. Shuffles per epoch (once | never |
// every-epoch), shards each global mini-batch across ranks (WorkerLoad), decodes, resizes and
// augments on a thread pool into a bounded queue of prepared batches ahead of the consumer
// (DispatchInBackground), and caches decoded images. Every random choice derives from
// (seed, epoch, datastore index), so batches are identical for any thread count. Table
// datastores' target rows travel with their images (Batch::targets).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/options.h"
#include "data/datastore.h"
#include "data/image.h"
#include "tensor/tensor.h"
#include "util/thread_pool.h"

namespace dlt {

class ImageCache;

struct Batch {
  Tensor images;               // (N, H, W, C) float32 host, 0..255
  Tensor labels;               // (N) int32 host (DType::kI32); segmentation: (N, H, W), -1 = undefined pixel
  Tensor targets;              // (N, W) float32 host: responses or 0/1 per class (tables); undefined otherwise
  std::vector<int64_t> items;  // datastore indices, one per image
  int64_t size = 0;            // N: this rank's images (bad images skipped); may be 0 for a rank
                               // whose WorkerLoad share is 0: it must still join the all-reduce
  int64_t global_size = 0;     // images in the whole global mini-batch, all ranks
};

struct LoaderOptions {
  Shape input;               // (H, W, C), C = 1 or 3
  int64_t batch_size = 128;  // the global mini-batch
  Shuffle shuffle = Shuffle::kOnce;
  bool drop_last = true;  // training: MATLAB discards the partial last mini-batch
  bool training = true;   // augmentation and randcrop only when training
  uint64_t seed = 0;
  int rank = 0, world_size = 1;     // each rank gets a disjoint share of every global batch
  std::vector<double> worker_load;  // empty: equal shares, remainder to the first ranks
  int threads = 0;                  // decode threads; 0: one per core
  bool background = true;           // prepare batches ahead on the pool (DispatchInBackground)
  Cache cache = Cache::kAuto;
  OnBadImage on_bad_image = OnBadImage::kError;
  bool warn_skipped = true;  // a warning per image skipped (compute_stats' pass: off, training's warns)
  OutputSizeMode output_size_mode = OutputSizeMode::kResize;
  AugmentOptions augment;
};

// LoaderOptions from the config's sections.
LoaderOptions loader_options(const DataOptions& data, const TrainingOptions& training, const Shape& input,
                             bool for_training);

// 'auto' keeps images in memory when they need at most this many bytes (the smaller of 4 GiB
// and a quarter of physical memory); beyond it they go to a cache file.
int64_t memory_cache_limit();

class BatchLoader {
 public:
  // Throws ConfigError for bad options. Bad images surface from next() as DataError.
  BatchLoader(const ImageDatastore& datastore, LoaderOptions options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Starts (or restarts) an epoch; abandons what is left of the current one.
  void start_epoch(int64_t epoch);
  // The next batch of the epoch into out; false at the end of the epoch. Swaps buffers with
  // out: the tensors out held before are recycled, so consumers must be done with them.
  // In steady state it allocates nothing. Rethrows errors from the workers (DataError).
  bool next(Batch& out);
  int64_t batches_per_epoch() const { return num_batches_; }
  // Distinct images skipped so far under on_bad_image: skip.
  int64_t skipped_images() const;
  // Images decoded from files so far (cache misses); for tests and logs.
  int64_t decoded_images() const;
  std::string cache_kind() const;
  std::string cache_file() const;

  // Images per rank in a global batch of `batch` (WorkerLoad rule: proportional, largest
  // remainders first, ties to lower ranks; equal when load is empty).
  static std::vector<int64_t> shares(int64_t batch, int world_size, const std::vector<double>& load);

 private:
  struct Scratch;
  void make_order(int64_t epoch);
  void fill(int64_t g, Batch& out);
  void process(int64_t item, int worker, float* dst, int32_t* label_dst);
  void producer_loop(int64_t epoch_generation);
  void stop_producer();
  void setup_cache();
  // Segmentation: the item's label image at the input size, before augmentation (cached).
  void base_labels(int64_t item, Scratch& s, int image_height, int image_width);

  const ImageDatastore& ds_;
  LoaderOptions opt_;
  int64_t num_batches_ = 0, batch_ = 0;
  std::vector<int64_t> full_share_, last_share_;  // (world_size) images per rank
  int64_t epoch_ = -1;
  std::vector<int64_t> order_, once_order_;
  std::unique_ptr<ThreadPool> pool_;
  std::vector<std::unique_ptr<Scratch>> scratch_;
  std::unique_ptr<ImageCache> cache_, label_cache_;
  std::unique_ptr<std::atomic<uint8_t>[]> bad_;
  std::atomic<int64_t> skipped_{0}, decoded_{0};

  // Background production: batches [0, num_batches_) of the current epoch, in order.
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Batch>> free_, ready_;  // stack / FIFO (tiny)
  std::thread producer_;
  bool cancel_ = false, producer_done_ = true;
  std::exception_ptr error_;
  int64_t next_sync_ = 0;  // next batch index in foreground mode
};

// imageInputLayer Normalization statistics over a datastore: resized (or centre-cropped),
// never augmented. std is the population standard deviation over all pixels of a channel.
struct DatasetStats {
  Tensor mean_image;                             // (H, W, C)
  std::vector<double> channel_mean;              // (C)
  std::vector<double> channel_std;               // (C)
  std::vector<double> channel_min, channel_max;  // (C) for rescale-* normalizations
  int64_t count = 0;
};
DatasetStats compute_stats(const ImageDatastore& datastore, const LoaderOptions& options);

}  // namespace dlt
