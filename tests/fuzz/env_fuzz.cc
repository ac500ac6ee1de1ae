// Fuzzes the environment parser. The input is a list of NAME=VALUE lines (NAME may be any
// declared variable); whatever the values, parsing must not crash and must give values inside
// the declared ranges, with at most one warning per variable.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/env_spec.h"

namespace {

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

void CheckRanges(const zpp::Config& c) {
  for (int64_t flag : {c.qwz, c.hpz, c.qgz, c.fence, c.stats}) Require(flag == 0 || flag == 1);
  for (int64_t bits : {c.qwz_bits, c.qgz_bits_intra, c.qgz_bits_inter}) {
    Require(bits == 4 || bits == 8);
  }
  Require(c.block >= 32 && c.block <= 4096 && (c.block & (c.block - 1)) == 0);
  Require(c.min_bytes >= 0 && c.min_bytes <= (int64_t{1} << 40));
  Require(c.hpz_max_mb >= 0 && c.hpz_max_mb <= (1 << 24));
  Require(c.pool_mb >= 0 && c.pool_mb <= (1 << 24));
  Require(c.local_size >= 0 && c.local_size <= (1 << 20));
  Require(c.node_id >= -1);
  Require(c.debug >= 0 && c.debug <= 3);
  Require(c.rack_id.size() <= 64);
  for (char ch : c.rack_id) Require(ch != ' ' && ch != '/' && ch != '\n');
  Require(c.topo_file.size() < 4096 && c.nccl_library.size() < 4096);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string, std::less<>> env;
  size_t start = 0;
  while (start <= input.size()) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    const std::string_view line = input.substr(start, end - start);
    const size_t eq = line.find('=');
    if (eq != std::string_view::npos) {
      std::string name(line.substr(0, eq));
      // Short names select a variable by index so the fuzzer reaches all of them quickly.
      const auto specs = zpp::config::AllEnvSpecs();
      if (name.size() == 1)
        name = std::string(specs[static_cast<uint8_t>(name[0]) % specs.size()].name);
      env[name] = std::string(line.substr(eq + 1));
    }
    start = end + 1;
  }
  const zpp::config::ParseResult result =
      zpp::config::ParseEnvironment([&](std::string_view name) -> std::optional<std::string> {
        auto it = env.find(name);
        if (it == env.end()) return std::nullopt;
        return it->second;
      });
  CheckRanges(result.config);
  Require(result.warnings.size() <= zpp::config::AllEnvSpecs().size());
  for (const std::string& warning : result.warnings) Require(warning.size() < 512);
  return 0;
}
