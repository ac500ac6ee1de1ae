// zpp-launch: starts N ranks of a program on this machine and bootstraps them over loopback.
//   zpp-launch -n 8 [--timeout S] [--grace S] [--rank-env R:NAME=VALUE]... -- PROGRAM ARGS...
// Each rank gets ZPP_LAUNCH_RANK, ZPP_LAUNCH_SIZE and ZPP_LAUNCH_BOOTSTRAP (127.0.0.1:PORT, where
// this launcher hands out the ranks' UCP addresses). When a rank fails, the others get --grace
// seconds to finish on their own (0: killed at once); the launcher then returns 1. Every wait is
// bounded: the bootstrap by ZPP_TIMEOUT, the whole job by --timeout (0: no limit).
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "config/config.h"
#include "launch/child_process.h"
#include "transport/bootstrap.h"
#include "transport/launch_env.h"
#include "transport/socket.h"

namespace {

using zpp::launch::ChildProcess;
using zpp::transport::Clock;

std::atomic<int> g_signal{0};
void OnSignal(int signal) { g_signal.store(signal); }

constexpr auto kPollStep = std::chrono::milliseconds(20);

struct Options {
  int ranks = 0;
  double timeout_s = 0;
  double grace_s = 0;
  std::vector<std::string> rank_env;  // "R:NAME=VALUE"
  std::vector<std::string> program;
};

// "3:ZPP_QWZ_BITS=4" -> (3, NAME, VALUE); false when malformed.
bool ParseRankEnv(const std::string& text, int ranks, int* rank, std::string* name,
                  std::string* value) {
  const size_t colon = text.find(':');
  const size_t equals = text.find('=', colon == std::string::npos ? 0 : colon);
  if (colon == std::string::npos || equals == std::string::npos || equals == colon + 1) {
    return false;
  }
  try {
    size_t used = 0;
    *rank = std::stoi(text.substr(0, colon), &used);
    if (used != colon || *rank < 0 || *rank >= ranks) return false;
  } catch (const std::exception&) {
    return false;
  }
  *name = text.substr(colon + 1, equals - colon - 1);
  *value = text.substr(equals + 1);
  return true;
}

class Job {
 public:
  explicit Job(const Options& options) : options_(options), children_(options.ranks) {}

  int Run() {
    zpp::transport::Fd listener;
    uint16_t port = 0;
    if (zpp::transport::ListenLoopback(options_.ranks, &listener, &port) != ncclSuccess) {
      std::fprintf(stderr, "zpp-launch: cannot listen on 127.0.0.1\n");
      return 1;
    }
    start_ = Clock::now();
    if (!StartRanks("127.0.0.1:" + std::to_string(port))) return Stop(1);

    const auto bootstrap_deadline = Clock::now() + std::chrono::seconds(zpp::GetConfig().timeout);
    const ncclResult_t served = zpp::transport::ServeAddresses(
        listener, options_.ranks, bootstrap_deadline, [this] { return Watch(); });
    listener.Reset();
    if (served != ncclSuccess) {
      if (timed_out_) return Stop(124);
      if (AllSucceeded()) return 0;  // a program that never needed the bootstrap
      if (first_failure_ < 0 && g_signal.load() == 0) {
        std::fprintf(stderr, "zpp-launch: the bootstrap failed (%s); stopping every rank\n",
                     zpp::ResultName(served));
      }
      return Stop(g_signal.load() != 0 ? 130 : 1);
    }
    while (Watch()) std::this_thread::sleep_for(kPollStep);
    if (g_signal.load() != 0 || timed_out_) return Stop(timed_out_ ? 124 : 130);
    // Every rank has ended, or the survivors' grace is over.
    for (int r = 0; r < options_.ranks; ++r) {
      if (!children_[r].running()) continue;
      std::fprintf(stderr, "zpp-launch: killing rank %d (pid %d) after the grace period\n", r,
                   static_cast<int>(children_[r].pid()));
    }
    return Stop(first_failure_ >= 0 ? 1 : 0);
  }

