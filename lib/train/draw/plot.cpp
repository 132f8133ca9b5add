// write_progress_png: lays out two panels (accuracy, loss) that share the iteration axis, each
// with a legend and the last values in the right-hand column, the learning rate over the loss
// panel, and the info panel below them.
// Drawing primitives: canvas.h.
#include "train/draw/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "train/progress.h"

namespace dlt {
namespace {

const Rgb kWhite{255, 255, 255}, kBlack{0, 0, 0}, kText{30, 30, 30};
const Rgb kEpochColour{170, 170, 195}, kInfoLabel{110, 110, 110}, kRule{200, 200, 200};
constexpr double kScale = 2.0;  // stb_easy_font units -> pixels
constexpr double kPlotLeft = 110, kPlotRight = 760, kLegendLeft = 780;
constexpr double kValDash = 6, kMarkerRadius = 4;

struct XY {
  std::vector<double> x, y;
};

// Pairs (x[i], y[i]) where both are finite, in input order.
XY finite_pairs(const std::vector<double>& x, const std::vector<double>& y) {
  XY out;
  const size_t n = std::min(x.size(), y.size());
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(x[i]) && std::isfinite(y[i])) {
      out.x.push_back(x[i]);
      out.y.push_back(y[i]);
    }
  return out;
}

// Runs of consecutive finite pairs: a non-finite value ends one, so the line joining the
// points of a run never bridges a missing check.
std::vector<XY> finite_runs(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<XY> runs(1);
  const size_t n = std::min(x.size(), y.size());
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(x[i]) && std::isfinite(y[i])) {
      runs.back().x.push_back(x[i]);
      runs.back().y.push_back(y[i]);
    } else if (!runs.back().x.empty()) {
      runs.emplace_back();
    }
  if (runs.back().x.empty()) runs.pop_back();
  return runs;
}

XY to_pixels(const Axes& ax, const XY& d) {
  XY p;
  for (size_t i = 0; i < d.x.size(); ++i) {
    p.x.push_back(ax.px(d.x[i]));
    p.y.push_back(ax.py(d.y[i]));
  }
  return p;
}

std::string fit_text(std::string s, double max_width) {
  if (Canvas::text_width(s, kScale) <= max_width) return s;
  while (!s.empty() && Canvas::text_width(s + "...", kScale) > max_width) s.pop_back();
  return s + "...";
}

// A validation metric's line in the accuracy panel.
struct MetricLine {
  std::string name;
  Rgb colour;
  XY points;             // finite values, in percent
  std::vector<XY> runs;  // consecutive checks, joined
};

struct Panel {
  std::string ylabel, unit;  // unit: "%" for accuracy, "" for loss
  Rgb colour;
  XY raw, val;               // val: every finite validation point (markers)
  std::vector<XY> val_runs;  // the consecutive ones, joined by the dashed line
  double ymin, ymax;
  std::vector<MetricLine> metrics = {};
};

enum class Sample { kThick, kThin, kDashedMarker, kEpoch };

void legend_entry(Canvas& c, double x, double y, Sample kind, Rgb colour, const std::string& label) {
  const double mid = y + Canvas::text_height(kScale) / 2;
  switch (kind) {
    case Sample::kThick:
      c.line(x, mid, x + 32, mid, colour, 2.5);
      break;
    case Sample::kThin:
      c.line(x, mid, x + 32, mid, colour, 1.0);
      break;
    case Sample::kDashedMarker:
      c.line(x, mid, x + 32, mid, colour, 1.5, kValDash);
      c.disc(x + 16, mid, kMarkerRadius, colour);
      break;
    case Sample::kEpoch:
      c.fill_rect({x + 15, y - 3, x + 16, y + Canvas::text_height(kScale) + 3}, colour);
      break;
  }
  c.text(x + 42, y, label, kText, kScale);
}

