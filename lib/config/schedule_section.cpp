// training.LearnRateSchedule <-> std::vector<ScheduleSpec>: a name (none, piecewise, warmup,
// cosine, polynomial, exponential: MATLAB's trainingOptions strings), a schedule object written as
// a map with MATLAB's properties ({type: cosineLearnRate, Period: 20}), or a list of names and
// objects run in sequence. Every property is checked here, with file:line and did-you-mean.
#include <cmath>
#include <limits>

#include "config/fields.h"
#include "config/options.h"
#include "config/sections.h"

namespace dlt::cfg {

namespace {

using SS = ScheduleSpec;
constexpr double kInf = std::numeric_limits<double>::infinity();
const std::vector<ScheduleKind> kKinds = {ScheduleKind::piecewise, ScheduleKind::warmup, ScheduleKind::cosine,
                                          ScheduleKind::polynomial, ScheduleKind::exponential};

std::vector<std::string> names() {
  std::vector<std::string> out = {"none"};
  for (ScheduleKind k : kKinds) out.push_back(schedule_name(k));
  return out;
}

std::vector<std::string> object_names() {
  std::vector<std::string> out;
  for (ScheduleKind k : kKinds) out.push_back(schedule_object_name(k));
  return out;
}

// The kind named `text` (short or object name, any case); false when none.
bool find_kind(const std::string& text, ScheduleKind* out) {
  for (ScheduleKind k : kKinds)
    if (iequals(text, schedule_name(k)) || iequals(text, schedule_object_name(k))) {
      *out = k;
      return true;
    }
  return false;
}

// The words of FrequencyUnit (config/options.h), shared with CheckpointFrequencyUnit.
FieldDef<SS> frequency_unit_field() {
  return {"FrequencyUnit",
          [](const ValueCtx& c, SS& s) {
            const std::string expect = "one of epoch, iteration";
            const std::string t = c.scalar(expect);
            if (!parse_choice(t, &s.frequency_unit)) c.bad(expect, did_you_mean(t, choice_names<FrequencyUnit>()));
          },
          [](YAML::Emitter& e, const SS& s) { e << to_string(s.frequency_unit); }};
}

FieldDef<SS> growth_field() {
  return {"PeriodGrowthFactor",
          [](const ValueCtx& c, SS& s) {
            const std::string expect = "a number >= 1 or Inf";
            const std::string t = c.scalar(expect);
            double v = kInf;
            if (!is_inf_text(t) && (!parse_double(t, &v) || !(v >= 1))) c.bad(expect);
            s.period_growth_factor = v;
          },
          [](YAML::Emitter& e, const SS& s) { e << format_double(s.period_growth_factor); }};
}

// Every property; each kind reads the ones properties_of lists.
const std::vector<FieldDef<SS>>& all_properties() {
  static const std::vector<FieldDef<SS>> f = [] {
    std::vector<FieldDef<SS>> v;
    v.push_back(double_field<SS>("InitialFactor", 0, false, kInf, true, "a number >= 0",
                                 [](auto& s) -> auto& { return s.initial_factor; }));
    v.push_back(double_field<SS>("FinalFactor", 0, false, kInf, true, "a number >= 0",
                                 [](auto& s) -> auto& { return s.final_factor; }));
    v.push_back(double_field<SS>("DropFactor", 0, false, 1, false, "a number in [0, 1]",
                                 [](auto& s) -> auto& { return s.drop_factor; }));
    v.push_back(int_field<SS>("Period", 1, "a positive integer", [](auto& s) -> auto& { return s.period; }));
    v.push_back(growth_field());
    v.push_back(double_field<SS>("Power", 0, true, kInf, true, "a positive number",
                                 [](auto& s) -> auto& { return s.power; }));
    v.push_back(int_field<SS>("NumSteps", 1, "a positive integer", [](auto& s) -> auto& { return s.num_steps; }));
    v.push_back(frequency_unit_field());
    return v;
  }();
  return f;
}

// MATLAB's properties of each object, in its documentation's order.
std::vector<std::string> properties_of(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::piecewise: return {"DropFactor", "Period", "FrequencyUnit"};
    case ScheduleKind::warmup: return {"InitialFactor", "FinalFactor", "NumSteps", "FrequencyUnit"};
    case ScheduleKind::cosine:
      return {"InitialFactor", "FinalFactor", "Period", "PeriodGrowthFactor", "FrequencyUnit"};
    case ScheduleKind::polynomial: return {"InitialFactor", "FinalFactor", "Power", "NumSteps", "FrequencyUnit"};
    case ScheduleKind::exponential: return {"InitialFactor", "DropFactor", "Period", "FrequencyUnit"};
  }
  return {};
}

const FieldDef<SS>& property(const std::string& name) {
  for (const auto& f : all_properties())
    if (f.name == name) return f;
  throw std::logic_error("schedule property " + name);
}

// Properties that are 0 mean "the training's length" and are not written.
bool written(const SS& s, const std::string& name) {
  if (name == "Period") return s.period > 0;
  if (name == "NumSteps") return s.num_steps > 0;
  return true;
}

// One item: a name, or a map {type: <object name>, <Property>: value, ...}.
SS read_item(const YAML::Node& key, const YAML::Node& value, const Origin& origin, const std::string& what) {
  const ValueCtx item{origin, what, key, value};
  const std::string expect_name = "one of " + join(names(), ", ");
  if (value.IsScalar()) {
    const std::string t = value.Scalar();
    ScheduleKind kind;
    if (!find_kind(t, &kind)) {
      std::vector<std::string> all = names();
      for (const auto& n : object_names()) all.push_back(n);
      item.bad(expect_name + ", or a schedule object such as {type: cosineLearnRate, Period: 20}",
               did_you_mean(t, all));
    }
    SS s = default_schedule(kind);
    s.named = iequals(t, schedule_name(kind));
    return s;
  }
  if (!value.IsMap())
    item.bad(expect_name + ", a schedule object such as {type: cosineLearnRate, Period: 20}, or a list of them");
  const std::vector<Entry> entries = map_entries(value, origin, what);
  const Entry* type = nullptr;
  for (const Entry& e : entries)
    if (e.key == "type") type = &e;
  if (!type)
    throw ConfigError(origin.at(value) + what + ": a schedule object needs type: followed by one of " +
                      join(object_names(), ", "));
  const ValueCtx type_ctx{origin, what + ".type", type->key_node, type->value};
  const std::string type_text = type_ctx.scalar("one of " + join(object_names(), ", "));
  ScheduleKind kind;
  if (!find_kind(type_text, &kind))
    type_ctx.bad("one of " + join(object_names(), ", "), did_you_mean(type_text, object_names()));
  SS s = default_schedule(kind);
  const std::vector<std::string> known = properties_of(kind);
  for (const Entry& e : entries) {
    if (&e == type) continue;
    bool ok = false;
    for (const auto& k : known) ok = ok || k == e.key;
    if (!ok)
      throw ConfigError(origin.at(e.key_node) +
                        unknown_key_message(schedule_object_name(kind) + " property", e.key, known, nullptr));
    property(e.key).read(ValueCtx{origin, what + "." + e.key, e.key_node, e.value}, s);
  }
  return s;
}

}  // namespace

