// Swin's window geometry, shared by windowAttention (layers/window_attention_layer.cpp) and the
// import that reads torchvision's form of it (lib/onnx/onnx_import_window.cpp).
#pragma once
#include <cstdint>
#include <vector>

namespace dlt::window {

// The relative position table's row of tokens i and j of a wh x ww window (tokens row by row):
// (dy + wh - 1)(2 ww - 1) + dx + ww - 1 for their offset (dy, dx).
inline int64_t relative_row(int64_t i, int64_t j, int64_t wh, int64_t ww) {
  const int64_t dy = i / ww - j / ww + wh - 1, dx = i % ww - j % ww + ww - 1;
  return dy * (2 * ww - 1) + dx;
}

// torchvision's shift mask: the padded image (pad_h x pad_w) rolled by (sh, sw) in 3 x 3 regions
// (per shifted dimension: before the last window, the last window's part that stays, the part
// that wrapped around; a dimension not shifted is one region), cut into wh x ww windows row by
// row: (windows, S, S), 0 where tokens i and j of a window lie in the same region, else -100.
inline std::vector<float> shift_mask(int64_t pad_h, int64_t pad_w, int64_t wh, int64_t ww, int64_t sh, int64_t sw) {
  auto region = [](int64_t p, int64_t padded, int64_t win, int64_t shift) {
    return shift == 0 ? 0 : p < padded - win ? 0 : p < padded - shift ? 1 : 2;
  };
  const int64_t seq = wh * ww, per_row = pad_w / ww, windows = (pad_h / wh) * per_row;
  std::vector<float> mask(static_cast<size_t>(windows * seq * seq));
  std::vector<int64_t> id(static_cast<size_t>(seq));
  for (int64_t wnd = 0; wnd < windows; ++wnd) {
    for (int64_t t = 0; t < seq; ++t) {
      const int64_t py = (wnd / per_row) * wh + t / ww, px = (wnd % per_row) * ww + t % ww;
      id[static_cast<size_t>(t)] = region(py, pad_h, wh, sh) * 3 + region(px, pad_w, ww, sw);
    }
    for (int64_t i = 0; i < seq; ++i)
      for (int64_t j = 0; j < seq; ++j)
        mask[static_cast<size_t>((wnd * seq + i) * seq + j)] =
            id[static_cast<size_t>(i)] == id[static_cast<size_t>(j)] ? 0.f : -100.f;
  }
  return mask;
}

}  // namespace dlt::window
