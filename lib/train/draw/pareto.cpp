// pareto_front (plain O(n^2) dominance check: sweeps have tens of points) and the scatter plot.
#include "train/draw/pareto.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "train/draw/canvas.h"

namespace dlt {
namespace {

const Rgb kWhite{255, 255, 255}, kText{30, 30, 30};
const Rgb kPointColour{0, 114, 189}, kFrontColour{215, 25, 28};
constexpr int kWidth = 900, kHeight = 650;
constexpr double kScale = 2.0, kRadius = 5;
constexpr size_t kMaxLabelled = 40, kMaxLabelChars = 24;

bool finite_point(const ParetoPoint& p) { return std::isfinite(p.memory_bytes) && std::isfinite(p.accuracy); }

// [lo, hi] padded by 8% of the span (or of the value when the span is zero), rounded outward
// to the tick step; never below zero when the data are not.
void axis_range(double lo, double hi, double& out_lo, double& out_hi) {
  double pad = (hi - lo) * 0.08;
  if (!(pad > 0)) pad = std::max(std::abs(hi) * 0.1, 1.0);
  double a = lo - pad, b = hi + pad;
  if (lo >= 0) a = std::max(a, 0.0);
  const double step = nice_step(a, b, 7);
  out_lo = std::floor(a / step) * step;
  out_hi = std::ceil(b / step) * step;
}

// A sweep point name split into its parts: the text before the first key=value (a config
// name, or the whole name), and the key=value parts. A key is the run of characters other
// than '_' before an '='; its value runs up to the '_' that precedes the next key.
struct NameParts {
  std::string prefix;
  std::vector<std::pair<std::string, std::string>> kv;
};

NameParts split_name(const std::string& name) {
  NameParts out;
  std::vector<std::pair<size_t, size_t>> keys;  // [start, '=' position)
  for (size_t eq = name.find('='); eq != std::string::npos; eq = name.find('=', eq + 1)) {
    size_t start = name.rfind('_', eq);
    start = start == std::string::npos ? 0 : start + 1;
    if (start < eq && (keys.empty() || start > keys.back().second)) keys.emplace_back(start, eq);
  }
  if (keys.empty()) {
    out.prefix = name;
    return out;
  }
  out.prefix = name.substr(0, keys[0].first > 0 ? keys[0].first - 1 : 0);
  for (size_t k = 0; k < keys.size(); ++k) {
    const size_t value_start = keys[k].second + 1;
    const size_t value_end = k + 1 < keys.size() ? keys[k + 1].first - 1 : name.size();
    out.kv.emplace_back(name.substr(keys[k].first, keys[k].second - keys[k].first),
                        name.substr(value_start, value_end > value_start ? value_end - value_start : 0));
  }
  return out;
}

std::string shorten_middle(const std::string& s, size_t max_chars) {
  if (s.size() <= max_chars) return s;
  const size_t keep = max_chars - 3, head = keep / 2;
  return s.substr(0, head) + "..." + s.substr(s.size() - (keep - head));
}

}  // namespace

std::vector<std::string> pareto_labels(const std::vector<std::string>& names, std::string* keys) {
  std::vector<NameParts> parts;
  for (const auto& n : names) parts.push_back(split_name(n));
  // Keys every name has, in the first name's order.
  std::vector<std::string> common;
  if (!parts.empty())
    for (const auto& [key, value] : parts[0].kv) {
      bool everywhere = true;
      for (const auto& p : parts) {
        bool has = false;
        for (const auto& kv : p.kv) has = has || kv.first == key;
        everywhere = everywhere && has;
      }
      if (everywhere) common.push_back(key);
    }
  keys->clear();
  for (const auto& k : common) *keys += (keys->empty() ? "" : ", ") + k;
  std::vector<std::string> out;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string label = parts[i].prefix;
    for (const auto& [key, value] : parts[i].kv) {
      const bool shared = std::find(common.begin(), common.end(), key) != common.end();
      label += (label.empty() ? "" : " ") + (shared ? value : key + "=" + value);
    }
    out.push_back(shorten_middle(label, kMaxLabelChars));
  }
  return out;
}

std::vector<size_t> pareto_front(const std::vector<ParetoPoint>& pts, bool lower_is_better) {
  const double sign = lower_is_better ? -1.0 : 1.0;
  std::vector<size_t> front;
  for (size_t i = 0; i < pts.size(); ++i) {
    if (!finite_point(pts[i])) continue;
    bool dominated = false;
    for (size_t j = 0; j < pts.size() && !dominated; ++j) {
      if (j == i || !finite_point(pts[j])) continue;
      const ParetoPoint &a = pts[j], &b = pts[i];
      dominated = a.memory_bytes <= b.memory_bytes && sign * a.accuracy >= sign * b.accuracy &&
                  (a.memory_bytes < b.memory_bytes || sign * a.accuracy > sign * b.accuracy);
    }
    if (!dominated) front.push_back(i);
  }
  std::stable_sort(front.begin(), front.end(),
                   [&pts](size_t a, size_t b) { return pts[a].memory_bytes < pts[b].memory_bytes; });
  return front;
}

