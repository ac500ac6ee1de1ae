// A transport's close, in UCX's words the user needs. While a QuietCloseScope lives, these UCX
// messages from its thread are counted, not printed (every other message is UCX's as before):
//   - a healthy close: the ERROR of a flush that times out because the peer closed its worker
//     first, the usual order of a job's end when every call has completed;
//   - any close: the WARN of each message no receive took, left at the worker's destroy (a
//     failed call's eager data, one line per fragment), which zpp's own error already explains.
// docs/architecture.md, "The same engine on CPU processes".
#pragma once

namespace zpp::transport {

class QuietCloseScope {
 public:
  explicit QuietCloseScope(bool healthy);  // installs the filter once per process
  ~QuietCloseScope();
  QuietCloseScope(const QuietCloseScope&) = delete;
  QuietCloseScope& operator=(const QuietCloseScope&) = delete;

  struct Counts {
    bool healthy = true;
    int flush_errors = 0;     // flushes that found their peer gone (one per lane)
    int left_unreceived = 0;  // UCX buffers of messages never received
  };
  const Counts& counts() const { return counts_; }

 private:
  Counts counts_;
  Counts* outer_ = nullptr;  // an enclosing scope on this thread
};

}  // namespace zpp::transport
