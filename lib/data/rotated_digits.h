// MATLAB's "Train Convolutional Neural Network for Regression" data (DigitsDataTrain /
// DigitsDataTest): MNIST digits, each rotated by a random angle, with the angle as the
// response to learn. Written as PNGs and CSV tables (data/table.h's format) by
// `dltrain make-dataset rotated-digits`. Deterministic from the seed.
#pragma once
#include <cstdint>
#include <string>

#include "data/image.h"

namespace dlt {

// `degrees` counter-clockwise as displayed (MATLAB's imrotate(I, degrees, 'bilinear', 'crop')
// convention) about the image centre ((w-1)/2, (h-1)/2): bilinear, black where the source falls
// outside the image, same size.
Image rotate_image(const Image& image, double degrees);

struct RotatedDigitsOptions {
  std::string from;  // folder with train-images-idx3-ubyte and t10k-images-idx3-ubyte (.gz or not)
  int count = 5000;  // images in each of train and test (the first `count` of each file)
  uint64_t seed = 0;
  double max_angle = 45;  // angles uniform in [-max_angle, max_angle], rounded to 0.001 degree
};
// Sample i of part p (0 train, 1 test) is rotated by an angle drawn from Rng::derive(seed,
// {kRotatedDigitsStream, p, i}).
constexpr uint64_t kRotatedDigitsStream = 0x40747;
// Writes DIR/train/NNNNN.png and DIR/test/NNNNN.png (28x28 grey for MNIST) and DIR/train.csv,
// DIR/test.csv with the header File,Angle (File relative to DIR, Angle in degrees as written
// with three decimals: the exact angle the image was rotated by). Every file goes through a
// temporary name and a rename. Throws UsageError for out-of-range options (count above what the
// files hold) and DataError for unreadable IDX files or an unwritable folder. Returns the
// number of images written.
int64_t write_rotated_digits(const std::string& dir, const RotatedDigitsOptions& options);

}  // namespace dlt
