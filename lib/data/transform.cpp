// Resize, crops and augmentation on 8-bit HWC images. Plain loops: this is per-image work on
// loader threads, not a compute hot path.
#include "data/transform.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "util/check.h"
#include "util/error.h"

namespace dlt {
namespace {

// Per output index: first input index and normalized weights (triangle filter).
struct Contrib {
  std::vector<int> first, count;
  std::vector<float> weights;  // count[o] weights for output o at offset o * max_count
  int max_count = 0;
};

void contributions(int in, int out, Contrib& c) {
  const double scale = double(in) / out;
  const double support = std::max(1.0, scale);
  c.max_count = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.assign(out, 0);
  c.count.assign(out, 0);
  c.weights.assign(size_t(out) * c.max_count, 0.f);
  for (int o = 0; o < out; ++o) {
    const double center = (o + 0.5) * scale - 0.5;
    int lo = static_cast<int>(std::floor(center - support)) + 1;
    int hi = static_cast<int>(std::ceil(center + support)) - 1;
    lo = std::max(lo, 0);
    hi = std::min(hi, in - 1);
    if (hi - lo + 1 > c.max_count) hi = lo + c.max_count - 1;
    double total = 0;
    float* w = &c.weights[size_t(o) * c.max_count];
    for (int x = lo; x <= hi; ++x) {
      double v = 1.0 - std::abs(x - center) / support;
      v = v > 0 ? v : 0;
      w[x - lo] = static_cast<float>(v);
      total += v;
    }
    if (total <= 0) {  // centre outside the image: nearest edge pixel
      lo = hi = std::clamp(static_cast<int>(std::lround(center)), 0, in - 1);
      w[0] = 1.f;
      total = 1;
    }
    for (int x = lo; x <= hi; ++x) w[x - lo] = static_cast<float>(w[x - lo] / total);
    c.first[o] = lo;
    c.count[o] = hi - lo + 1;
  }
}

inline uint8_t to_u8(float v) {
  v = v + 0.5f;
  return static_cast<uint8_t>(v <= 0.f ? 0.f : (v >= 255.f ? 255.f : v));
}

[[noreturn]] void too_small(const Image& in, int height, int width, const std::string& name) {
  throw DataError(name + ": image is " + std::to_string(in.height) + "x" + std::to_string(in.width) +
                  " but the crop needs at least " + std::to_string(height) + "x" + std::to_string(width) +
                  " (use OutputSizeMode: resize, or a smaller InputSize)");
}

}  // namespace

namespace {

// Horizontal pass for C channels: (in.height, in.width, C) u8 -> (in.height, width, C) float.
template <int C>
void resize_rows(const Image& in, int width, const Contrib& cx, float* tmp) {
  for (int y = 0; y < in.height; ++y) {
    const uint8_t* row = in.at(y, 0);
    float* dst = tmp + size_t(y) * width * C;
    for (int x = 0; x < width; ++x) {
      const float* w = &cx.weights[size_t(x) * cx.max_count];
      const uint8_t* src = row + size_t(cx.first[x]) * C;
      float acc[C] = {};
      for (int t = 0; t < cx.count[x]; ++t)
        for (int k = 0; k < C; ++k) acc[k] += w[t] * float(src[t * C + k]);
      for (int k = 0; k < C; ++k) dst[x * C + k] = acc[k];
    }
  }
}

}  // namespace

void resize_bilinear(const Image& in, int height, int width, Image& out) {
  const int c = in.channels;
  if (in.height == height && in.width == width) {
    out = in;
    return;
  }
  thread_local Contrib cx, cy;
  thread_local std::vector<float> tmp, acc;
  contributions(in.width, width, cx);
  contributions(in.height, height, cy);
  tmp.resize(size_t(in.height) * width * c);
  if (c == 3) {
    resize_rows<3>(in, width, cx, tmp.data());
  } else if (c == 1) {
    resize_rows<1>(in, width, cx, tmp.data());
  } else {
    DLT_CHECK(c == 4 || c == 2, "resize of " << c << " channels");
    if (c == 4)
      resize_rows<4>(in, width, cx, tmp.data());
    else
      resize_rows<2>(in, width, cx, tmp.data());
  }
  out.height = height;
  out.width = width;
  out.channels = c;
  out.pixels.resize(size_t(height) * width * c);
  const size_t row_len = size_t(width) * c;
  acc.resize(row_len);
  for (int y = 0; y < height; ++y) {  // vertical pass
    const float* w = &cy.weights[size_t(y) * cy.max_count];
    float* a = acc.data();
    const float* src0 = &tmp[size_t(cy.first[y]) * row_len];
    for (size_t i = 0; i < row_len; ++i) a[i] = w[0] * src0[i];
    for (int t = 1; t < cy.count[y]; ++t) {
      const float* src = &tmp[size_t(cy.first[y] + t) * row_len];
      const float wt = w[t];
      for (size_t i = 0; i < row_len; ++i) a[i] += wt * src[i];
    }
    uint8_t* dst = out.at(y, 0);
    for (size_t i = 0; i < row_len; ++i) dst[i] = to_u8(a[i]);
  }
}

void crop(const Image& in, int top, int left, int height, int width, Image& out) {
  DLT_CHECK(top >= 0 && left >= 0 && top + height <= in.height && left + width <= in.width,
            "crop window outside the image");
  out.height = height;
  out.width = width;
  out.channels = in.channels;
  out.pixels.resize(size_t(height) * width * in.channels);
  for (int y = 0; y < height; ++y) std::memcpy(out.at(y, 0), in.at(top + y, left), size_t(width) * in.channels);
}

void center_crop(const Image& in, int height, int width, const std::string& name, Image& out) {
  if (in.height < height || in.width < width) too_small(in, height, width, name);
  crop(in, (in.height - height) / 2, (in.width - width) / 2, height, width, out);
}

void random_crop(const Image& in, int height, int width, const std::string& name, Rng& rng, Image& out) {
  if (in.height < height || in.width < width) too_small(in, height, width, name);
  const int top = static_cast<int>(rng.below(uint64_t(in.height - height) + 1));
  const int left = static_cast<int>(rng.below(uint64_t(in.width - width) + 1));
  crop(in, top, left, height, width, out);
}

AffineDraw draw_affine(const AugmentOptions& o, Rng& rng) {
  AffineDraw d;
  const double fx = rng.uniform(), fy = rng.uniform();
  const double rot = rng.uniform(o.rand_rotation[0], o.rand_rotation[1]);
  const double sc = rng.uniform(o.rand_scale[0], o.rand_scale[1]);
  const double tx = rng.uniform(o.rand_x_translation[0], o.rand_x_translation[1]);
  const double ty = rng.uniform(o.rand_y_translation[0], o.rand_y_translation[1]);
  d.flip_x = o.rand_x_reflection && fx < 0.5;
  d.flip_y = o.rand_y_reflection && fy < 0.5;
  d.rotation_deg = o.rand_rotation[0] == o.rand_rotation[1] ? o.rand_rotation[0] : rot;
  d.scale = o.rand_scale[0] == o.rand_scale[1] ? o.rand_scale[0] : sc;
  d.tx = o.rand_x_translation[0] == o.rand_x_translation[1] ? o.rand_x_translation[0] : tx;
  d.ty = o.rand_y_translation[0] == o.rand_y_translation[1] ? o.rand_y_translation[0] : ty;
  if (!o.axis_scale_or_shear()) return d;
  auto draw = [&rng](const double(&r)[2]) {
    const double v = rng.uniform(r[0], r[1]);
    return r[0] == r[1] ? r[0] : v;
  };
  d.scale_x = draw(o.rand_x_scale);
  d.scale_y = draw(o.rand_y_scale);
  d.shear_x_deg = draw(o.rand_x_shear);
  d.shear_y_deg = draw(o.rand_y_shear);
  return d;
}

namespace {

// Bilinear sample at (x0 + ax, y0 + ay) with all four neighbours inside the image.
template <int C>
inline void sample_inside(const Image& in, int x0, int y0, float ax, float ay, uint8_t* dst) {
  const uint8_t* p = in.at(y0, x0);
  const uint8_t* q = p + size_t(in.width) * C;
  const float w00 = (1 - ax) * (1 - ay), w01 = ax * (1 - ay), w10 = (1 - ax) * ay, w11 = ax * ay;
  for (int k = 0; k < C; ++k) dst[k] = to_u8(w00 * p[k] + w01 * p[C + k] + w10 * q[k] + w11 * q[C + k]);
}

// Calls f(xo, yo, x, y) for every output pixel with its source position (x, y) under the warp.
template <class F>
void for_each_source(int h, int w, const AffineDraw& d, F&& f) {
  constexpr double kPi = 3.14159265358979323846;
  const double cx = (w - 1) / 2.0, cy = (h - 1) / 2.0;
  const double th = d.rotation_deg * kPi / 180.0;
  const double a = d.scale * d.scale_x, b = d.scale * d.scale_y;
  const double sx = d.flip_x ? -1 : 1, sy = d.flip_y ? -1 : 1;
  // A^-1 = Reflection Rotation^-1 Scale^-1 Shear^-1, Shear^-1 = [[1 + hx hy, -hx], [-hy, 1]].
  const double hx = std::tan(d.shear_x_deg * kPi / 180.0), hy = std::tan(d.shear_y_deg * kPi / 180.0);
  const double r00 = std::cos(th) / a, r01 = std::sin(th) / b, r10 = -std::sin(th) / a, r11 = std::cos(th) / b;
  const double k00 = sx * (r00 * (1 + hx * hy) + r01 * -hy), k01 = sx * (r00 * -hx + r01);
  const double k10 = sy * (r10 * (1 + hx * hy) + r11 * -hy), k11 = sy * (r10 * -hx + r11);
  // Source coordinates are affine in xo along a row: x = bx + k00 * xo, y = by + k10 * xo.
  for (int yo = 0; yo < h; ++yo) {
    const double dy = yo - cy - d.ty, dx0 = -cx - d.tx;
    const double bx = cx + (k00 * dx0 + k01 * dy), by = cy + (k10 * dx0 + k11 * dy);
    for (int xo = 0; xo < w; ++xo) f(xo, yo, bx + k00 * xo, by + k10 * xo);
  }
}

// out: in's size, every pixel `fill` (a memset when all channels are the same value).
void start_filled(const Image& in, const PixelFill& fill, Image& out) {
  out.height = in.height;
  out.width = in.width;
  out.channels = in.channels;
  const int c = in.channels;
  if (std::all_of(fill.begin(), fill.begin() + c, [&](uint8_t v) { return v == fill[0]; })) {
    out.pixels.assign(in.pixels.size(), fill[0]);
    return;
  }
  out.pixels.resize(in.pixels.size());
  for (size_t i = 0; i < out.pixels.size(); i += size_t(c)) std::copy(fill.begin(), fill.begin() + c, &out.pixels[i]);
}

template <int C>
void warp_rows(const Image& in, const AffineDraw& d, const uint8_t* fill, Image& out) {
  const int h = in.height, w = in.width;
  for_each_source(h, w, d, [&](int xo, int yo, double x, double y) {
    if (!(x >= -1 && y >= -1 && x < w && y < h)) return;                           // the fill
    const int x0 = static_cast<int>(x + 1) - 1, y0 = static_cast<int>(y + 1) - 1;  // floor
    const float ax = static_cast<float>(x - x0), ay = static_cast<float>(y - y0);
    uint8_t* dst = out.at(yo, xo);
    if (x0 >= 0 && y0 >= 0 && x0 + 1 < w && y0 + 1 < h) {
      sample_inside<C>(in, x0, y0, ax, ay, dst);
      return;
    }
    const float wts[4] = {(1 - ax) * (1 - ay), ax * (1 - ay), (1 - ax) * ay, ax * ay};
    const int xs[4] = {x0, x0 + 1, x0, x0 + 1}, ys[4] = {y0, y0, y0 + 1, y0 + 1};
    for (int k = 0; k < C; ++k) {
      float acc = 0;
      for (int t = 0; t < 4; ++t) {
        if (wts[t] == 0.f) continue;
        if (xs[t] >= 0 && xs[t] < w && ys[t] >= 0 && ys[t] < h)
          acc += wts[t] * in.at(ys[t], xs[t])[k];
        else if (fill[k] != 0)
          acc += wts[t] * fill[k];
      }
      dst[k] = to_u8(acc);
    }
  });
}

}  // namespace

PixelFill pixel_fill(const AugmentOptions& o, int channels) {
  PixelFill f{};
  for (int k = 0; k < channels && k < 4 && !o.fill_value.empty(); ++k) {
    const double v = o.fill_value[o.fill_value.size() == 1 ? 0 : size_t(k)];
    f[size_t(k)] = static_cast<uint8_t>(std::lround(std::clamp(v, 0.0, 255.0)));
  }
  return f;
}

void warp_affine(const Image& in, const AffineDraw& d, Image& out, const PixelFill& fill) {
  start_filled(in, fill, out);
  const uint8_t* f = fill.data();
  switch (in.channels) {
    case 1:
      warp_rows<1>(in, d, f, out);
      break;
    case 2:
      warp_rows<2>(in, d, f, out);
      break;
    case 3:
      warp_rows<3>(in, d, f, out);
      break;
    default:
      warp_rows<4>(in, d, f, out);
      break;
  }
}

void warp_affine_nearest(const Image& in, const AffineDraw& d, uint8_t fill, Image& out) {
  out.height = in.height;
  out.width = in.width;
  out.channels = in.channels;
  out.pixels.assign(in.pixels.size(), fill);
  const int h = in.height, w = in.width, c = in.channels;
  for_each_source(h, w, d, [&](int xo, int yo, double x, double y) {
    const double xr = std::floor(x + 0.5), yr = std::floor(y + 0.5);
    if (xr >= 0 && yr >= 0 && xr < w && yr < h) std::memcpy(out.at(yo, xo), in.at(int(yr), int(xr)), size_t(c));
  });
}

namespace {
void pad_crop_at(const Image& in, int ox, int oy, const PixelFill& fill, Image& out) {
  const int h = in.height, w = in.width, c = in.channels;
  start_filled(in, fill, out);
  for (int y = 0; y < h; ++y) {
    const int ys = y + oy;
    if (ys < 0 || ys >= h) continue;
    const int x_lo = std::max(0, -ox), x_hi = std::min(w, w - ox);
    if (x_hi > x_lo) std::memcpy(out.at(y, x_lo), in.at(ys, x_lo + ox), size_t(x_hi - x_lo) * c);
  }
}

// PadCrop's offset in [-pad, pad] for x, then y.
std::pair<int, int> draw_pad_offset(int64_t pad, Rng& rng) {
  const int p = static_cast<int>(pad);
  const int ox = static_cast<int>(rng.below(uint64_t(2 * p) + 1)) - p;
  const int oy = static_cast<int>(rng.below(uint64_t(2 * p) + 1)) - p;
  return {ox, oy};
}

}  // namespace

void pad_crop(const Image& in, int64_t pad, Rng& rng, Image& out, const PixelFill& fill) {
  const auto [ox, oy] = draw_pad_offset(pad, rng);
  pad_crop_at(in, ox, oy, fill, out);
}

void augment_pair(Image& image, Image& labels, const AugmentOptions& options, uint8_t fill, Rng& rng, Image& scratch) {
  const AffineDraw d = draw_affine(options, rng);
  const PixelFill image_fill = pixel_fill(options, image.channels);
  if (!d.identity()) {
    warp_affine(image, d, scratch, image_fill);
    std::swap(image, scratch);
    warp_affine_nearest(labels, d, fill, scratch);
    std::swap(labels, scratch);
  }
  if (options.pad_crop > 0) {
    const auto [ox, oy] = draw_pad_offset(options.pad_crop, rng);
    pad_crop_at(image, ox, oy, image_fill, scratch);
    std::swap(image, scratch);
    pad_crop_at(labels, ox, oy, PixelFill{fill, fill, fill, fill}, scratch);
    std::swap(labels, scratch);
  }
}

void augment(Image& image, const AugmentOptions& options, Rng& rng, Image& scratch) {
  const AffineDraw d = draw_affine(options, rng);
  const PixelFill fill = pixel_fill(options, image.channels);
  if (!d.identity()) {
    warp_affine(image, d, scratch, fill);
    std::swap(image, scratch);
  }
  if (options.pad_crop > 0) {
    pad_crop(image, options.pad_crop, rng, scratch, fill);
    std::swap(image, scratch);
  }
}

}  // namespace dlt
