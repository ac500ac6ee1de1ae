#include "launch/child_process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace zpp::launch {

bool ChildProcess::Start(const std::vector<std::string>& argv,
                         const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    // The child: die with the launcher, even if it is killed without a chance to clean up.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    setpgid(0, 0);  // its own process group: Kill reaches what the rank starts, too
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    execvp(args[0], args.data());
    std::fprintf(stderr, "zpp-launch: cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);  // as the child does: whichever runs first, the group exists before Kill
  pid_ = pid;
  return true;
}

ChildProcess::~ChildProcess() {
  if (running()) {
    Kill();
    waitpid(pid_, &status_, 0);
  }
}

bool ChildProcess::Poll() {
  if (!running()) return ended_;
  const pid_t done = waitpid(pid_, &status_, WNOHANG);
  if (done == pid_) ended_ = true;
  return ended_;
}

void ChildProcess::Kill() {
  if (running()) kill(-pid_, SIGKILL);
}

std::string ChildProcess::Describe() const {
  char text[96];
  if (!ended_) {
    std::snprintf(text, sizeof(text), "is still running");
  } else if (WIFEXITED(status_)) {
    std::snprintf(text, sizeof(text), "exited with status %d", WEXITSTATUS(status_));
  } else if (WIFSIGNALED(status_)) {
    std::snprintf(text, sizeof(text), "was killed by signal %d (%s)", WTERMSIG(status_),
                  strsignal(WTERMSIG(status_)));
  } else {
    std::snprintf(text, sizeof(text), "ended with wait status %d", status_);
  }
  return text;
}

}  // namespace zpp::launch
