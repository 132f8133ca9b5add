// Canvas: coverage-based anti-aliased rasterizing, stb_easy_font text, axes and PNG output.
// stb_image_write is compiled here with STB_IMAGE_WRITE_STATIC, so its symbols stay private to
// this file and cannot clash with another translation unit that defines the implementation.
#include "train/draw/canvas.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "util/error.h"
#include "util/files.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_easy_font.h>
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

namespace dlt {
namespace {

constexpr double kCoordLimit = 1e7;  // pixel coordinates are clamped to this before clipping

double clamp_coord(double v) { return std::clamp(v, -kCoordLimit, kCoordLimit); }

// Clips the segment to r (Liang-Barsky); returns false when nothing remains.
bool clip_segment(double& x0, double& y0, double& x1, double& y1, const Rect& r) {
  double t0 = 0, t1 = 1;
  const double dx = x1 - x0, dy = y1 - y0;
  const double p[4] = {-dx, dx, -dy, dy};
  const double q[4] = {x0 - r.x0, r.x1 - x0, y0 - r.y0, r.y1 - y0};
  for (int i = 0; i < 4; ++i) {
    if (p[i] == 0) {
      if (q[i] < 0) return false;
    } else {
      const double t = q[i] / p[i];
      if (p[i] < 0)
        t0 = std::max(t0, t);
      else
        t1 = std::min(t1, t);
    }
  }
  if (t0 > t1) return false;
  const double nx0 = x0 + t0 * dx, ny0 = y0 + t0 * dy;
  x1 = x0 + t1 * dx;
  y1 = y0 + t1 * dy;
  x0 = nx0;
  y0 = ny0;
  return true;
}

// Printable ASCII only: stb_easy_font indexes a table with (c - 32).
std::vector<char> font_string(const std::string& s) {
  std::vector<char> out;
  out.reserve(s.size() + 1);
  for (char ch : s) out.push_back(ch >= 32 && ch <= 126 ? ch : '?');
  out.push_back('\0');
  return out;
}

struct Quad {
  float x0, y0, x1, y1;
};

std::vector<Quad> font_quads(const std::string& s) {
  std::vector<char> text = font_string(s);
  std::vector<char> buf(text.size() * 400 + 64);
  const int n = stb_easy_font_print(0, 0, text.data(), nullptr, buf.data(), static_cast<int>(buf.size()));
  std::vector<Quad> quads;
  quads.reserve(n);
  for (int i = 0; i < n; ++i) {
    float xs[4], ys[4];
    for (int v = 0; v < 4; ++v) {
      std::memcpy(&xs[v], buf.data() + (i * 4 + v) * 16, sizeof(float));
      std::memcpy(&ys[v], buf.data() + (i * 4 + v) * 16 + 4, sizeof(float));
    }
    quads.push_back({*std::min_element(xs, xs + 4), *std::min_element(ys, ys + 4), *std::max_element(xs, xs + 4),
                     *std::max_element(ys, ys + 4)});
  }
  return quads;
}

}  // namespace

Rgb mix(Rgb a, Rgb b, double t) {
  auto m = [t](uint8_t u, uint8_t v) {
    return static_cast<uint8_t>(std::lround(u + (static_cast<double>(v) - u) * t));
  };
  return {m(a.r, b.r), m(a.g, b.g), m(a.b, b.b)};
}

Canvas::Canvas(int width, int height, Rgb background) : width_(std::max(1, width)), height_(std::max(1, height)) {
  pixels_.resize(static_cast<size_t>(width_) * height_ * 3);
  for (size_t i = 0; i < pixels_.size(); i += 3) {
    pixels_[i] = background.r;
    pixels_[i + 1] = background.g;
    pixels_[i + 2] = background.b;
  }
  reset_clip();
}

Rgb Canvas::pixel(int x, int y) const {
  const size_t i = (static_cast<size_t>(y) * width_ + x) * 3;
  return {pixels_[i], pixels_[i + 1], pixels_[i + 2]};
}

void Canvas::set_clip(const Rect& r) {
  clip_ = {std::max(0.0, r.x0), std::max(0.0, r.y0), std::min<double>(width_, r.x1), std::min<double>(height_, r.y1)};
}

void Canvas::reset_clip() { clip_ = {0, 0, static_cast<double>(width_), static_cast<double>(height_)}; }

void Canvas::blend(int x, int y, Rgb c, double a) {
  if (!(a > 0) || x < clip_.x0 || y < clip_.y0 || x >= clip_.x1 || y >= clip_.y1) return;
  a = std::min(a, 1.0);
  uint8_t* p = &pixels_[(static_cast<size_t>(y) * width_ + x) * 3];
  auto b = [a](uint8_t dst, uint8_t src) {
    return static_cast<uint8_t>(std::lround(dst + (static_cast<double>(src) - dst) * a));
  };
  p[0] = b(p[0], c.r);
  p[1] = b(p[1], c.g);
  p[2] = b(p[2], c.b);
}

void Canvas::fill_rect(const Rect& r, Rgb c) {
  const double x0 = std::max(r.x0, clip_.x0), x1 = std::min(r.x1, clip_.x1);
  const double y0 = std::max(r.y0, clip_.y0), y1 = std::min(r.y1, clip_.y1);
  if (!(x0 < x1 && y0 < y1)) return;
  for (int y = static_cast<int>(std::floor(y0)); y < std::ceil(y1); ++y) {
    const double cy = std::min<double>(y + 1, y1) - std::max<double>(y, y0);
    for (int x = static_cast<int>(std::floor(x0)); x < std::ceil(x1); ++x) {
      const double cx = std::min<double>(x + 1, x1) - std::max<double>(x, x0);
      blend(x, y, c, cx * cy);
    }
  }
}

void Canvas::stroke_rect(const Rect& r, Rgb c, double w) {
  fill_rect({r.x0, r.y0, r.x1, r.y0 + w}, c);
  fill_rect({r.x0, r.y1 - w, r.x1, r.y1}, c);
  fill_rect({r.x0, r.y0 + w, r.x0 + w, r.y1 - w}, c);
  fill_rect({r.x1 - w, r.y0 + w, r.x1, r.y1 - w}, c);
}

void Canvas::line(double x0, double y0, double x1, double y1, Rgb c, double width, double dash, double phase) {
  if (!std::isfinite(x0) || !std::isfinite(y0) || !std::isfinite(x1) || !std::isfinite(y1)) return;
  x0 = clamp_coord(x0), y0 = clamp_coord(y0), x1 = clamp_coord(x1), y1 = clamp_coord(y1);
  const double hw = std::max(width, 0.5) / 2;
  double cx0 = x0, cy0 = y0, cx1 = x1, cy1 = y1;
  const Rect grown{clip_.x0 - hw - 2, clip_.y0 - hw - 2, clip_.x1 + hw + 2, clip_.y1 + hw + 2};
  if (!clip_segment(cx0, cy0, cx1, cy1, grown)) return;
  const double dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy, len = std::sqrt(len2);
  const int bx0 = static_cast<int>(std::floor(std::min(cx0, cx1) - hw - 1));
  const int bx1 = static_cast<int>(std::ceil(std::max(cx0, cx1) + hw + 1));
  const int by0 = static_cast<int>(std::floor(std::min(cy0, cy1) - hw - 1));
  const int by1 = static_cast<int>(std::ceil(std::max(cy0, cy1) + hw + 1));
  for (int y = by0; y <= by1; ++y) {
    if (y < clip_.y0 || y >= clip_.y1) continue;
    for (int x = bx0; x <= bx1; ++x) {
      if (x < clip_.x0 || x >= clip_.x1) continue;
      const double px = x + 0.5 - x0, py = y + 0.5 - y0;
      const double t = len2 > 0 ? std::clamp((px * dx + py * dy) / len2, 0.0, 1.0) : 0.0;
      if (dash > 0) {
        const double s = std::fmod(phase + t * len, 2 * dash);
        if (s >= dash) continue;
      }
      const double ex = px - t * dx, ey = py - t * dy;
      const double d = std::sqrt(ex * ex + ey * ey);
      blend(x, y, c, std::clamp(hw + 0.5 - d, 0.0, 1.0));
    }
  }
}

void Canvas::polyline(const std::vector<double>& xs, const std::vector<double>& ys, Rgb c, double width, double dash) {
  const size_t n = std::min(xs.size(), ys.size());
  double phase = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    line(xs[i], ys[i], xs[i + 1], ys[i + 1], c, width, dash, phase);
    const double dx = clamp_coord(xs[i + 1]) - clamp_coord(xs[i]);
    const double dy = clamp_coord(ys[i + 1]) - clamp_coord(ys[i]);
    if (dash > 0 && std::isfinite(dx) && std::isfinite(dy))
      phase = std::fmod(phase + std::sqrt(dx * dx + dy * dy), 2 * dash);
  }
}

