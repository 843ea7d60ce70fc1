// A transcript of every prompt and answer of an LLM client, as JSON Lines (for clients that do
// not write their own: the HTTP adapters do, through HttpLlmOptions::transcript).
#pragma once

#include <filesystem>
#include <memory>

#include "clampai/agent/llm.hpp"

namespace clampai::agent {

/// `inner`, with each call appended to `path` as one JSON line: `call` (1, 2, ...), `system`,
/// `prompt`, `tools` (their names), then `answer` (`tool_call` {name, arguments} and `text`)
/// and `usage`, or `error` {kind, message}. The file is created (an existing one is replaced).
/// @throws FileError if the file cannot be opened.
std::unique_ptr<LlmClient> with_transcript(std::unique_ptr<LlmClient> inner,
                                           const std::filesystem::path& path);

}  // namespace clampai::agent
