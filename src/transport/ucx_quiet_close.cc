#include "transport/ucx_quiet_close.h"

#include <ucs/debug/log_def.h>

#include <cstring>
#include <mutex>

namespace zpp::transport {
namespace {

thread_local QuietCloseScope::Counts* t_counts = nullptr;  // the open scope's, on this thread

// UCX calls the handlers newest first; STOP keeps the message from its default printer.
ucs_log_func_rc_t FilterCloseNoise(const char*, unsigned, const char*, ucs_log_level_t level,
                                   const ucs_log_component_config_t*, const char* message,
                                   va_list) {
  if (t_counts == nullptr) return UCS_LOG_FUNC_RC_CONTINUE;
  // UCX 1.13's ucp_ep_flush_error: "req %p: error during flush: %s, flush comp %p count ...".
  if (t_counts->healthy && level == UCS_LOG_LEVEL_ERROR &&
      std::strstr(message, "error during flush") != nullptr) {
    ++t_counts->flush_errors;
    return UCS_LOG_FUNC_RC_STOP;
  }
  // ucs_mpool_cleanup's "object %p was not returned to mpool %s" and ucp_tag_match_cleanup's
  // "unexpected tag-receive descriptor %p was not matched".
  if (level == UCS_LOG_LEVEL_WARN &&
      (std::strstr(message, "was not returned to mpool") != nullptr ||
       std::strstr(message, "was not matched") != nullptr)) {
    ++t_counts->left_unreceived;
    return UCS_LOG_FUNC_RC_STOP;
  }
  return UCS_LOG_FUNC_RC_CONTINUE;
}

}  // namespace

QuietCloseScope::QuietCloseScope(bool healthy) : outer_(t_counts) {
  static std::once_flag installed;
  std::call_once(installed, [] { ucs_log_push_handler(FilterCloseNoise); });
  counts_.healthy = healthy;
  t_counts = &counts_;
}

QuietCloseScope::~QuietCloseScope() { t_counts = outer_; }

}  // namespace zpp::transport
