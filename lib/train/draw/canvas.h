// A small RGB raster for report plots: anti-aliased lines and markers, stb_easy_font text,
// axes with "nice" ticks, and an atomic PNG writer. Shared by the progress and Pareto plots;
// deliberately not a general plotting library (no fills under curves, no log axes).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlt {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};
// a mixed toward b by t (0: a, 1: b); e.g. mix(colour, white, 0.6) for a light variant.
Rgb mix(Rgb a, Rgb b, double t);

// Pixel rectangle, inclusive-exclusive: x0 <= x < x1, y0 <= y < y1.
struct Rect {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

class Canvas {
 public:
  Canvas(int width, int height, Rgb background);

  int width() const { return width_; }
  int height() const { return height_; }
  const std::vector<uint8_t>& pixels() const { return pixels_; }  // (H, W, 3) RGB
  Rgb pixel(int x, int y) const;

  // Drawing is limited to the clip rectangle (the whole canvas by default).
  void set_clip(const Rect& r);
  void reset_clip();

  // Blends c over pixel (x, y) with coverage a in [0, 1]; ignores pixels outside the clip.
  void blend(int x, int y, Rgb c, double a);
  void fill_rect(const Rect& r, Rgb c);  // fractional edges are anti-aliased
  void stroke_rect(const Rect& r, Rgb c, double width = 1.0);
  // Anti-aliased segment; endpoints may lie far outside the canvas (they are clipped).
  // dash > 0 draws dash-long pieces separated by dash-long gaps, starting at phase.
  void line(double x0, double y0, double x1, double y1, Rgb c, double width = 1.0, double dash = 0.0,
            double phase = 0.0);
  // Connected segments through (xs[i], ys[i]); the dash pattern continues across vertices.
  void polyline(const std::vector<double>& xs, const std::vector<double>& ys, Rgb c, double width = 1.0,
                double dash = 0.0);
  void disc(double cx, double cy, double radius, Rgb c);

  // stb_easy_font text, `scale` pixels per font unit. (x, y) is the top-left corner;
  // vertical text runs bottom-to-top with (x, y) its bottom-left corner.
  void text(double x, double y, const std::string& s, Rgb c, double scale = 2.0);
  void text_vertical(double x, double y, const std::string& s, Rgb c, double scale = 2.0);
  static double text_width(const std::string& s, double scale = 2.0);
  static double text_height(double scale = 2.0);  // height of one line of capitals

  // Writes a PNG to path + ".tmp", then renames it onto path. Throws Error naming the path.
  void write_png(const std::string& path) const;

 private:
  int width_, height_;
  std::vector<uint8_t> pixels_;
  Rect clip_;
};

// Up to about max_ticks "nice" values (1, 2, 5 x 10^k steps) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int max_ticks);
// The step nice_ticks uses; lo and hi rounded outward to it give a tidy axis range.
double nice_step(double lo, double hi, int max_ticks);
// Tick label with as many decimals as the step needs; si_suffix uses k/M/G for large values.
std::string format_tick(double v, double step, bool si_suffix = false);

// A data-to-pixel mapping for one plot panel, plus its frame, grid and labels.
struct Axes {
  Rect area;  // pixel rectangle of the data region
  double xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  double px(double x) const;  // data x -> pixel x
  double py(double y) const;  // data y -> pixel y (up is larger y)
};

struct AxesStyle {
  std::string xlabel, ylabel;
  bool x_tick_labels = true;
  bool x_si_suffix = false;  // tick labels like 1.5M
  int max_xticks = 8, max_yticks = 6;
  double text_scale = 2.0;
};

// Draws the grid, frame, ticks, tick labels and axis titles (not the data).
void draw_axes(Canvas& c, const Axes& ax, const AxesStyle& style);

}  // namespace dlt
