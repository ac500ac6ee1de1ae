// One rank process started by zpp-launch. Owning: a rank still running when its owner goes is
// killed and reaped, so the launcher never leaves a process behind.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace zpp::launch {

class ChildProcess {
 public:
  // fork + execvp(argv[0], argv) with `env` (NAME, VALUE) added to this environment, in a
  // process group of its own. The child dies with the launcher (PR_SET_PDEATHSIG). False, with
  // errno, when fork fails.
  bool Start(const std::vector<std::string>& argv,
             const std::vector<std::pair<std::string, std::string>>& env);
  ~ChildProcess();
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Reaps the child if it has ended; true once it has.
  bool Poll();
  void Kill();  // SIGKILL to its process group, if it is still running
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !ended_; }
  bool ended() const { return ended_; }
  bool succeeded() const { return ended_ && status_ == 0; }
  // "exited with status 3", "was killed by signal 9 (Killed)".
  std::string Describe() const;

 private:
  pid_t pid_ = -1;
  bool ended_ = false;
  int status_ = 0;  // waitpid's
};

}  // namespace zpp::launch