std::string format_value(double v, const std::string& unit) {
  char buf[48];
  if (unit == "%")
    std::snprintf(buf, sizeof buf, "%.2f%%", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// Returns the y of the legend column's next free row.
double draw_panel(Canvas& c, const Axes& ax, const Panel& p, const std::vector<double>& epochs, bool x_title) {
  AxesStyle style;
  style.ylabel = p.ylabel;
  style.xlabel = x_title ? "Iteration" : "";
  style.text_scale = kScale;
  draw_axes(c, ax, style);

  c.set_clip(ax.area);
  for (double e : epochs)
    c.fill_rect({std::round(ax.px(e)), ax.area.y0, std::round(ax.px(e)) + 1, ax.area.y1}, kEpochColour);
  const XY raw = to_pixels(ax, p.raw);
  // Smooth what the axis can show, so that one exploding value lifts the curve to the top of
  // the panel for a while instead of pushing it off the chart for the rest of the run.
  std::vector<double> shown = p.raw.y;
  for (double& v : shown) v = std::clamp(v, ax.ymin, ax.ymax);
  // MATLAB-like 0.6 for sparse runs; for dense ones an average over about three pixels.
  const double per_pixel = static_cast<double>(shown.size()) / (ax.area.x1 - ax.area.x0);
  const double factor = std::max(kSmoothingFactor, 1 - 1 / (3 * per_pixel + 1e-12));
  const XY smooth = to_pixels(ax, {p.raw.x, smooth_ema(shown, factor)});
  c.polyline(raw.x, raw.y, mix(p.colour, kWhite, 0.6), 1.25);
  c.polyline(smooth.x, smooth.y, p.colour, 2.0);
  if (raw.x.size() == 1) c.disc(raw.x[0], raw.y[0], 3, p.colour);
  for (const XY& run : p.val_runs) {
    const XY line = to_pixels(ax, run);
    c.polyline(line.x, line.y, kBlack, 1.5, kValDash);
  }
  for (const MetricLine& m : p.metrics) {
    for (const XY& run : m.runs) {
      const XY line = to_pixels(ax, run);
      c.polyline(line.x, line.y, m.colour, 1.5, kValDash);
    }
  }
  const XY val = to_pixels(ax, p.val);
  c.set_clip({ax.area.x0 - kMarkerRadius - 1, ax.area.y0 - kMarkerRadius - 1, ax.area.x1 + kMarkerRadius + 1,
              ax.area.y1 + kMarkerRadius + 1});
  for (size_t i = 0; i < val.x.size(); ++i)
    if (p.val.y[i] >= ax.ymin && p.val.y[i] <= ax.ymax) c.disc(val.x[i], val.y[i], kMarkerRadius, kBlack);
  for (const MetricLine& m : p.metrics) {
    const XY px = to_pixels(ax, m.points);
    for (size_t i = 0; i < px.x.size(); ++i)
      if (m.points.y[i] >= ax.ymin && m.points.y[i] <= ax.ymax) c.disc(px.x[i], px.y[i], kMarkerRadius - 1, m.colour);
  }
  c.reset_clip();

  if (p.raw.x.empty() && p.val.x.empty()) {
    const std::string msg = "No data";
    c.text(std::round((ax.area.x0 + ax.area.x1 - Canvas::text_width(msg, kScale)) / 2),
           std::round((ax.area.y0 + ax.area.y1) / 2 - 7), msg, kText, kScale);
  }

  // Legend and last values in the right-hand column, one row every 26 pixels.
  double y = ax.area.y0 + 4;
  auto entry = [&](Sample kind, Rgb colour, const std::string& label) {
    legend_entry(c, kLegendLeft, y, kind, colour, label);
    y += 26;
  };
  auto value = [&](const std::string& label, double v) {
    c.text(kLegendLeft, y, label + format_value(v, p.unit), kText, kScale);
    y += 26;
  };
  if (!p.raw.x.empty()) {
    entry(Sample::kThick, p.colour, "Smoothed");
    entry(Sample::kThin, mix(p.colour, kWhite, 0.6), "Mini-batch");
  }
  if (!p.val.x.empty()) entry(Sample::kDashedMarker, kBlack, "Validation");
  if (!epochs.empty()) entry(Sample::kEpoch, kEpochColour, "Epoch start");
  y += 12;
  if (!p.raw.y.empty()) value("Last: ", p.raw.y.back());
  if (!p.val.y.empty()) value("Val:  ", p.val.y.back());
  // The metrics: a line sample each, with the last value as a fraction (rows of 20 pixels:
  // below the panel's bottom is the free strip above the next panel).
  if (!p.metrics.empty()) y += 4;
  for (const MetricLine& m : p.metrics) {
    char last[32] = "";
    if (!m.points.y.empty()) std::snprintf(last, sizeof last, " %.4f", m.points.y.back() / 100);
    legend_entry(c, kLegendLeft, y, Sample::kDashedMarker, m.colour, m.name + last);
    y += 20;
  }
  return y;
}

// The learning rate over `panel` on its own scale (kLearnRateColour in plot.h), its legend
// entry and last value from legend row y.
void draw_learn_rate(Canvas& c, const Axes& panel, const XY& rate, double y) {
  if (rate.x.empty()) return;
  double top = 0;
  for (double v : rate.y) top = std::max(top, v);
  if (!(top > 0)) top = 1;
  const Axes ax{panel.area, panel.xmin, panel.xmax, 0, top / 0.9};
  const XY line = to_pixels(ax, rate);
  c.set_clip(ax.area);
  c.polyline(line.x, line.y, kLearnRateColour, 2.0);
  if (line.x.size() == 1) c.disc(line.x[0], line.y[0], 3, kLearnRateColour);
  c.reset_clip();
  legend_entry(c, kLegendLeft, y + 12, Sample::kThick, kLearnRateColour, "Learn rate");
  c.text(kLegendLeft, y + 38, "Top:  " + format_value(top, ""), kText, kScale);
  c.text(kLegendLeft, y + 64, "LR:   " + format_value(rate.y.back(), ""), kText, kScale);
}

// Every stride-th epoch start gets a line and every label_stride-th epoch a centred label, with
// strides from 1, 2, 5, 10, 20, 50... chosen so that lines and labels do not crowd.
struct EpochMarks {
  std::vector<double> lines;                           // iterations
  std::vector<std::pair<double, std::string>> labels;  // pixel x centre, text
};

int64_t crowd_stride(double need, double have) {
  for (int64_t mag = 1;; mag *= 10)
    for (int64_t m : {1, 2, 5})
      if (m * mag * have >= need || mag > 1000000000) return m * mag;
}

EpochMarks epoch_marks(const Axes& ax, const std::vector<double>& starts, double first_iteration) {
  EpochMarks marks;
  struct Band {
    size_t epoch;  // 0-based
    double x0, x1;
  };
  std::vector<Band> bands;
  for (size_t k = 0; k < starts.size(); ++k) {
    const double b0 = std::max(starts[k], ax.xmin);
    const double b1 = std::min(k + 1 < starts.size() ? starts[k + 1] : ax.xmax, ax.xmax);
    if (b1 > b0) bands.push_back({k, ax.px(b0), ax.px(b1)});
  }
  if (bands.empty()) return marks;
  // Narrowest whole band: the first and last may be cut by the axis ends.
  double narrowest = INFINITY;
  for (size_t i = 0; i < bands.size(); ++i)
    if (bands.size() <= 2 || (i > 0 && i + 1 < bands.size()))
      narrowest = std::min(narrowest, bands[i].x1 - bands[i].x0);
  const int64_t line_stride = crowd_stride(6, narrowest);
  for (const Band& b : bands) {
    const double start = starts[b.epoch];
    if (start > first_iteration && start <= ax.xmax && b.epoch % line_stride == 0) marks.lines.push_back(start);
  }
  bool words = true;
  for (const Band& b : bands)
    words = words && Canvas::text_width("Epoch " + std::to_string(b.epoch + 1), kScale) + 8 <= b.x1 - b.x0;
  const double widest = Canvas::text_width(std::to_string(bands.back().epoch + 1), kScale);
  const int64_t label_stride = words ? 1 : crowd_stride(widest + 8, narrowest);
  for (const Band& b : bands) {
    const size_t number = b.epoch + 1;
    if (number % label_stride != 0 && label_stride > 1) continue;
    const std::string text = (words ? "Epoch " : "") + std::to_string(number);
    if (label_stride == 1 && Canvas::text_width(text, kScale) + 8 > b.x1 - b.x0) continue;
    marks.labels.push_back({(b.x0 + b.x1) / 2, text});
  }
  return marks;
}

void draw_epoch_labels(Canvas& c, const EpochMarks& marks, double y) {
  for (const auto& [centre, text] : marks.labels)
    c.text(std::round(centre - Canvas::text_width(text, kScale) / 2), y, text, kEpochColour, kScale);
}

// The title centred on the top line; the note, if any, right after it in kNoteColour.
void draw_title(Canvas& c, const std::string& title_text, const std::string& note_text) {
  const double room = kProgressWidth - 20, gap = 16;
  const std::string title = fit_text(title_text, room);
  std::string note;
  const double title_width = Canvas::text_width(title, kScale);
  if (!note_text.empty() && title_width + gap + Canvas::text_width("...", kScale) <= room)
    note = fit_text(note_text, room - title_width - gap);
  const double width = title_width + (note.empty() ? 0 : gap + Canvas::text_width(note, kScale));
  const double x = std::round((kProgressWidth - width) / 2);
  c.text(x, 12, title, kText, kScale);
  if (!note.empty()) c.text(x + title_width + gap, 12, note, kNoteColour, kScale);
}

// `s` in lines at most max_width wide, broken at spaces (a word wider than a line is cut).
std::vector<std::string> wrap_text(const std::string& s, double max_width) {
  std::vector<std::string> lines;
  std::string line;
  size_t at = 0;
  while (at < s.size()) {
    size_t end = s.find(' ', at);
    if (end == std::string::npos) end = s.size();
    const std::string word = s.substr(at, end - at);
    at = end + 1;
    const std::string joined = line.empty() ? word : line + " " + word;
    if (line.empty() || Canvas::text_width(joined, kScale) <= max_width) {
      line = joined;
    } else {
      lines.push_back(fit_text(line, max_width));
      line = word;
    }
  }
  lines.push_back(fit_text(line, max_width));
  return lines;
}

// The info panel's texts placed: the lines that are not wide two to a row (label in grey,
// values aligned per column), then each wide line on its own rows, its value wrapped.
struct InfoText {
  double x, y;
  std::string text;
  bool label;
};
constexpr double kInfoRow = 24, kInfoFirst = kInfoTop + 12, kInfoRight = kProgressWidth - 20;
constexpr double kTextHeight = 14;  // stb_easy_font's glyphs at kScale

std::vector<InfoText> info_layout(const std::vector<InfoLine>& lines) {
  const double columns[2] = {30, kProgressWidth / 2.0 + 10};
  struct Placed {
    const InfoLine* line;
    int column;  // -1: the whole row
  };
  std::vector<Placed> placed;
  for (const InfoLine& l : lines)
    if (!l.wide) placed.push_back({&l, static_cast<int>(placed.size() % 2)});
  const int narrow = static_cast<int>(placed.size());
  for (const InfoLine& l : lines)
    if (l.wide) placed.push_back({&l, -1});
  auto group = [](const Placed& p) { return p.column < 0 ? 0 : p.column; };  // wide lines align with the left
  double label_width[2] = {0, 0};  // the widest label of each column, to align its values
  for (const Placed& p : placed)
    label_width[group(p)] = std::max(label_width[group(p)], Canvas::text_width(p.line->label + ":", kScale));
  std::vector<InfoText> out;
  int row = 0;
  for (size_t i = 0; i < placed.size(); ++i) {
    const Placed& p = placed[i];
    if (p.column < 0 && static_cast<int>(i) == narrow) row = (narrow + 1) / 2;
    if (p.column >= 0) row = static_cast<int>(i) / 2;
    const double x = p.column < 0 ? columns[0] : columns[p.column];
    const double value_x = x + label_width[group(p)] + 12;
    const double end = p.column == 0 ? columns[1] - 20 : kInfoRight;
    out.push_back({x, kInfoFirst + row * kInfoRow, p.line->label + ":", true});
    if (p.column >= 0) {
      out.push_back({value_x, kInfoFirst + row * kInfoRow, fit_text(p.line->value, end - value_x), false});
      continue;
    }
    for (const std::string& l : wrap_text(p.line->value, end - value_x))
      out.push_back({value_x, kInfoFirst + row++ * kInfoRow, l, false});
  }
  return out;
}

// The image's height: kProgressHeight, or more when wrapped lines need it.
int progress_height(const std::vector<InfoText>& texts) {
  double bottom = 0;
  for (const InfoText& t : texts) bottom = std::max(bottom, t.y + kInfoRow + kTextHeight);
  return std::max(kProgressHeight, static_cast<int>(std::ceil(bottom)));
}

// The info panel below kInfoTop: a rule, then the placed texts.
void draw_info(Canvas& c, const std::vector<InfoText>& texts) {
  if (texts.empty()) return;
  c.fill_rect({20, kInfoTop, kProgressWidth - 20.0, kInfoTop + 1.0}, kRule);
  for (const InfoText& t : texts) c.text(t.x, t.y, t.text, t.label ? kInfoLabel : kText, kScale);
}

}  // namespace

std::vector<InfoLine> progress_info_lines(const ProgressInfo& info) {
  std::vector<InfoLine> out;
  auto of = [](int64_t a, int64_t b) { return std::to_string(a) + " of " + std::to_string(b); };
  if (!info.start_time.empty()) out.push_back({"Start time", info.start_time});
  if (info.elapsed_seconds >= 0) out.push_back({"Elapsed time", format_hms(info.elapsed_seconds)});
  if (info.max_epochs > 0) out.push_back({"Epoch", of(info.epoch, info.max_epochs)});
  if (info.max_iterations > 0) {
    std::string v = of(info.iteration, info.max_iterations);
    if (info.iterations_per_epoch > 0) v += " (" + std::to_string(info.iterations_per_epoch) + " per epoch)";
    out.push_back({"Iteration", v});
  }
  if (info.learn_rate >= 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", info.learn_rate);
    out.push_back({"Learning rate", buf});
  }
  if (!info.hardware.empty()) out.push_back({"Hardware", info.hardware, true});
  if (info.status) {
    std::string v = status_phrase(*info.status);
    if (*info.status != RunStatus::kRunning && !info.stop_reason.empty()) v += ": " + info.stop_reason;
    out.push_back({"Status", v, true});
  }
  return out;
}

std::vector<double> smooth_ema(const std::vector<double>& values, double factor) {
  std::vector<double> out(values.size(), NAN);
  double avg = 0, weight = 1;  // weight: factor^(number of finite values seen)
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) continue;
    avg = factor * avg + (1 - factor) * values[i];
    weight *= factor;
    out[i] = avg / (1 - weight);
  }
  return out;
}

