// Reference channel shuffle, channel slice, depth to space, adaptive average pooling and the token
// ops (reference_ops.h): index maps written out per pixel and channel, in double.
#include "support/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <utility>

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

// From the input side, as ONNX's DepthToSpace defines it on NCHW (a reshape of the channels
// into [bh, bw, C'] (DCR) or [C', bh, bw] (CRD), then a transpose): input channel ci of pixel
// (h, w) goes to channel k of pixel (h * bh + i, w * bw + j).
Vec depth_to_space_forward(const DepthToSpaceDesc& d, const Vec& x) {
  const int64_t oc = d.c / (d.bh * d.bw), oh = d.h * d.bh, ow = d.w * d.bw;
  Vec y(x.size());
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t h = 0; h < d.h; ++h)
      for (int64_t w = 0; w < d.w; ++w)
        for (int64_t ci = 0; ci < d.c; ++ci) {
          int64_t i, j, k;
          if (d.crd) {
            k = ci / (d.bh * d.bw), i = ci / d.bw % d.bh, j = ci % d.bw;
          } else {
            i = ci / (d.bw * oc), j = ci / oc % d.bw, k = ci % oc;
          }
          y[((n * oh + h * d.bh + i) * ow + w * d.bw + j) * oc + k] = x[((n * d.h + h) * d.w + w) * d.c + ci];
        }
  return y;
}

Vec depth_to_space_backward(const DepthToSpaceDesc& d, const Vec& dy) {
  // The forward is a permutation: its gradient sends each dy value back to where it came from.
  Vec index(dy.size());
  for (size_t i = 0; i < index.size(); ++i) index[i] = static_cast<double>(i);
  const Vec where = depth_to_space_forward(d, index);  // output i holds input where[i]
  Vec dx(dy.size());
  for (size_t i = 0; i < dy.size(); ++i) dx[static_cast<size_t>(where[i])] = dy[i];
  return dx;
}

namespace {

// The (out x in) weights of one dimension of a resize, in double.
std::vector<double> resize_weights(const ResizeDesc& d, int64_t in, int64_t out, double scale) {
  std::vector<double> m(static_cast<size_t>(out * in), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    // align_corners: the first and last pixels' centres of both sizes meet
    double s = d.align_corners ? (out > 1 ? double(o) * double(in - 1) / double(out - 1) : 0.0)
               : d.half_pixel  ? (o + 0.5) / scale - 0.5
                               : o / scale;
    if (d.bicubic) {  // Keys' kernel, a = -0.75, at the distance of each of the 4 taps; taps past the edge
      const double a = -0.75, f = std::floor(s);  // count for the edge pixel
      for (int k = -1; k <= 2; ++k) {
        const double x = std::abs(s - (f + k));
        const double wt = x <= 1 ? ((a + 2) * x - (a + 3)) * x * x + 1 : ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
        const int64_t i = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(f) + k, 0), in - 1);
        m[static_cast<size_t>(o * in + i)] += wt;
      }
      continue;
    }
    if (!d.bilinear) {
      const double r = d.floor ? std::floor(s) : std::floor(s + 0.5);
      const int64_t i = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(r), 0), in - 1);
      m[static_cast<size_t>(o * in + i)] = 1.0;
      continue;
    }
    s = std::min(std::max(s, 0.0), static_cast<double>(in - 1));
    for (int64_t i = 0; i < in; ++i) m[static_cast<size_t>(o * in + i)] = std::max(0.0, 1.0 - std::abs(s - i));
  }
  return m;
}

// y = the resize of x, or (backward) dx = its transpose applied to dy.
Vec resize_apply(const ResizeDesc& d, const Vec& v, bool backward) {
  const std::vector<double> wy = resize_weights(d, d.h, d.oh, d.scale_h), wx = resize_weights(d, d.w, d.ow, d.scale_w);
  Vec out(static_cast<size_t>(backward ? d.x_numel() : d.y_numel()), 0.0);
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t oy = 0; oy < d.oh; ++oy)
      for (int64_t ox = 0; ox < d.ow; ++ox)
        for (int64_t iy = 0; iy < d.h; ++iy)
          for (int64_t ix = 0; ix < d.w; ++ix) {
            const double wt = wy[static_cast<size_t>(oy * d.h + iy)] * wx[static_cast<size_t>(ox * d.w + ix)];
            if (wt == 0.0) continue;
            const size_t o = static_cast<size_t>(((n * d.oh + oy) * d.ow + ox) * d.c);
            const size_t i = static_cast<size_t>(((n * d.h + iy) * d.w + ix) * d.c);
            for (size_t k = 0; k < static_cast<size_t>(d.c); ++k) {
              if (backward)
                out[i + k] += wt * v[o + k];
              else
                out[o + k] += wt * v[i + k];
            }
          }
  return out;
}

}  // namespace

