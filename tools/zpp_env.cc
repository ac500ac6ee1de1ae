// zpp-env: what zpp reads from the environment.
//   zpp-env             every ZPP_* variable with the value zpp uses and whether it was set,
//                       left at its default (unset or empty) or rejected (WARNed),
//                       then the ZPP_* names set that zpp does not know (typos)
//   zpp-env --markdown  docs/configuration.md's table, generated from the declarations
#include <algorithm>
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
  app.add_flag("--markdown", markdown,
               "print the Markdown table of variables (docs/configuration.md)");
  CLI11_PARSE(app, argc, argv);

  if (markdown) {
    std::fputs(zpp::config::EnvMarkdownTable().c_str(), stdout);
    return 0;
  }
  zpp::ReportConfigOnce();  // the WARNs about bad values and unknown names, as a job shows them
  const zpp::Config& config = zpp::GetConfig();
  // The same parse GetConfig made: it lists the values it rejected.
  const zpp::config::ParseResult parsed =
      zpp::config::ParseEnvironment(zpp::config::ProcessEnvironment());
  for (const zpp::config::EnvSpec& spec : zpp::config::AllEnvSpecs()) {
    const std::string name(spec.name);
    const char* raw = std::getenv(name.c_str());
    const std::string value = config.ValueText(spec.name);
    const bool rejected =
        std::find(parsed.rejected.begin(), parsed.rejected.end(), name) != parsed.rejected.end();
    // An empty value counts as unset, as the parser takes it.
    const char* source = raw == nullptr || *raw == '\0' ? "default"
                         : rejected                     ? "rejected, default used"
                                                        : "set";
    std::printf("%-20s %-24s %s\n", name.c_str(), value.empty() ? "(unset)" : value.c_str(),
                source);
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
