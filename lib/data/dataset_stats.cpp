// compute_stats: one pass over the datastore in order, without augmentation, accumulating in
// double precision the per-pixel mean and the per-channel mean, std, min and max.
#include <algorithm>
#include <cmath>
#include <limits>

#include "data/batch_loader.h"

namespace dlt {

DatasetStats compute_stats(const ImageDatastore& datastore, const LoaderOptions& options) {
  LoaderOptions o = options;
  o.training = false;
  o.shuffle = Shuffle::kNever;
  o.drop_last = false;
  o.rank = 0;
  o.world_size = 1;
  o.worker_load.clear();
  o.cache = Cache::kNone;
  o.warn_skipped = false;  // the training loader warns about each bad image, once
  BatchLoader loader(datastore, o);
  const Shape& in = o.input;
  const int64_t per_image = in.numel(), c = in[2];
  std::vector<double> pixel_sum(per_image, 0.0);
  std::vector<double> sum(c, 0.0), sum_sq(c, 0.0);
  DatasetStats st;
  st.channel_min.assign(c, std::numeric_limits<double>::infinity());
  st.channel_max.assign(c, -std::numeric_limits<double>::infinity());
  Batch batch;
  loader.start_epoch(0);
  while (loader.next(batch)) {
    const float* px = batch.images.data();
    for (int64_t n = 0; n < batch.size; ++n) {
      const float* img = px + n * per_image;
      for (int64_t i = 0; i < per_image; ++i) {
        const double v = img[i];
        const int64_t ch = i % c;
        pixel_sum[i] += v;
        sum[ch] += v;
        sum_sq[ch] += v * v;
        st.channel_min[ch] = std::min(st.channel_min[ch], v);
        st.channel_max[ch] = std::max(st.channel_max[ch], v);
      }
    }
    st.count += batch.size;
  }
  st.mean_image = Tensor(in);
  float* mean = st.mean_image.data();
  const double count = st.count > 0 ? double(st.count) : 1.0;
  for (int64_t i = 0; i < per_image; ++i) mean[i] = static_cast<float>(pixel_sum[i] / count);
  const double per_channel = count * double(per_image / c);
  st.channel_mean.resize(c);
  st.channel_std.resize(c);
  for (int64_t ch = 0; ch < c; ++ch) {
    const double m = sum[ch] / per_channel;
    st.channel_mean[ch] = m;
    st.channel_std[ch] = std::sqrt(std::max(0.0, sum_sq[ch] / per_channel - m * m));
  }
  return st;
}

}  // namespace dlt