double robust_max(std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }), values.end());
  if (values.empty()) return 1;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const double q99 = values[static_cast<size_t>(0.99 * (n - 1))], median = values[(n - 1) / 2];
  const double cap = std::max(10 * q99, 20 * median);
  if (!(cap > 0)) return values.back();
  auto it = std::upper_bound(values.begin(), values.end(), cap);
  return it == values.begin() ? values.back() : *(it - 1);
}

void write_progress_png(const std::string& path, const ProgressSeries& s) {
  const std::vector<InfoText> info = info_layout(progress_info_lines(s.info));
  Canvas c(kProgressWidth, progress_height(info), kWhite);
  Panel acc{s.metric_label,
            s.metric_percent ? "%" : "",
            kAccuracyColour,
            finite_pairs(s.iteration, s.minibatch_accuracy),
            finite_pairs(s.val_iteration, s.val_accuracy),
            finite_runs(s.val_iteration, s.val_accuracy),
            0,
            100};
  for (size_t i = 0; i < s.val_metrics.size(); ++i) {
    std::vector<double> percent = s.val_metrics[i].second;
    if (s.metric_percent)
      for (double& v : percent) v *= 100;
    acc.metrics.push_back({s.val_metrics[i].first, kMetricColours[i % std::size(kMetricColours)],
                           finite_pairs(s.val_iteration, percent), finite_runs(s.val_iteration, percent)});
  }
  Panel loss{"Loss",
             "",
             kLossColour,
             finite_pairs(s.iteration, s.minibatch_loss),
             finite_pairs(s.val_iteration, s.val_loss),
             finite_runs(s.val_iteration, s.val_loss),
             0,
             1};

  // Shared iteration axis: from 0 (or the first iteration when training resumed) to the last.
  double xlo = INFINITY, xhi = -INFINITY;
  for (const XY* d : {&acc.raw, &acc.val, &loss.raw, &loss.val})
    for (double x : d->x) xlo = std::min(xlo, x), xhi = std::max(xhi, x);
  if (!std::isfinite(xlo)) xlo = 0, xhi = 1;
  const double first_iteration = xlo;
  if (xlo >= 0 && xlo <= 1) xlo = 0;
  xhi = std::max(xhi, xlo + 5);  // at least 5 iterations wide, so that ticks are integers
  const double xstep = nice_step(xlo, xhi, AxesStyle{}.max_xticks);
  xlo = std::floor(xlo / xstep) * xstep;

  std::vector<double> all_loss = loss.raw.y;
  all_loss.insert(all_loss.end(), loss.val.y.begin(), loss.val.y.end());
  double lo = 0;
  for (double v : all_loss) lo = std::min(lo, v);
  double hi = robust_max(all_loss);
  if (!(hi > lo)) hi = lo + 1;
  const double step = nice_step(lo, hi, 6);
  loss.ymin = std::floor(lo / step) * step;
  loss.ymax = std::ceil(hi / step - 1e-9) * step;

  if (!s.metric_percent) {  // RMSE or F1: the panel spans its values, from 0
    std::vector<double> all = acc.raw.y;
    all.insert(all.end(), acc.val.y.begin(), acc.val.y.end());
    double top = robust_max(all);
    if (!(top > 0)) top = 1;
    const double ystep = nice_step(0, top, 6);
    acc.ymin = 0;
    acc.ymax = std::ceil(top / ystep - 1e-9) * ystep;
  }

  std::vector<double> epoch_starts(s.epoch_start_iterations.begin(), s.epoch_start_iterations.end());
  std::sort(epoch_starts.begin(), epoch_starts.end());

  draw_title(c, s.title.empty() ? "Training progress" : s.title, s.title_note);

  const Axes top{{kPlotLeft, 64, kPlotRight, 310}, xlo, xhi, acc.ymin, acc.ymax};
  const Axes bottom{{kPlotLeft, 372, kPlotRight, 618}, xlo, xhi, loss.ymin, loss.ymax};
  const EpochMarks marks = epoch_marks(top, epoch_starts, first_iteration);
  draw_epoch_labels(c, marks, 42);
  draw_panel(c, top, acc, marks.lines, false);
  const double legend_y = draw_panel(c, bottom, loss, marks.lines, true);
  draw_learn_rate(c, bottom, finite_pairs(s.iteration, s.learn_rate), legend_y);
  draw_info(c, info);
  c.write_png(path);
}

}  // namespace dlt
