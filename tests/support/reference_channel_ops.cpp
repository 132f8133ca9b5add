// Reference channel shuffle and channel slice (reference_ops.h): index maps written out per
// pixel and channel, in double.
#include "support/reference_ops.h"

namespace dlt::ref {

Vec channel_shuffle_forward(const ChannelShuffleDesc& d, const Vec& x) {
  const int64_t c = d.c, groups = d.groups, k = c / groups;
  Vec y(x.size());
  for (int64_t p = 0; p < d.pixels; ++p)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t j = 0; j < k; ++j) y[p * c + j * groups + g] = x[p * c + g * k + j];
  return y;
}

Vec channel_shuffle_backward(const ChannelShuffleDesc& d, const Vec& dy) {
  const int64_t c = d.c, groups = d.groups, k = c / groups;
  Vec dx(dy.size());
  for (int64_t p = 0; p < d.pixels; ++p)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t j = 0; j < k; ++j) dx[p * c + g * k + j] = dy[p * c + j * groups + g];
  return dx;
}

Vec channel_slice_forward(const ChannelSliceDesc& d, const Vec& x) {
  Vec y(d.pixels * d.count);
  for (int64_t p = 0; p < d.pixels; ++p)
    for (int64_t i = 0; i < d.count; ++i) y[p * d.count + i] = x[p * d.c + d.start + i];
  return y;
}

Vec channel_slice_backward(const ChannelSliceDesc& d, const Vec& dy) {
  Vec dx(d.pixels * d.c, 0.0);
  for (int64_t p = 0; p < d.pixels; ++p)
    for (int64_t i = 0; i < d.count; ++i) dx[p * d.c + d.start + i] = dy[p * d.count + i];
  return dx;
}

}  // namespace dlt::ref
