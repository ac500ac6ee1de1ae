#include "launch_job.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace zpp::test {
namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

JobResult RunLauncher(const std::vector<std::string>& args,
                      const std::vector<std::pair<std::string, std::string>>& env,
                      double limit_seconds) {
  TempDir scratch;
  const std::string stderr_path = scratch.path() + "/stderr";
  const std::string stdout_path = scratch.path() + "/stdout";
  std::vector<std::string> strings = {ZPP_LAUNCH_BINARY};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : strings) argv.push_back(arg.data());
  argv.push_back(nullptr);

  std::vector<std::pair<std::string, std::string>> all_env = env;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // UCX's memory hooks (its own mmap/brk interposition) crash the sanitizers' ranks at exit;
  // they serve RDMA registration caches, which shared memory and TCP do not use.
  all_env.emplace_back("UCX_MEM_EVENTS", "no");
#endif
  std::vector<std::string> entries;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    bool replaced = false;
    for (const auto& [name, value] : env)
      replaced |= std::strncmp(*entry, (name + "=").c_str(), name.size() + 1) == 0;
    if (!replaced) entries.emplace_back(*entry);
  }
  for (const auto& [name, value] : all_env) entries.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& entry : entries) envp.push_back(entry.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, stdout_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  JobResult result;
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    result.stderr_text = std::string("posix_spawn failed: ") + std::strerror(spawned);
    return result;
  }
  int status = 0;
  for (;;) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() - start > std::chrono::duration<double>(limit_seconds)) {
      kill(pid, SIGTERM);  // the launcher stops its ranks on SIGTERM
      std::this_thread::sleep_for(std::chrono::seconds(2));
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.exit_code = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.stderr_text = ReadText(stderr_path);
  result.stdout_text = ReadText(stdout_path);
  return result;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/zpp-mp-XXXXXX";
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
}

}  // namespace zpp::test