Vec resize_forward(const ResizeDesc& d, const Vec& x) { return resize_apply(d, x, false); }

Vec resize_backward(const ResizeDesc& d, const Vec& dy) { return resize_apply(d, dy, true); }

Vec batch_broadcast_add(const BatchBroadcastDesc& d, const Vec& x, const Vec& b) {
  Vec y(static_cast<size_t>(d.rows * d.length));
  for (int64_t r = 0; r < d.rows; ++r)
    for (int64_t i = 0; i < d.length; ++i) {
      const size_t k = static_cast<size_t>(r * d.length + i);
      y[k] = (x.empty() ? 0.0 : x[k]) + b[static_cast<size_t>(i)];
    }
  return y;
}

Vec batch_sum(const BatchBroadcastDesc& d, const Vec& dy) {
  Vec db(static_cast<size_t>(d.length), 0.0);
  for (int64_t r = 0; r < d.rows; ++r)
    for (int64_t i = 0; i < d.length; ++i) db[static_cast<size_t>(i)] += dy[static_cast<size_t>(r * d.length + i)];
  return db;
}

Vec spatial_transpose_forward(const SpatialTransposeDesc& d, const Vec& x) {
  Vec y(x.size());
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t i = 0; i < d.h; ++i)
      for (int64_t j = 0; j < d.w; ++j)
        for (int64_t c = 0; c < d.c; ++c)
          y[static_cast<size_t>(((n * d.w + j) * d.h + i) * d.c + c)] =
              x[static_cast<size_t>(((n * d.h + i) * d.w + j) * d.c + c)];
  return y;
}

Vec row_gather_forward(const RowGatherDesc& d, const Vec& x) {
  Vec y(static_cast<size_t>(d.n * d.rows_out * d.cols), 0.0);
  for (int64_t b = 0; b < d.n; ++b)
    for (int64_t r = 0; r < d.rows_out; ++r) {
      const int64_t i = d.index[static_cast<size_t>(r)];
      if (i < 0) continue;
      for (int64_t j = 0; j < d.cols; ++j)
        y[static_cast<size_t>((b * d.rows_out + r) * d.cols + j)] =
            x[static_cast<size_t>((b * d.rows_in + i) * d.cols + j)];
    }
  return y;
}

Vec row_gather_backward(const RowGatherDesc& d, const Vec& dy) {
  Vec dx(static_cast<size_t>(d.n * d.rows_in * d.cols), 0.0);
  for (int64_t b = 0; b < d.n; ++b)
    for (int64_t r = 0; r < d.rows_out; ++r) {
      const int64_t i = d.index[static_cast<size_t>(r)];
      if (i < 0) continue;
      for (int64_t j = 0; j < d.cols; ++j)
        dx[static_cast<size_t>((b * d.rows_in + i) * d.cols + j)] +=
            dy[static_cast<size_t>((b * d.rows_out + r) * d.cols + j)];
    }
  return dx;
}

namespace {

double head_scale(const HeadNormalizeDesc& d, const Vec& t, int64_t h) {
  if (t.empty()) return 1.0;
  return d.linear ? t[static_cast<size_t>(h)] : std::exp(std::min(t[static_cast<size_t>(h)], d.max_log_scale));
}

double group_norm(const HeadNormalizeDesc& d, const Vec& x, int64_t g) {
  double n = 0;
  for (int64_t i = 0; i < d.dim; ++i) n += x[static_cast<size_t>(g * d.dim + i)] * x[static_cast<size_t>(g * d.dim + i)];
  return std::max(std::sqrt(n), static_cast<double>(HeadNormalizeDesc::kEps));
}

}  // namespace

Vec head_normalize_forward(const HeadNormalizeDesc& d, const Vec& x, const Vec& t) {
  Vec y(x.size());
  for (int64_t g = 0; g < d.rows * d.heads * d.per_head; ++g) {
    const double f = head_scale(d, t, g / d.per_head % d.heads) / group_norm(d, x, g);
    for (int64_t i = 0; i < d.dim; ++i) y[static_cast<size_t>(g * d.dim + i)] = f * x[static_cast<size_t>(g * d.dim + i)];
  }
  return y;
}