void Canvas::disc(double cx, double cy, double radius, Rgb c) {
  if (!std::isfinite(cx) || !std::isfinite(cy)) return;
  if (std::abs(cx) > kCoordLimit || std::abs(cy) > kCoordLimit) return;
  for (int y = static_cast<int>(std::floor(cy - radius - 1)); y <= cy + radius + 1; ++y)
    for (int x = static_cast<int>(std::floor(cx - radius - 1)); x <= cx + radius + 1; ++x) {
      const double d = std::hypot(x + 0.5 - cx, y + 0.5 - cy);
      blend(x, y, c, std::clamp(radius + 0.5 - d, 0.0, 1.0));
    }
}

void Canvas::text(double x, double y, const std::string& s, Rgb c, double scale) {
  for (const Quad& q : font_quads(s))
    fill_rect({x + q.x0 * scale, y + q.y0 * scale, x + q.x1 * scale, y + q.y1 * scale}, c);
}

void Canvas::text_vertical(double x, double y, const std::string& s, Rgb c, double scale) {
  // Font (u, v) -> pixel (x + v, y - u): rotated 90 degrees counter-clockwise.
  for (const Quad& q : font_quads(s))
    fill_rect({x + q.y0 * scale, y - q.x1 * scale, x + q.y1 * scale, y - q.x0 * scale}, c);
}

