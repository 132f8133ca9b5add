#include "util/strings.h"

#include <algorithm>
#include <cctype>

namespace dlt {

std::string to_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool iequals(const std::string& a, const std::string& b) { return to_lower(a) == to_lower(b); }

size_t edit_distance(const std::string& a0, const std::string& b0) {
  const std::string a = to_lower(a0), b = to_lower(b0);
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  size_t best = std::string::npos;
  std::string best_word;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best) {
      best = d;
      best_word = c;
    }
  }
  size_t limit = std::max<size_t>(2, word.size() / 3);
  if (best_word.empty() || best > limit) return "";
  return " (did you mean '" + best_word + "'?)";
}

std::string did_you_mean_some(const std::string& word, const std::vector<std::string>& candidates, size_t most) {
  size_t best = std::string::npos;
  for (const auto& c : candidates) best = std::min(best, edit_distance(word, c));
  std::vector<std::string> picks;
  if (best > 1 && word.size() >= 4) {  // no one-letter slip: the names that start with the word, shortest first
    for (const auto& c : candidates)
      if (c.size() > word.size() && iequals(c.substr(0, word.size()), word)) picks.push_back(c);
    std::stable_sort(picks.begin(), picks.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
  }
  if (picks.empty() && best <= std::max<size_t>(2, word.size() / 3))  // the closest names, ties in list order
    for (const auto& c : candidates)
      if (edit_distance(word, c) == best) picks.push_back(c);
  if (picks.size() > most) picks.resize(most);
  if (picks.empty()) return "";
  std::string out = " (did you mean ";
  for (size_t i = 0; i < picks.size(); ++i) {
    if (i) out += i + 1 == picks.size() ? " or " : ", ";
    out += "'" + picks[i] + "'";
  }
  return out + "?)";
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

}  // namespace dlt
