// The close of a healthy transport: UCX logs, at ERROR, a flush that times out because the peer
// closed its worker first, the usual order of a job's end when every call has completed. While a
// QuietCloseScope lives, those messages from its thread are counted, not printed; every other
// message, and every message of a broken transport's close, is UCX's as before.
// docs/architecture.md, "The same engine on CPU processes".
#pragma once

namespace zpp::transport {

class QuietCloseScope {
 public:
  QuietCloseScope();  // installs the filter once per process
  ~QuietCloseScope();
  QuietCloseScope(const QuietCloseScope&) = delete;
  QuietCloseScope& operator=(const QuietCloseScope&) = delete;

  // UCX's messages of flushes that found their peer gone, while this scope lived (one per lane).
  int flush_errors() const { return flush_errors_; }

 private:
  int flush_errors_ = 0;
  int* outer_ = nullptr;  // an enclosing scope on this thread
};

}  // namespace zpp::transport