void write_pareto_png(const std::string& path, const std::vector<ParetoPoint>& pts, const std::string& title,
                      const std::string& ylabel, bool lower_is_better) {
  Canvas c(kWidth, kHeight, kWhite);
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  size_t n_finite = 0;
  for (const ParetoPoint& p : pts) {
    if (!finite_point(p)) continue;
    ++n_finite;
    xlo = std::min(xlo, p.memory_bytes), xhi = std::max(xhi, p.memory_bytes);
    ylo = std::min(ylo, p.accuracy), yhi = std::max(yhi, p.accuracy);
  }
  if (n_finite == 0) xlo = 0, xhi = 1e6, ylo = 0, yhi = 100;

  Axes ax{{115, 60, kWidth - 35.0, kHeight - 85.0}, 0, 1, 0, 1};
  axis_range(xlo, xhi, ax.xmin, ax.xmax);
  axis_range(ylo, yhi, ax.ymin, ax.ymax);
  if (!lower_is_better && yhi <= 100) ax.ymax = std::min(ax.ymax, 100.0);  // no ticks above 100%
  AxesStyle style;
  style.xlabel = "Memory footprint (bytes)";
  style.ylabel = ylabel;
  style.x_si_suffix = true;
  style.max_xticks = 7;
  style.max_yticks = 7;
  style.text_scale = kScale;
  draw_axes(c, ax, style);

  std::string t = title.empty() ? "Accuracy versus memory footprint" : title;
  while (t.size() > 3 && Canvas::text_width(t, kScale) > kWidth - 20) t.resize(t.size() - 4), t += "...";
  c.text(std::round((kWidth - Canvas::text_width(t, kScale)) / 2), 20, t, kText, kScale);

  const Rect& a = ax.area;
  c.set_clip({a.x0 - kRadius - 1, a.y0 - kRadius - 1, a.x1 + kRadius + 1, a.y1 + kRadius + 1});
  const std::vector<size_t> front = pareto_front(pts, lower_is_better);
  std::vector<double> fx, fy;
  for (size_t i : front) fx.push_back(ax.px(pts[i].memory_bytes)), fy.push_back(ax.py(pts[i].accuracy));
  for (const ParetoPoint& p : pts)
    if (finite_point(p)) c.disc(ax.px(p.memory_bytes), ax.py(p.accuracy), kRadius, kPointColour);
  c.polyline(fx, fy, kFrontColour, 2.5);
  for (size_t k = 0; k < fx.size(); ++k) c.disc(fx[k], fy[k], kRadius + 0.5, kFrontColour);

  c.reset_clip();
  if (n_finite <= kMaxLabelled) {
    std::vector<std::string> names;
    for (const ParetoPoint& p : pts)
      if (finite_point(p)) names.push_back(p.label);
    std::string keys;
    const std::vector<std::string> labels = pareto_labels(names, &keys);
    if (!keys.empty()) {  // what the values in the labels are, under the title
      std::string k = "Labels: " + keys;
      const double small = kScale * 0.75;
      while (k.size() > 3 && Canvas::text_width(k, small) > kWidth - 20) k.resize(k.size() - 4), k += "...";
      c.text(std::round((kWidth - Canvas::text_width(k, small)) / 2), 40, k, kText, small);
    }
    size_t next = 0;
    for (const ParetoPoint& p : pts) {
      if (!finite_point(p)) continue;
      const std::string& s = labels[next++];
      if (s.empty()) continue;
      double x = ax.px(p.memory_bytes) + kRadius + 4;
      if (x + Canvas::text_width(s, kScale) > kWidth - 4)
        x = ax.px(p.memory_bytes) - kRadius - 4 - Canvas::text_width(s, kScale);
      c.text(std::round(x), std::round(ax.py(p.accuracy) - Canvas::text_height(kScale) - 2), s, kText, kScale);
    }
  }
  if (n_finite == 0) {
    const std::string msg = "No data";
    c.text(std::round((a.x0 + a.x1 - Canvas::text_width(msg, kScale)) / 2), std::round((a.y0 + a.y1) / 2), msg, kText,
           kScale);
  }

  // Legend in the corner with the fewest points, preferring the lower right (dominated networks
  // tend to leave it empty).
  const double bw = 205, bh = 60, m = 10;
  const Rect corners[4] = {{a.x1 - m - bw, a.y1 - m - bh, a.x1 - m, a.y1 - m},
                           {a.x0 + m, a.y1 - m - bh, a.x0 + m + bw, a.y1 - m},
                           {a.x1 - m - bw, a.y0 + m, a.x1 - m, a.y0 + m + bh},
                           {a.x0 + m, a.y0 + m, a.x0 + m + bw, a.y0 + m + bh}};
  Rect box = corners[0];
  size_t fewest = SIZE_MAX;
  for (const Rect& r : corners) {
    size_t inside = 0;
    for (const ParetoPoint& p : pts) {
      if (!finite_point(p)) continue;
      const double x = ax.px(p.memory_bytes), y = ax.py(p.accuracy), pad = 3 * kRadius;
      inside += x > r.x0 - pad && x < r.x1 + pad && y > r.y0 - pad && y < r.y1 + pad;
    }
    if (inside < fewest) fewest = inside, box = r;
  }
  c.fill_rect(box, kWhite);
  c.stroke_rect(box, {150, 150, 150});
  c.disc(box.x0 + 22, box.y0 + 19, kRadius, kPointColour);
  c.text(box.x0 + 44, box.y0 + 12, "Network", kText, kScale);
  c.line(box.x0 + 8, box.y0 + 43, box.x0 + 36, box.y0 + 43, kFrontColour, 2.5);
  c.disc(box.x0 + 22, box.y0 + 43, kRadius + 0.5, kFrontColour);
  c.text(box.x0 + 44, box.y0 + 36, "Pareto front", kText, kScale);
  c.write_png(path);
}

}  // namespace dlt