// y = s u, u = x / n: dx = s (dy - u (u . dy)) / n; dt = s sum(dy . u) where t is below the clamp
// (linear: sum(dy . u)).
void head_normalize_backward(const HeadNormalizeDesc& d, const Vec& x, const Vec& t, const Vec& dy, Vec& dx, Vec& dt) {
  dx.assign(x.size(), 0.0);
  dt.assign(t.size(), 0.0);
  for (int64_t g = 0; g < d.rows * d.heads * d.per_head; ++g) {
    const int64_t h = g / d.per_head % d.heads;
    const double n = group_norm(d, x, g), s = head_scale(d, t, h);
    double dot = 0;
    for (int64_t i = 0; i < d.dim; ++i)
      dot += x[static_cast<size_t>(g * d.dim + i)] / n * dy[static_cast<size_t>(g * d.dim + i)];
    for (int64_t i = 0; i < d.dim; ++i) {
      const size_t k = static_cast<size_t>(g * d.dim + i);
      dx[k] = s * (dy[k] - x[k] / n * dot) / n;
    }
    if (!t.empty() && d.linear) dt[static_cast<size_t>(h)] += dot;
    if (!t.empty() && !d.linear && t[static_cast<size_t>(h)] < d.max_log_scale) dt[static_cast<size_t>(h)] += s * dot;
  }
}

// Written from the rotation matrix [[c, -s], [s, c]] per pair (its transpose for back), pair
// (a, b) = channels (2i, 2i + 1) or (i, i + dim / 2) of each group.
Vec rotary(const RotaryDesc& d, const Vec& x, const Vec& cos, const Vec& sin, bool back) {
  Vec y = x;
  const int64_t pairs = d.dim / 2;
  for (int64_t r = 0; r < d.n * d.seq; ++r) {
    const int64_t t = r % d.seq - d.prefix;
    if (t < 0) continue;
    for (int64_t h = 0; h < d.heads; ++h)
      for (int64_t i = 0; i < pairs; ++i) {
        const int64_t base = (r * d.heads + h) * d.dim;
        const size_t a = static_cast<size_t>(base + (d.half ? i : 2 * i)),
                     b = static_cast<size_t>(base + (d.half ? i + pairs : 2 * i + 1));
        const int64_t row = (d.table_heads == 1 ? 0 : h) * (d.seq - d.prefix) + t;
        const double c = cos[static_cast<size_t>(row * pairs + i)], s = sin[static_cast<size_t>(row * pairs + i)];
        const double m[2][2] = {{c, back ? s : -s}, {back ? -s : s, c}};
        y[a] = m[0][0] * x[a] + m[0][1] * x[b];
        y[b] = m[1][0] * x[a] + m[1][1] * x[b];
      }
  }
  return y;
}

Vec spatial_transpose_backward(const SpatialTransposeDesc& d, const Vec& dy) {
  return spatial_transpose_forward(SpatialTransposeDesc{d.n, d.w, d.h, d.c}, dy);
}

namespace {

// Output i's region of `in` inputs pooled to `out`: [floor(i in / out), ceil((i + 1) in / out)).
std::pair<int64_t, int64_t> adaptive_region(int64_t i, int64_t in, int64_t out) {
  const double a = static_cast<double>(i) * static_cast<double>(in) / static_cast<double>(out);
  const double b = static_cast<double>(i + 1) * static_cast<double>(in) / static_cast<double>(out);
  return {static_cast<int64_t>(std::floor(a)), static_cast<int64_t>(std::ceil(b))};
}

// Calls f(output index, input index, 1 / region size) for every input value of every region.
template <class F>
void adaptive_pairs(const AdaptivePoolDesc& d, F f) {
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t i = 0; i < d.out_h; ++i)
      for (int64_t j = 0; j < d.out_w; ++j) {
        const auto [h0, h1] = adaptive_region(i, d.h, d.out_h);
        const auto [w0, w1] = adaptive_region(j, d.w, d.out_w);
        const double inv = 1.0 / static_cast<double>((h1 - h0) * (w1 - w0));
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w)
            for (int64_t ch = 0; ch < d.c; ++ch)
              f(((n * d.out_h + i) * d.out_w + j) * d.c + ch, ((n * d.h + h) * d.w + w) * d.c + ch, inv);
      }
}

}  // namespace

Vec adaptive_pool_forward(const AdaptivePoolDesc& d, const Vec& x) {
  Vec y(static_cast<size_t>(d.out_numel()), 0.0);
  adaptive_pairs(d, [&](int64_t o, int64_t in, double inv) { y[o] += x[in] * inv; });
  return y;
}

Vec adaptive_pool_backward(const AdaptivePoolDesc& d, const Vec& dy) {
  Vec dx(static_cast<size_t>(d.in_numel()), 0.0);
  adaptive_pairs(d, [&](int64_t o, int64_t in, double inv) { dx[in] += dy[o] * inv; });
  return dx;
}

}  // namespace dlt::ref
