// `--checkpoint-every`: signed points on the way of a trace (sign.hpp).
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/sign.hpp"

namespace clampai::kernel {

Checkpoints::Checkpoints(std::uint64_t every, std::uint64_t length)
    : every_(every), due_(every == 0 ? UINT64_MAX : length + every) {}

bool Checkpoints::after(SafetyKernel& kernel) {
  if (kernel.trace_length() < due_.load(std::memory_order_acquire)) return false;
  std::lock_guard lock(mutex_);
  if (kernel.trace_length() < due_.load(std::memory_order_relaxed) || kernel.is_sealed())
    return false;
  TraceEntry checkpoint;
  checkpoint.kind = EntryKind::checkpoint;
  try {
    const TraceEntry kept = kernel.record_note(std::move(checkpoint));
    due_.store(kept.sequence + 1 + every_, std::memory_order_release);
  } catch (const InvalidArgument&) {
    if (kernel.is_sealed()) return false;  // sealed meanwhile
    throw;
  }
  return true;
}

}  // namespace clampai::kernel