double Canvas::text_width(const std::string& s, double scale) {
  if (s.empty()) return 0;
  std::vector<char> text = font_string(s);
  return (stb_easy_font_width(text.data()) - 1) * scale;  // drop the trailing 1-unit gap
}

double Canvas::text_height(double scale) { return 7 * scale; }

void Canvas::write_png(const std::string& path) const {
  std::vector<uint8_t> png;
  auto sink = [](void* ctx, void* data, int size) {
    auto* out = static_cast<std::vector<uint8_t>*>(ctx);
    const auto* bytes = static_cast<const uint8_t*>(data);
    out->insert(out->end(), bytes, bytes + size);
  };
  if (!stbi_write_png_to_func(sink, &png, width_, height_, 3, pixels_.data(), width_ * 3))
    throw Error(path + ": cannot encode the PNG image (stb_image_write failed)");
  const OutputTarget target = output_target(path);  // a device or FIFO is written through
  if (target.kind != OutputTarget::Kind::kReplace) return write_through(target, path, png.data(), png.size());
  const std::string tmp = target.path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    throw Error(path + ": cannot create '" + tmp + "': " + std::strerror(errno) +
                " (check that the folder exists and is writable)");
  const bool wrote = std::fwrite(png.data(), 1, png.size(), f) == png.size() && std::fflush(f) == 0;
  int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (wrote && !closed) write_errno = errno;  // ENOSPC often shows only when the buffer is flushed
  if (!wrote || !closed) {
    std::remove(tmp.c_str());
    throw Error(path + ": cannot write '" + tmp + "': " + std::strerror(write_errno) + " (check free disk space)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target.path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Error(path + ": cannot rename '" + tmp + "' onto it: " + ec.message() +
                " (check that the path is not a folder and is writable)");
  }
}

double nice_step(double lo, double hi, int max_ticks) {
  const double range = hi - lo;
  if (!std::isfinite(range) || range <= 0) return 1;
  const double rough = range / std::max(1, max_ticks - 1);
  const double mag = std::pow(10.0, std::floor(std::log10(rough)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= rough * (1 - 1e-9)) return m * mag;
  return 10 * mag;
}

std::vector<double> nice_ticks(double lo, double hi, int max_ticks) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
  if (!(hi > lo)) return {lo};
  const double step = nice_step(lo, hi, max_ticks);
  std::vector<double> ticks;
  const double first = std::ceil(lo / step - 1e-9);
  for (double k = first; k * step <= hi + step * 1e-9 && ticks.size() < 100; k += 1)
    ticks.push_back(std::abs(k) < 0.5 ? 0.0 : k * step);
  return ticks;
}

