// Regression results for `dltrain predict`: the predicted responses per image and, when the true
// responses are known, the errors per response and over all of them: RMSE (MATLAB's rmse: the
// square root of the mean squared error), MAE (mean absolute error) and MAPE (mean absolute
// percentage error, percent, over the values whose true response is not 0). Formats them as CSV,
// JSON and a text report, as Predictions (metrics.h) does for classification. Host only.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlt {

struct RegressionErrors {
  double rmse = 0, mae = 0;  // NaN without values
  double mape = 0;           // percent; NaN when every true value is 0
  int64_t values = 0;        // the values compared
  int64_t mape_values = 0;   // those whose true value is not 0 (MAPE's denominator)
};

class RegressionPredictions {
 public:
  // One name per response (the model's: the training table's header).
  explicit RegressionPredictions(std::vector<std::string> names);

  // predicted: one value per response; truth: as many, or empty when unknown.
  // Throws std::invalid_argument on a count that is not the number of responses.
  void add(const std::string& path, const std::vector<float>& predicted, const std::vector<float>& truth = {});

  const std::vector<std::string>& names() const { return names_; }
  size_t size() const { return paths_.size(); }
  const std::vector<float>& predicted(size_t i) const { return predicted_[i]; }
  // Some images were added and every one with its true responses.
  bool labelled() const;

  std::vector<RegressionErrors> per_response() const;  // over the images with truth
  RegressionErrors overall() const;                    // over every value of those images

  // path, one column per response, then (labelled) true_<name> per response.
  std::string csv() const;
  std::string json() const;
  // The errors per response and over all (labelled only; "" otherwise).
  std::string report() const;

 private:
  RegressionErrors errors(int64_t response) const;  // -1: all responses
  std::vector<std::string> names_;
  std::vector<std::string> paths_;
  std::vector<std::vector<float>> predicted_, truth_;  // (images, R); truth_ rows empty when unknown
};

}  // namespace dlt
