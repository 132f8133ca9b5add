// Internal to lib/config: a table-driven reader/writer for the flat option sections
// (training, data, data.Augmentation). Each field knows its MATLAB name, how to check and
// store a YAML value, and how to write the stored value back. Shared by load and dump so a
// dumped config always loads back.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "config/choice.h"
#include "config/yaml_helpers.h"
#include "util/error.h"
#include "util/strings.h"

namespace dlt::cfg {

// The value being read, with what is needed to report it.
struct ValueCtx {
  const Origin& origin;
  std::string name;  // qualified: "training.MaxEpochs"
  YAML::Node key, value;
  // Reports a bad value instead of the file:line message when set (it must throw): an
  // environment variable's value names the variable (config/environment.cpp).
  std::function<void(const std::string& expect, const std::string& hint)> fail = nullptr;

  [[noreturn]] void bad(const std::string& expect, const std::string& hint = "") const {
    if (fail) fail(expect, hint);
    throw ConfigError(origin.loc(key, value).prefix() + name + " must be " + expect + ", got '" + node_text(value) +
                      "'" + hint);
  }
  // The value's scalar text; anything else (list, map, empty) is reported as not `expect`.
  std::string scalar(const std::string& expect) const {
    if (!value.IsScalar()) bad(expect);
    return value.Scalar();
  }
};

template <class T>
struct FieldDef {
  std::string name;
  std::function<void(const ValueCtx&, T&)> read;
  std::function<void(YAML::Emitter&, const T&)> write;  // the value only (key written by caller)
};

// ---- factories; F is a generic lambda [](auto& o) -> auto& { return o.member; } -----------

template <class T, class F>
FieldDef<T> bool_field(std::string name, F ref) {
  return {name,
          [ref](const ValueCtx& c, T& o) {
            bool b;
            if (!parse_bool(c.scalar("true or false"), &b)) c.bad("true or false");
            ref(o) = b;
          },
          [ref](YAML::Emitter& e, const T& o) { e << (ref(o) ? "true" : "false"); }};
}

// Integer >= min. `expect` e.g. "a positive integer".
template <class T, class F>
FieldDef<T> int_field(std::string name, int64_t min, std::string expect, F ref) {
  return {name,
          [ref, min, expect](const ValueCtx& c, T& o) {
            using I = std::remove_reference_t<decltype(ref(o))>;
            int64_t v;
            if (!parse_int(c.scalar(expect), &v) || v < min || v > static_cast<int64_t>(std::numeric_limits<I>::max()))
              c.bad(expect);
            ref(o) = static_cast<I>(v);
          },
          [ref](YAML::Emitter& e, const T& o) { e << std::to_string(ref(o)); }};
}

// Positive integer or Inf; Inf is stored as -1 (MATLAB's ValidationPatience).
template <class T, class F>
FieldDef<T> int_or_inf_field(std::string name, F ref) {
  const std::string expect = "a positive integer or Inf";
  return {name,
          [ref, expect](const ValueCtx& c, T& o) {
            std::string t = c.scalar(expect);
            int64_t v;
            if (is_inf_text(t))
              v = -1;
            else if (!parse_int(t, &v) || v < 1)
              c.bad(expect);
            ref(o) = v;
          },
          [ref](YAML::Emitter& e, const T& o) {
            int64_t v = ref(o);
            e << (v < 0 ? std::string("Inf") : std::to_string(v));
          }};
}

// A number in a range. lo/hi may be -inf/+inf; *_open excludes the bound.
template <class T, class F>
FieldDef<T> double_field(std::string name, double lo, bool lo_open, double hi, bool hi_open, std::string expect,
                         F ref) {
  return {name,
          [=](const ValueCtx& c, T& o) {
            double v;
            if (!parse_double(c.scalar(expect), &v)) c.bad(expect);
            if (lo_open ? !(v > lo) : !(v >= lo)) c.bad(expect);
            if (hi_open ? !(v < hi) : !(v <= hi)) c.bad(expect);
            ref(o) = v;
          },
          [ref](YAML::Emitter& e, const T& o) { e << format_double(ref(o)); }};
}

// Positive number or Inf; Inf (off) is stored as -1 (MATLAB's GradientThreshold).
template <class T, class F>
FieldDef<T> double_or_inf_field(std::string name, F ref) {
  const std::string expect = "a positive number or Inf";
  return {name,
          [ref, expect](const ValueCtx& c, T& o) {
            std::string t = c.scalar(expect);
            double v;
            if (is_inf_text(t))
              v = -1;
            else if (!parse_double(t, &v) || !(v > 0))
              c.bad(expect);
            ref(o) = v;
          },
          [ref](YAML::Emitter& e, const T& o) {
            double v = ref(o);
            e << (v <= 0 || std::isinf(v) ? std::string("Inf") : format_double(v));
          }};
}

// auto or a positive number; auto is stored as 0 (GradientBucketSizeMB: the communicator's).
template <class T, class F>
FieldDef<T> auto_or_positive_field(std::string name, std::string expect, F ref) {
  return {name,
          [ref, expect](const ValueCtx& c, T& o) {
            std::string t = c.scalar(expect);
            double v = 0;
            if (!iequals(t, "auto") && (!parse_double(t, &v) || !(v > 0))) c.bad(expect);
            ref(o) = v;
          },
          [ref](YAML::Emitter& e, const T& o) {
            double v = ref(o);
            e << (v > 0 ? format_double(v) : std::string("auto"));
          }};
}

// A positive number or Inf, stored as infinity (CommunicationTimeout: no timeout).
template <class T, class F>
FieldDef<T> positive_or_inf_field(std::string name, std::string expect, F ref) {
  return {name,
          [ref, expect](const ValueCtx& c, T& o) {
            std::string t = c.scalar(expect);
            double v = std::numeric_limits<double>::infinity();
            if (!is_inf_text(t) && (!parse_double(t, &v) || !(v > 0))) c.bad(expect);
            ref(o) = v;
          },
          [ref](YAML::Emitter& e, const T& o) { e << format_double(ref(o)); }};
}

// A string option that is one of a list of words, matched case-insensitively, stored in
// canonical spelling.
template <class T, class F>
FieldDef<T> choice_field(std::string name, std::vector<std::string> choices, F ref) {
  return {name,
          [ref, choices](const ValueCtx& c, T& o) {
            std::string expect = "one of " + join(choices, ", ");
            std::string t = c.scalar(expect);
            for (const auto& ch : choices)
              if (iequals(ch, t)) {
                ref(o) = ch;
                return;
              }
            c.bad(expect, did_you_mean(t, choices));
          },
          [ref](YAML::Emitter& e, const T& o) { e << ref(o); }};
}

// A choice option (config/choice.h): one of its enum's words, matched case-insensitively,
// written in its spelling.
template <class T, class F>
FieldDef<T> choice_field(std::string name, F ref) {
  return {name,
          [ref](const ValueCtx& c, T& o) {
            using E = std::remove_reference_t<decltype(ref(o))>;
            const std::vector<std::string> choices = choice_names<E>();
            const std::string expect = "one of " + join(choices, ", ");
            const std::string t = c.scalar(expect);
            if (!parse_choice(t, &ref(o))) c.bad(expect, did_you_mean(t, choices));
          },
          [ref](YAML::Emitter& e, const T& o) { e << to_string(ref(o)); }};
}

// Free text (a path); an empty value gives "".
template <class T, class F>
FieldDef<T> string_field(std::string name, F ref) {
  return {name,
          [ref](const ValueCtx& c, T& o) {
            if (c.value.IsNull()) {
              ref(o).clear();
              return;
            }
            ref(o) = c.scalar("a single value (a path or a word)");
          },
          [ref](YAML::Emitter& e, const T& o) { e << YAML::DoubleQuoted << ref(o); }};
}

// A list of numbers >= 0 (a single number counts as a list of one).
template <class T, class F>
FieldDef<T> nonneg_list_field(std::string name, F ref) {
  const std::string expect = "a list of numbers >= 0";
  return {name,
          [ref, expect](const ValueCtx& c, T& o) {
            std::vector<double> out;
            auto one = [&](const YAML::Node& n) {
              double v;
              if (!n.IsScalar() || !parse_double(n.Scalar(), &v) || v < 0) c.bad(expect);
              out.push_back(v);
            };
            if (c.value.IsSequence()) {
              for (const auto& n : list_items(c.value)) one(n);  // [2 1] counts as [2, 1]
            } else if (!c.value.IsNull()) {
              one(c.value);
            }
            ref(o) = out;
          },
          [ref](YAML::Emitter& e, const T& o) {
            e << YAML::Flow << YAML::BeginSeq;
            for (double v : ref(o)) e << format_double(v);
            e << YAML::EndSeq;
          }};
}

// A list of file extensions ".png" (a single one counts as a list of one).
template <class T, class F>
FieldDef<T> extension_list_field(std::string name, F ref) {
  const std::string expect = "a list of file extensions like [.png, .jpg]";
  return {name,
          [ref, expect](const ValueCtx& c, T& o) {
            std::vector<std::string> out;
            auto one = [&](const YAML::Node& n) {
              if (!n.IsScalar() || n.Scalar().size() < 2) c.bad(expect);
              if (n.Scalar()[0] != '.') c.bad(expect, " (write '." + n.Scalar() + "')");
              out.push_back(n.Scalar());
            };
            if (c.value.IsSequence()) {
              for (const auto& n : c.value) one(n);
            } else if (!c.value.IsNull()) {
              one(c.value);
            }
            ref(o) = out;
          },
          [ref](YAML::Emitter& e, const T& o) {
            e << YAML::Flow << YAML::BeginSeq;
            for (const auto& s : ref(o)) e << s;
            e << YAML::EndSeq;
          }};
}

// [min, max] with min <= max, both > lo_exclusive when positive_only (RandScale).
template <class T, class F>
FieldDef<T> range_field(std::string name, bool positive_only, F ref) {
  const std::string expect = positive_only ? "a range [min, max] of numbers > 0 with min <= max"
                                           : "a range [min, max] of numbers with min <= max";
  return {name,
          [ref, expect, positive_only](const ValueCtx& c, T& o) {
            if (!c.value.IsSequence()) c.bad(expect);
            const std::vector<YAML::Node> items = list_items(c.value);  // [-10 10] counts as [-10, 10]
            if (items.size() != 2) c.bad(expect);
            double v[2];
            for (size_t i = 0; i < 2; ++i) {
              const YAML::Node& n = items[i];
              if (!n.IsScalar() || !parse_double(n.Scalar(), &v[i])) c.bad(expect);
              if (positive_only && !(v[i] > 0)) c.bad(expect);
            }
            if (v[0] > v[1]) c.bad(expect, " (swap the two numbers)");
            ref(o)[0] = v[0];
            ref(o)[1] = v[1];
          },
          [ref](YAML::Emitter& e, const T& o) {
            const auto& r = ref(o);
            e << YAML::Flow << YAML::BeginSeq << format_double(r[0]) << format_double(r[1]) << YAML::EndSeq;
          }};
}

// ---- sections ------------------------------------------------------------------------------

template <class T>
std::vector<std::string> field_names(const std::vector<FieldDef<T>>& fields) {
  std::vector<std::string> out;
  for (const auto& f : fields) out.push_back(f.name);
  return out;
}

// A MATLAB name dltrain does not have, as one line ("training.Acceleration is a MATLAB option
// dltrain does not have (...)"), or "" when `key` is not one (matlab_names.cpp).
std::string matlab_only_message(const std::string& what, const std::string& key);

// "unknown <what> '<key>'" and its fix: hint_for's for a known MATLAB name that dltrain spells or
// places differently; a MATLAB name dltrain does not have gets matlab_only_message; else up to
// three close names, else the known keys when they are few, else where they are listed.
// read_section (YAML) and apply_overrides (--set) both build their message here, so a key gets
// the same hint from both.
inline std::string unknown_key_message(const std::string& what, const std::string& key,
                                       const std::vector<std::string>& known,
                                       const std::function<std::string(const std::string&)>& hint_for) {
  std::string hint = hint_for ? hint_for(key) : "";
  if (hint.empty()) {
    std::string m = matlab_only_message(what, key);
    if (!m.empty()) return m;
    hint = did_you_mean_some(key, known, 3);
  }
  if (hint.empty() && known.size() <= 8) hint = " (known: " + join(known, ", ") + ")";
  if (hint.empty()) hint = " (docs/config.md lists every " + what + ")";
  return "unknown " + what + " '" + key + "'" + hint;
}

// Reads a map section. `prefix` qualifies names ("training"); `what` names an unknown key in
// messages ("training option"). `hint_for` may return a fix for a known-but-unsupported key.
template <class T>
void read_section(const YAML::Node& node, const Origin& origin, const std::vector<FieldDef<T>>& fields,
                  const std::string& prefix, const std::string& what, T& out,
                  const std::function<std::string(const std::string&)>& hint_for = nullptr) {
  if (!node.IsDefined() || node.IsNull()) return;  // "training:" with nothing under it
  for (const Entry& e : map_entries(node, origin, prefix)) {
    const FieldDef<T>* f = nullptr;
    for (const auto& fd : fields)
      if (fd.name == e.key) f = &fd;
    if (!f) throw ConfigError(origin.at(e.key_node) + unknown_key_message(what, e.key, field_names(fields), hint_for));
    f->read(ValueCtx{origin, prefix + "." + e.key, e.key_node, e.value}, out);
  }
}

template <class T>
void write_section(YAML::Emitter& e, const std::vector<FieldDef<T>>& fields, const T& opts) {
  e << YAML::BeginMap;
  for (const auto& f : fields) {
    e << YAML::Key << f.name << YAML::Value;
    f.write(e, opts);
  }
  e << YAML::EndMap;
}

}  // namespace dlt::cfg
