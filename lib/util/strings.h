// Small string helpers: did-you-mean suggestions, joining, case-insensitive compare.
#pragma once
#include <string>
#include <vector>

namespace dlt {

// Levenshtein distance, case-insensitive.
size_t edit_distance(const std::string& a, const std::string& b);
// " (did you mean 'X'?)" for the closest candidate within a reasonable distance, else "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);
// Up to `most` close names: the closest if one letter is off, else those starting with `word` (4+
// letters), else the closest within did_you_mean's: " (did you mean 'A', 'B' or 'C'?)"; "" if none.
std::string did_you_mean_some(const std::string& word, const std::vector<std::string>& candidates, size_t most);
std::string join(const std::vector<std::string>& items, const std::string& sep);
bool iequals(const std::string& a, const std::string& b);
std::string to_lower(std::string s);

}  // namespace dlt
