#include "transport/ucx_quiet_close.h"

#include <ucs/debug/log_def.h>

#include <cstring>
#include <mutex>

namespace zpp::transport {
namespace {

thread_local int* t_counter = nullptr;  // the open scope's count on this thread

// UCX calls the handlers newest first; STOP keeps the message from its default printer.
ucs_log_func_rc_t FilterPeerClosedFirst(const char*, unsigned, const char*, ucs_log_level_t level,
                                        const ucs_log_component_config_t*, const char* message,
                                        va_list) {
  // UCX 1.13's ucp_ep_flush_error: "req %p: error during flush: %s, flush comp %p count ...".
  if (t_counter == nullptr || level != UCS_LOG_LEVEL_ERROR ||
      std::strstr(message, "error during flush") == nullptr) {
    return UCS_LOG_FUNC_RC_CONTINUE;
  }
  ++*t_counter;
  return UCS_LOG_FUNC_RC_STOP;
}

}  // namespace

QuietCloseScope::QuietCloseScope() : outer_(t_counter) {
  static std::once_flag installed;
  std::call_once(installed, [] { ucs_log_push_handler(FilterPeerClosedFirst); });
  t_counter = &flush_errors_;
}

QuietCloseScope::~QuietCloseScope() { t_counter = outer_; }

}  // namespace zpp::transport
