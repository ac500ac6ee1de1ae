// Running a program from a test: its exit code and everything it printed (stdout and stderr).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace zpp::test {

struct CommandRun {
  int exit_code = -1;  // -1: could not run, or did not exit normally (a signal)
  std::string output;  // stdout and stderr
};

// `command` goes to the shell as it is, with stderr joined to stdout.
inline CommandRun RunCommand(const std::string& command) {
  CommandRun run;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    run.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

}  // namespace zpp::test