 private:
  bool StartRanks(const std::string& bootstrap) {
    std::vector<std::vector<std::pair<std::string, std::string>>> env(options_.ranks);
    for (int r = 0; r < options_.ranks; ++r) {
      env[r] = {{zpp::transport::kLaunchRankEnv, std::to_string(r)},
                {zpp::transport::kLaunchSizeEnv, std::to_string(options_.ranks)},
                {zpp::transport::kLaunchBootstrapEnv, bootstrap}};
    }
    for (const std::string& text : options_.rank_env) {
      int rank = 0;
      std::string name, value;
      ParseRankEnv(text, options_.ranks, &rank, &name, &value);  // checked in main
      env[rank].emplace_back(name, value);
    }
    for (int r = 0; r < options_.ranks; ++r) {
      if (!children_[r].Start(options_.program, env[r])) {
        std::perror("zpp-launch: fork");
        return false;
      }
    }
    return true;
  }

  bool AllSucceeded() const {
    for (const ChildProcess& child : children_) {
      if (!child.succeeded()) return false;
    }
    return true;
  }

  // Reaps ended ranks and reports failures; false once the job should stop being watched.
  bool Watch() {
    bool any_running = false;
    for (int r = 0; r < options_.ranks; ++r) {
      ChildProcess& child = children_[r];
      const bool was_running = child.running();
      child.Poll();
      any_running |= child.running();
      if (was_running && child.ended() && !child.succeeded()) {
        std::fprintf(stderr, "zpp-launch: rank %d (pid %d) %s\n", r, static_cast<int>(child.pid()),
                     child.Describe().c_str());
        if (first_failure_ < 0) {
          first_failure_ = r;
          grace_end_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(options_.grace_s));
          if (options_.grace_s > 0) {
            std::fprintf(stderr, "zpp-launch: the other ranks have %.1f s to finish\n",
                         options_.grace_s);
          }
        }
      }
    }
    if (const int signal = g_signal.load(); signal != 0) {
      std::fprintf(stderr, "zpp-launch: signal %d; stopping every rank\n", signal);
      return false;
    }
    if (options_.timeout_s > 0 &&
        Clock::now() - start_ > std::chrono::duration<double>(options_.timeout_s)) {
      std::fprintf(stderr, "zpp-launch: the job ran past --timeout %.1f s; stopping every rank\n",
                   options_.timeout_s);
      timed_out_ = true;
      return false;
    }
    if (first_failure_ >= 0 && Clock::now() >= grace_end_) return false;
    return any_running;
  }

  int Stop(int code) {
    for (ChildProcess& child : children_) child.Kill();
    for (ChildProcess& child : children_) {
      while (child.running() && !child.Poll()) std::this_thread::sleep_for(kPollStep);
    }
    return code;
  }

  const Options& options_;
  std::vector<ChildProcess> children_;
  Clock::time_point start_;
  Clock::time_point grace_end_;
  int first_failure_ = -1;
  bool timed_out_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  // Everything after "--" is the program and its arguments, untouched by the parser.
  Options options;
  int ours = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      ours = i;
      break;
    }
  }
  for (int i = ours + 1; i < argc; ++i) options.program.emplace_back(argv[i]);

  CLI::App app{
      "zpp-launch -n N [OPTIONS] -- PROGRAM [ARGS...]: starts N ranks of PROGRAM on this machine, "
      "bootstrapped over 127.0.0.1."};
  app.add_option("-n,--ranks", options.ranks, "number of ranks (processes)")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--timeout", options.timeout_s,
                 "stop every rank after this many seconds (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--grace", options.grace_s,
                 "after a rank fails, seconds the others get to finish before being killed")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--rank-env", options.rank_env,
                 "R:NAME=VALUE: set NAME=VALUE for rank R only (repeatable)");
  CLI11_PARSE(app, ours, argv);
  if (options.program.empty()) {
    std::fprintf(stderr, "zpp-launch: no program given (after --)\n%s", app.help().c_str());
    return 2;
  }
  for (const std::string& text : options.rank_env) {
    int rank = 0;
    std::string name, value;
    if (!ParseRankEnv(text, options.ranks, &rank, &name, &value)) {
      std::fprintf(stderr, "zpp-launch: --rank-env '%s' is not R:NAME=VALUE with R < %d\n",
                   text.c_str(), options.ranks);
      return 2;
    }
  }
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  signal(SIGPIPE, SIG_IGN);
  Job job(options);
  return job.Run();
}
