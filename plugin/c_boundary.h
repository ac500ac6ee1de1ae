// The C boundary: no exception leaves an exported function; each maps to an ncclResult_t.
#pragma once

#include <exception>
#include <new>

#include "log/check.h"

namespace zpp {

// Runs `body` (returning Result) and maps any exception to a result code with one WARN.
template <typename Body>
Result CatchAll(const char* function, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    ZPP_WARN("%s: out of host memory; the call fails with ncclSystemError", function);
    return ncclSystemError;
  } catch (const std::exception& e) {
    ZPP_WARN("%s: internal error: %s; the call fails with ncclInternalError" ZPP_BUG_REPORT,
             function, e.what());
    return ncclInternalError;
  } catch (...) {
    ZPP_WARN(
        "%s: internal error (unknown exception); the call fails with "
        "ncclInternalError" ZPP_BUG_REPORT,
        function);
    return ncclInternalError;
  }
}

}  // namespace zpp
