#include "log/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace zpp::log {
namespace detail {
std::atomic<int> g_level{-1};
std::atomic<uint32_t> g_mask{kAll};

namespace {
std::atomic<Configurer> g_configurer{nullptr};
}  // namespace

void SetConfigurer(Configurer configurer) {
  g_configurer.store(configurer, std::memory_order_release);
}

int ConfigureOnFirstUse() {
  if (const Configurer configure = g_configurer.load(std::memory_order_acquire)) {
    configure();
    return g_level.load(std::memory_order_acquire);
  }
  return static_cast<int>(Level::kWarn);  // not stored: the configurer, once installed, decides
}
}  // namespace detail

namespace {

thread_local int t_rank = -1;

struct Output {
  std::mutex mutex;
  FILE* file = nullptr;      // nullptr: stderr
  std::string pending_path;  // ZPP_DEBUG_FILE, until its first line opens it
  std::function<void(std::string_view)> sink;
};

Output& TheOutput() {
  static Output* output = new Output();  // never destroyed: lines may come from atexit handlers
  return *output;
}

std::string HostName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "unknown";
  // NCCL prints the short name.
  if (char* dot = std::strchr(host, '.')) *dot = '\0';
  return host;
}

const std::string& CachedHostName() {
  static const std::string host = HostName();
  return host;
}

}  // namespace

std::string ExpandFilePattern(std::string_view pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      const char next = pattern[i + 1];
      if (next == 'h') {
        out += CachedHostName();
        ++i;
        continue;
      }
      if (next == 'p') {
        out += std::to_string(getpid());
        ++i;
        continue;
      }
      if (next == '%') {
        out += '%';
        ++i;
        continue;
      }
    }
    out += pattern[i];
  }
  return out;
}

void Configure(const Settings& settings) {
  Output& output = TheOutput();
  {
    std::lock_guard<std::mutex> lock(output.mutex);
    if (output.file != nullptr) {
      std::fclose(output.file);
      output.file = nullptr;
    }
    // Opened at the first line: a process that logs nothing leaves no file behind.
    output.pending_path =
        settings.file_pattern.empty() ? "" : ExpandFilePattern(settings.file_pattern);
  }
  detail::g_mask.store(settings.subsys_mask, std::memory_order_relaxed);
  detail::g_level.store(static_cast<int>(settings.level), std::memory_order_release);
}

void SetSinkForTesting(std::function<void(std::string_view line)> sink) {
  Output& output = TheOutput();
  std::lock_guard<std::mutex> lock(output.mutex);
  output.sink = std::move(sink);
}

void Emit(Level level, uint32_t /*subsys*/, const char* file, int line, const char* fmt, ...) {
  char message[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(message, sizeof(message), fmt, args);
  va_end(args);

  char rank[16] = "-";
  if (t_rank >= 0) std::snprintf(rank, sizeof(rank), "%d", t_rank);
  const auto tid = static_cast<long>(syscall(SYS_gettid));
  char text[1400];
  if (level == Level::kWarn) {
    std::snprintf(text, sizeof(text), "%s:%d:%ld [%s] %s:%d ZPP WARN %s\n",
                  CachedHostName().c_str(), getpid(), tid, rank, file, line, message);
  } else {
    std::snprintf(text, sizeof(text), "%s:%d:%ld [%s] ZPP %s %s\n", CachedHostName().c_str(),
                  getpid(), tid, rank, LevelName(level).data(), message);
  }

  Output& output = TheOutput();
  std::lock_guard<std::mutex> lock(output.mutex);
  char fallback[1400] = "";
  if (!output.pending_path.empty()) {
    output.file = std::fopen(output.pending_path.c_str(), "a");
    if (output.file == nullptr) {
      std::snprintf(fallback, sizeof(fallback),
                    "%s:%d:%ld [%s] %s:%d ZPP WARN ZPP_DEBUG_FILE: cannot open %s: %s; logging to "
                    "stderr instead\n",
                    CachedHostName().c_str(), getpid(), tid, rank, __FILE__, __LINE__,
                    output.pending_path.c_str(), std::strerror(errno));
    }
    output.pending_path.clear();
  }
  for (const char* out_line :
       {static_cast<const char*>(fallback), static_cast<const char*>(text)}) {
    if (*out_line == '\0') continue;
    if (output.sink) {
      output.sink(out_line);
      continue;
    }
    FILE* out = output.file != nullptr ? output.file : stderr;
    std::fputs(out_line, out);
    std::fflush(out);
  }
}

ScopedRank::ScopedRank(int rank) : previous_(t_rank) { t_rank = rank; }
ScopedRank::~ScopedRank() { t_rank = previous_; }

}  // namespace zpp::log