std::string format_tick(double v, double step, bool si_suffix) {
  if (std::abs(v) < std::abs(step) * 1e-9) v = 0;
  const char* suffix = "";
  double unit = 1;
  if (si_suffix) {
    const double big = std::max(std::abs(v), std::abs(step));
    if (big >= 1e9)
      unit = 1e9, suffix = "G";
    else if (big >= 1e6)
      unit = 1e6, suffix = "M";
    else if (big >= 1e3)
      unit = 1e3, suffix = "k";
  }
  if (v == 0) suffix = "";
  const double s = std::abs(step) / unit;
  int decimals = s >= 1 || s <= 0 ? 0 : static_cast<int>(std::ceil(-std::log10(s) - 1e-9));
  decimals = std::clamp(decimals, 0, 9);
  char buf[64];
  if (!si_suffix && std::abs(v) >= 1e7)
    std::snprintf(buf, sizeof buf, "%.3g", v);
  else
    std::snprintf(buf, sizeof buf, "%.*f%s", decimals, v / unit, suffix);
  return buf;
}

double Axes::px(double x) const { return area.x0 + (x - xmin) / (xmax - xmin) * (area.x1 - area.x0); }

double Axes::py(double y) const { return area.y1 - (y - ymin) / (ymax - ymin) * (area.y1 - area.y0); }

void draw_axes(Canvas& c, const Axes& ax, const AxesStyle& style) {
  const Rgb grid{228, 228, 228}, frame{90, 90, 90}, label{30, 30, 30};
  const double sc = style.text_scale, th = Canvas::text_height(sc);
  const Rect& a = ax.area;
  c.reset_clip();
  const double xstep = nice_step(ax.xmin, ax.xmax, style.max_xticks);
  const double ystep = nice_step(ax.ymin, ax.ymax, style.max_yticks);
  const std::vector<double> xt = nice_ticks(ax.xmin, ax.xmax, style.max_xticks);
  const std::vector<double> yt = nice_ticks(ax.ymin, ax.ymax, style.max_yticks);
  for (double x : xt) c.fill_rect({std::round(ax.px(x)), a.y0, std::round(ax.px(x)) + 1, a.y1}, grid);
  for (double y : yt) c.fill_rect({a.x0, std::round(ax.py(y)), a.x1, std::round(ax.py(y)) + 1}, grid);
  c.stroke_rect({a.x0 - 1, a.y0 - 1, a.x1 + 1, a.y1 + 1}, frame);
  for (double x : xt) {
    const double p = std::round(ax.px(x));
    c.fill_rect({p, a.y1 + 1, p + 1, a.y1 + 6}, frame);
    if (!style.x_tick_labels) continue;
    const std::string s = format_tick(x, xstep, style.x_si_suffix);
    c.text(std::round(p - Canvas::text_width(s, sc) / 2), a.y1 + 10, s, label, sc);
  }
  double widest = 0;
  for (double y : yt) {
    const double p = std::round(ax.py(y));
    c.fill_rect({a.x0 - 6, p, a.x0 - 1, p + 1}, frame);
    const std::string s = format_tick(y, ystep, false);
    const double w = Canvas::text_width(s, sc);
    widest = std::max(widest, w);
    c.text(std::round(a.x0 - 10 - w), std::round(p - th / 2), s, label, sc);
  }
  if (!style.xlabel.empty()) {
    const double w = Canvas::text_width(style.xlabel, sc);
    const double y = a.y1 + (style.x_tick_labels ? 18 + th : 10);
    c.text(std::round((a.x0 + a.x1 - w) / 2), std::round(y), style.xlabel, label, sc);
  }
  if (!style.ylabel.empty()) {
    const double w = Canvas::text_width(style.ylabel, sc);
    const double x = std::max(2.0, a.x0 - 26 - widest - th);
    c.text_vertical(std::round(x), std::round((a.y0 + a.y1 + w) / 2), style.ylabel, label, sc);
  }
}

}  // namespace dlt
