// zpp-env: what zpp reads from the environment.
//   zpp-env             every ZPP_* variable with the value zpp uses (bad values are WARNed),
//                       then the ZPP_* names set that zpp does not know (typos)
//   zpp-env --markdown  the README's table, generated from the declarations
#include <cstdio>
#include <cstdlib>

#include "CLI/CLI.hpp"
#include "config/config.h"
#include "config/env_doc.h"
#include "config/env_names.h"
#include "config/env_spec.h"

int main(int argc, char** argv) {
  CLI::App app{"Shows the ZPP_* environment variables and the values zpp uses."};
  bool markdown = false;
  app.add_flag("--markdown", markdown, "print the README's Markdown table of variables");
  CLI11_PARSE(app, argc, argv);

  if (markdown) {
    std::fputs(zpp::config::EnvMarkdownTable().c_str(), stdout);
    return 0;
  }
  const zpp::Config& config = zpp::GetConfig();
  for (const zpp::config::EnvSpec& spec : zpp::config::AllEnvSpecs()) {
    const char* raw = std::getenv(std::string(spec.name).c_str());
    const std::string value = config.ValueText(spec.name);
    std::printf("%-20s %-24s %s\n", std::string(spec.name).c_str(),
                value.empty() ? "(unset)" : value.c_str(), raw != nullptr ? "set" : "default");
  }
  // Names zpp does not know (typos, most likely), apart; the variables its tools use are known.
  bool heading = false;
  for (const std::string& name : zpp::config::ProcessZppNames()) {
    if (zpp::config::IsKnownName(name)) continue;
    if (!heading) std::printf("\nnot zpp's (ignored):\n");
    heading = true;
    const std::string closest = zpp::config::ClosestKnownName(name);
    std::printf("%-20s %s\n", name.c_str(),
                closest.empty() ? "" : ("did you mean " + closest + "?").c_str());
  }
  return 0;
}
