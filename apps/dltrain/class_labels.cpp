// --label-ids parsing and the choice of LabelIDs for dltrain segment.
#include "class_labels.h"

#include <cctype>
#include <cstdio>

#include "config/config.h"
#include "util/error.h"

namespace dlt::app {

namespace {

struct Node {
  bool list = false;
  int64_t value = 0;
  std::vector<Node> items;
};

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}
  Node parse() {
    Node n = item();
    skip();
    if (pos_ != s_.size()) fail("unexpected '" + std::string(1, s_[pos_]) + "'");
    return n;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw UsageError("--label-ids '" + s_ + "': " + what + " at character " + std::to_string(pos_ + 1) +
                     " (write one value per class: [0, 1, 2] or [[128, 0, 0], [0, 128, 0]])");
  }
  Node item() {
    skip();
    Node n;
    if (pos_ < s_.size() && s_[pos_] == '[') {
      ++pos_;
      n.list = true;
      skip();
      if (pos_ < s_.size() && s_[pos_] == ']') fail("empty list");
      while (true) {
        n.items.push_back(item());
        skip();
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (pos_ < s_.size() && s_[pos_] == ']') {
          ++pos_;
          break;
        }
        fail("expected ',' or ']'");
      }
      return n;
    }
    size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (start == pos_ || pos_ - start > 6) fail("expected an integer 0..255");
    n.value = std::stoll(s_.substr(start, pos_ - start));
    return n;
  }
  const std::string& s_;
  size_t pos_ = 0;
};

bool all_ints(const Node& n) {
  for (const auto& i : n.items)
    if (i.list) return false;
  return true;
}

std::vector<int64_t> ints(const Node& n) {
  std::vector<int64_t> v;
  for (const auto& i : n.items) v.push_back(i.value);
  return v;
}

}  // namespace

std::vector<std::vector<std::vector<int64_t>>> parse_label_ids(const std::string& text) {
  const std::string& t = text;
  if (t.find_first_not_of(" \t") == std::string::npos)
    throw UsageError("--label-ids is empty (write one value per class, e.g. [0, 1, 2])");
  // The outer brackets may be left out: "0, 1, 2".
  const bool bracketed = t[t.find_first_not_of(" \t")] == '[';
  Node top = bracketed ? Parser(t).parse() : Parser("[" + t + "]").parse();
  if (!top.list) top = Parser("[" + t + "]").parse();
  std::vector<std::vector<std::vector<int64_t>>> out;
  for (const Node& cls : top.items) {
    if (!cls.list) {
      out.push_back({{cls.value}});
    } else if (all_ints(cls)) {
      if (cls.items.size() != 3)
        throw UsageError("--label-ids '" + text + "': a class's list of " + std::to_string(cls.items.size()) +
                         " integers is no RGB triplet (write [r, g, b], or [[v1], [v2]] for several grey values)");
      out.push_back({ints(cls)});
    } else {
      std::vector<std::vector<int64_t>> values;
      for (const Node& v : cls.items) values.push_back(v.list ? ints(v) : std::vector<int64_t>{v.value});
      out.push_back(values);
    }
  }
  return out;
}

ClassLabels class_labels(const ModelData& model, const std::string& model_path, const std::string& label_ids_flag,
                         const std::vector<std::string>& classes) {
  auto with_colours = [&](PixelLabelIds ids, std::string source) {
    ClassLabels l{std::move(ids), {}, std::move(source)};
    l.colours = l.ids.rgb() ? l.ids.colours() : distinct_colours(static_cast<int>(classes.size()));
    return l;
  };
  if (!label_ids_flag.empty()) {
    try {
      return with_colours(PixelLabelIds(classes, parse_label_ids(label_ids_flag), "--label-ids"), "--label-ids");
    } catch (const ConfigError& e) {
      throw UsageError(e.what());
    }
  }
  if (!model.training_yaml.empty()) {
    try {
      Config c = load_config_text(model.training_yaml, model_path + " (its stored config)");
      if (!c.data.label_ids.empty()) {
        if (c.data.class_names != classes)
          throw ModelError(model_path + ": its stored config's data.ClassNames differ from the model's classes "
                           "(give --label-ids)");
        return with_colours(PixelLabelIds(c.data.class_names, c.data.label_ids, model_path + " data.LabelIDs"),
                            "model");
      }
    } catch (const ConfigError& e) {
      std::fprintf(stderr, "dltrain: warning: %s; reading label images as class indices (give --label-ids)\n", e.what());
    }
  }
  std::vector<std::vector<std::vector<int64_t>>> ids;
  for (size_t c = 0; c < classes.size(); ++c) ids.push_back({{static_cast<int64_t>(c)}});
  return with_colours(PixelLabelIds(classes, ids, "index labels"), "index");
}

}  // namespace dlt::app
