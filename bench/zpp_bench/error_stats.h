// Error of collective outputs against an fp64 reference, accumulated across ranks (threads).
#pragma once

#include <cstdint>
#include <mutex>

namespace zpp::bench {

class ErrorStats {
 public:
  // One rank's sums: squared error, squared reference, largest error, elements off the
  // reference by more than the caller's tolerance (NaN included).
  struct Part {
    double squared_error = 0;
    double squared_reference = 0;
    double max_abs = 0;
    uint64_t wrong = 0;
    void Add(double got, double reference, double tolerance);
  };

  void Merge(const Part& part);
  double RelativeL2() const;
  double MaxAbs() const { return max_abs_; }
  uint64_t Wrong() const { return wrong_; }

 private:
  mutable std::mutex mutex_;
  double squared_error_ = 0;
  double squared_reference_ = 0;
  double max_abs_ = 0;
  uint64_t wrong_ = 0;
};

}  // namespace zpp::bench
