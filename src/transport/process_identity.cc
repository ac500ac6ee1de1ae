#include "transport/process_identity.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

namespace zpp::transport {
namespace {

constexpr uint32_t kIdentityMagic = 0x7a707049;  // "zppI"
constexpr size_t kHostKeyBytes = 96;
constexpr size_t kHostnameBytes = 64;

// /proc/PID/stat's state and starttime; false when there is no such process.
bool ReadStat(int32_t pid, char* state, uint64_t* start_ticks) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!stat || !std::getline(stat, text)) return false;
  // The command name (field 2) may hold spaces and parentheses: the fields after it start after
  // the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  fields >> *state;
  // starttime is field 22; the state was field 3.
  for (int index = 4; index < 22 && fields >> field; ++index) {
  }
  return static_cast<bool>(fields >> *start_ticks);
}

std::string FirstLine(const char* path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

void CopyField(const std::string& text, std::byte* out, size_t bytes) {
  std::memset(out, 0, bytes);
  std::memcpy(out, text.data(), std::min(text.size(), bytes - 1));
}

std::string ReadField(const std::byte* in, size_t bytes) {
  const char* text = reinterpret_cast<const char*>(in);
  return std::string(text, strnlen(text, bytes));
}

}  // namespace

ProcessIdentity ProcessIdentity::Self() {
  ProcessIdentity self;
  Of(static_cast<int32_t>(getpid()), &self);
  return self;
}

bool ProcessIdentity::Of(int32_t pid, ProcessIdentity* out) {
  ProcessIdentity& self = *out;
  self.pid = pid;
  char state = 0;
  if (!ReadStat(pid, &state, &self.start_ticks)) return false;
  char link[128] = {};
  const ssize_t length = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
  self.host_key = FirstLine("/proc/sys/kernel/random/boot_id") + "/" +
                  std::string(link, length > 0 ? static_cast<size_t>(length) : 0);
  char host[kHostnameBytes] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) self.hostname = host;
  return true;
}

bool ProcessIdentity::SharesProcessTable(const ProcessIdentity& other) const {
  // Without a boot id (no /proc) nothing can be told: never take a pid for another's.
  return !host_key.empty() && host_key[0] != '/' && host_key == other.host_key;
}

bool ProcessIdentity::Gone() const {
  char state = 0;
  uint64_t ticks = 0;
  if (!ReadStat(pid, &state, &ticks)) return true;
  // Z: exited, not yet reaped by its parent; X: being reaped.
  return state == 'Z' || state == 'X' || ticks != start_ticks;
}

std::string ProcessIdentity::Describe() const {
  return "host " + (hostname.empty() ? std::string("?") : hostname) + ", pid " +
         std::to_string(pid);
}

void WriteIdentity(const ProcessIdentity& identity, std::byte* out) {
  std::memcpy(out, &kIdentityMagic, 4);
  std::memcpy(out + 4, &identity.pid, 4);
  std::memcpy(out + 8, &identity.start_ticks, 8);
  CopyField(identity.host_key, out + 16, kHostKeyBytes);
  CopyField(identity.hostname, out + 16 + kHostKeyBytes, kHostnameBytes);
}

bool ReadIdentity(const std::byte* bytes, size_t size, ProcessIdentity* out) {
  uint32_t magic = 0;
  if (size < kIdentityBytes) return false;
  std::memcpy(&magic, bytes, 4);
  if (magic != kIdentityMagic) return false;
  std::memcpy(&out->pid, bytes + 4, 4);
  std::memcpy(&out->start_ticks, bytes + 8, 8);
  out->host_key = ReadField(bytes + 16, kHostKeyBytes);
  out->hostname = ReadField(bytes + 16 + kHostKeyBytes, kHostnameBytes);
  return true;
}

}  // namespace zpp::transport
