#include "engine/step_slots.h"

#include <utility>

namespace zpp::engine {

StepSlots::StepSlots(BufferPool& pool, uint64_t max_bytes, std::function<uint64_t()> epoch)
    : pool_(pool), max_bytes_(max_bytes), epoch_(std::move(epoch)) {}

void StepSlots::StartCall() {
  const uint64_t epoch = epoch_();
  if (!started_ || epoch != current_epoch_) {
    started_ = true;
    current_epoch_ = epoch;
    next_ = 0;
  }
}

Result StepSlots::Take(uint64_t count, ncclDataType_t dtype, size_t bytes, Slot* slot) {
  *slot = Slot{};
  StartCall();
  const size_t index = next_++;
  if (index < entries_.size()) {
    Entry& entry = entries_[index];
    if (entry.count == count && entry.dtype == dtype && entry.bytes == bytes) {
      *slot = Slot{entry.lease ? &entry.lease : nullptr, entry.written && bool(entry.lease), index};
      entry.written = false;
      return ncclSuccess;
    }
    // Another call at this place: the pattern changed. Nothing kept from here on applies: the
    // later places start afresh too.
    for (size_t i = index; i < entries_.size(); ++i) {
      kept_bytes_ -= entries_[i].lease ? entries_[i].bytes : 0;
    }
    entries_.resize(index);
  }
  Entry entry;
  entry.count = count;
  entry.dtype = dtype;
  entry.bytes = bytes;
  if (kept_bytes_ + bytes <= max_bytes_) {
    // A bounded pool's refusal is an answer: this call runs without (the same on every rank).
    if (pool_.Take(bytes, &entry.lease) == ncclSuccess) {
      kept_bytes_ += bytes;
    } else {
      entry.lease = BufferLease();
      pool_.TakeShortfall();  // not the plan's shortfall: its staging is yet to be taken
    }
  }
  entries_.push_back(std::move(entry));
  Entry& added = entries_.back();
  *slot = Slot{added.lease ? &added.lease : nullptr, false, index};
  return ncclSuccess;
}

void StepSlots::Written(const Slot& slot) {
  if (slot.lease != nullptr && slot.index < entries_.size()) entries_[slot.index].written = true;
}

}  // namespace zpp::engine