std::vector<ScheduleSpec> read_learn_rate_schedule(const YAML::Node& key, const YAML::Node& value,
                                                   const Origin& origin, const std::string& what) {
  if (value.IsScalar() && iequals(value.Scalar(), "none")) return {};
  if (!value.IsSequence()) return {read_item(key, value, origin, what)};
  std::vector<ScheduleSpec> out;
  std::vector<YAML::Node> items;
  for (const auto& n : value) items.push_back(n);
  if (items.empty()) ValueCtx{origin, what, key, value}.bad("a schedule or a non-empty list of schedules");
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string item_what = what + "[" + std::to_string(i) + "]";
    if (items[i].IsScalar() && iequals(items[i].Scalar(), "none"))
      throw ConfigError(origin.at(items[i]) + item_what + ": none cannot be part of a list (remove it)");
    if (!out.empty() && !schedule_ends(out.back().kind))
      throw ConfigError(origin.at(items[i]) + item_what + ": the " + schedule_object_name(out.back().kind) +
                        " before it never ends, so this schedule would never start (only warmup and polynomial "
                        "schedules end after NumSteps: put the others last)");
    out.push_back(read_item(items[i], items[i], origin, item_what));
  }
  return out;
}

void write_learn_rate_schedule(YAML::Emitter& e, const std::vector<ScheduleSpec>& schedules) {
  auto one = [&e](const SS& s) {
    if (s.named) {
      e << schedule_name(s.kind);
      return;
    }
    e << YAML::BeginMap << YAML::Key << "type" << YAML::Value << schedule_object_name(s.kind);
    for (const auto& name : properties_of(s.kind))
      if (written(s, name)) {
        e << YAML::Key << name << YAML::Value;
        property(name).write(e, s);
      }
    e << YAML::EndMap;
  };
  if (schedules.empty()) {
    e << "none";
  } else if (schedules.size() == 1) {
    one(schedules[0]);
  } else {
    e << YAML::BeginSeq;
    for (const auto& s : schedules) one(s);
    e << YAML::EndSeq;
  }
}

}  // namespace dlt::cfg
