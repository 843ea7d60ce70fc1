// One libFuzzer target: CLAMPAI_FUZZ_ENTRY names the entry of entries.hpp it fuzzes.
#include "entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return clampai::fuzz::run_one(&clampai::fuzz::CLAMPAI_FUZZ_ENTRY, data, size);
}
