// The one list of subcommands.
#include <map>

#include "commands.h"

namespace dlt::app {

namespace {
std::map<const CLI::App*, Runner>& runners() {
  static std::map<const CLI::App*, Runner> r;
  return r;
}
void add(CLI::App& app, Runner (*adder)(CLI::App&)) {
  size_t before = app.get_subcommands([](CLI::App*) { return true; }).size();
  Runner run = adder(app);
  auto subs = app.get_subcommands([](CLI::App*) { return true; });
  if (subs.size() > before) runners()[subs.back()] = std::move(run);
}
}  // namespace

void register_commands(CLI::App& app) {
  add(app, add_train);
  add(app, add_classify);
  add(app, add_predict);
  add(app, add_segment);
  add(app, add_info);
  add(app, add_time);
  add(app, add_make_dataset);
  add(app, add_report);
  add(app, add_import);
  add(app, add_export);
}

int run_selected(CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands())
    if (runners().count(sub)) return runners()[sub]();
  return 2;
}

}  // namespace dlt::app
