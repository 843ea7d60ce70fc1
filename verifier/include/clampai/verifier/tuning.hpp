// Process-wide allocator tuning for programs that run many solver checks.
#pragma once

namespace clampai::verifier {

/// Z3 allocates and frees blocks of several megabytes for every solver. glibc's defaults map and
/// unmap each such block, so every page is faulted in again on the next one; on virtual machines
/// that dominated `verify` of small specs (BENCHMARKS.md: 58 ms -> 10 ms for 144 obligations).
/// This raises glibc's mmap and trim thresholds (`mallopt`) so those blocks stay in the heap.
/// It changes the whole process's allocator policy, so the library never calls it itself: call
/// it once at the start of a program you own (the `clampai` command and the benchmarks do).
/// Does nothing on other C libraries.
void tune_allocator_for_solving() noexcept;

}  // namespace clampai::verifier
