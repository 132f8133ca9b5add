// Node origins, value text and strict scalar parsing for the config readers.
#include "config/yaml_helpers.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.h"
#include "util/strings.h"

namespace dlt::cfg {

void Origin::mark_override(const YAML::Node& node, const std::string& what) {
  overrides_.emplace_back(node, what);
  if (node.IsSequence()) {
    for (const auto& child : node) mark_override(child, what);
  } else if (node.IsMap()) {
    for (const auto& kv : node) {
      mark_override(kv.first, what);
      mark_override(kv.second, what);
    }
  }
}

SourceLoc Origin::loc(const YAML::Node& node) const {
  for (const auto& [n, what] : overrides_)
    if (n.is(node)) return SourceLoc{what, 0};
  YAML::Mark m = node.Mark();
  if (m.is_null()) return SourceLoc{file_, 0};
  return SourceLoc{file_, m.line + 1};  // yaml-cpp lines are 0-based
}

SourceLoc Origin::loc(const YAML::Node& key, const YAML::Node& value) const {
  for (const auto& [n, what] : overrides_)
    if (n.is(value)) return SourceLoc{what, 0};
  SourceLoc k = loc(key);
  return k.line > 0 ? k : loc(value);
}

std::vector<Entry> map_entries(const YAML::Node& node, const Origin& origin, const std::string& what) {
  if (!node.IsMap())
    throw ConfigError(origin.at(node) + what + " must be a map of key: value lines, got '" + node_text(node) + "'");
  std::vector<Entry> out;
  std::set<std::string> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar())
      throw ConfigError(origin.at(kv.first) + "keys in " + what + " must be plain words, got '" + node_text(kv.first) +
                        "'");
    std::string key = kv.first.Scalar();
    if (!seen.insert(key).second)
      throw ConfigError(origin.at(kv.first) + "duplicate key '" + key + "' in " + what + " (give each key once)");
    out.push_back(Entry{key, kv.first, kv.second});
  }
  return out;
}

std::string node_text(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "";
  if (node.IsScalar()) return node.Scalar();
  std::vector<std::string> parts;
  if (node.IsSequence()) {
    for (const auto& child : node) parts.push_back(node_text(child));
    std::string out = "[";  // built step by step: GCC 12 warns falsely on "[" + string&&
    out += join(parts, ", ");
    out += "]";
    return out;
  }
  for (const auto& kv : node) parts.push_back(node_text(kv.first) + ": " + node_text(kv.second));
  std::string out = "{";
  out += join(parts, ", ");
  out += "}";
  return out;
}

std::vector<YAML::Node> list_items(const YAML::Node& seq) {
  std::vector<YAML::Node> out;
  for (const auto& n : seq) {
    std::vector<std::string> parts;
    if (n.IsScalar() && n.Tag() == "?") {  // "?": plain, not quoted
      std::string word;
      for (std::istringstream in(n.Scalar()); in >> word;) parts.push_back(word);
    }
    double d;
    bool numbers = parts.size() > 1;
    for (const auto& p : parts) numbers = numbers && parse_double(p, &d);
    if (!numbers) {
      out.push_back(n);
      continue;
    }
    for (const auto& p : parts) out.emplace_back(p);
  }
  return out;
}

namespace {

// 1-based number of the first line, up to `last` (0: any), whose indentation holds a tab
// before content other than a comment; 0 when none. Asked only after a parse error: a tab
// inside a flow list is valid YAML, while a tab-indented block gets yaml-cpp's generic
// "illegal map value" or the like.
int first_tab_indented_line(const std::string& text, int last) {
  int line = 1;
  for (size_t pos = 0; pos < text.size() && (last == 0 || line <= last); ++line) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    size_t content = text.find_first_not_of(" \t", pos);
    bool blank = content >= end || text[content] == '\r' || text[content] == '#';
    if (!blank && text.find('\t', pos) < content) return line;
    pos = end + 1;
  }
  return 0;
}

// An unclosed '[' or '{': yaml-cpp reads on through the lines after it and reports where it
// gave up ("end of map flow not found", "illegal block entry"), lines below the bracket that
// is missing its closer. Scans the text up to the error position `end` and returns the
// innermost flow bracket still open there (its 1-based line and the character), or line 0.
// Quotes and comments are skipped.
std::pair<int, char> open_flow_bracket(const std::string& text, size_t end) {
  std::vector<std::pair<int, char>> open;
  int line = 1;
  char quote = 0;    // inside '...' or "..."
  char last = '\n';  // the last character that is not a space or tab
  bool comment = false;
  end = std::min(end, text.size());
  for (size_t i = 0; i < end; ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      comment = false;
      if (!quote && open.empty()) last = '\n';
      continue;
    }
    if (comment) continue;
    if (quote) {
      if (quote == '"' && c == '\\')
        ++i;  // \" inside "..."
      else if (quote == '\'' && c == '\'' && i + 1 < end && text[i + 1] == '\'')
        ++i;  // '' inside '...'
      else if (c == quote)
        quote = 0;
      last = c;
      continue;
    }
    const bool after_space = i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n';
    if (c == '#' && after_space) {
      comment = true;
      continue;
    }
    // A quote or bracket starts a node only where a node may start: at the start of a line
    // (or of the text), after ':', '-' or '?', and inside a flow after '[', '{' or ','.
    const bool node_start = std::string_view(":-?\n[{,").find(last) != std::string_view::npos;
    if ((c == '\'' || c == '"') && node_start)
      quote = c;
    else if ((c == '[' || c == '{') && node_start)
      open.emplace_back(line, c);
    else if ((c == ']' || c == '}') && !open.empty())
      open.pop_back();
    if (c != ' ' && c != '\t') last = c;
  }
  return open.empty() ? std::pair<int, char>{0, 0} : open.back();
}

}  // namespace

YAML::Node parse_yaml(const std::string& text, const std::string& origin) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    std::string where = origin;
    int tab_line = first_tab_indented_line(text, e.mark.is_null() ? 0 : e.mark.line + 1);
    if (tab_line > 0)
      throw ConfigError(origin + ":" + std::to_string(tab_line) +
                        ": a tab in the indentation; YAML indents with spaces (replace the tab with spaces)");
    if (!e.mark.is_null()) {
      const auto [line, bracket] = open_flow_bracket(text, static_cast<size_t>(std::max(e.mark.pos, 0)));
      if (line > 0 && line < e.mark.line + 1)
        throw ConfigError(origin + ":" + std::to_string(line) + ": YAML syntax error: the '" + bracket +
                          "' on this line is never closed (yaml-cpp gave up at line " +
                          std::to_string(e.mark.line + 1) + ": " + e.msg + "; close it with '" +
                          (bracket == '[' ? ']' : '}') + "')");
      where += ":" + std::to_string(e.mark.line + 1);
    }
    throw ConfigError(where + ": YAML syntax error: " + e.msg + " (check indentation, colons, quotes and brackets)");
  }
}

}  // namespace dlt::cfg
