// A transcript of every prompt and answer of an LLM client, as JSON Lines (for clients that do
// not write their own: the HTTP adapters do, through HttpLlmOptions::transcript).
#pragma once

#include <filesystem>
#include <memory>

#include "clampai/agent/llm.hpp"
#include "clampai/kernel/file.hpp"

namespace clampai::agent {

/// Opens a transcript file, as every writer of one does (`with_transcript`, the HTTP adapters):
/// under the rule of every written file (`kernel::OutputFile`): created with mode 0600 (prompts
/// and answers may be private) or appended to, never through a symbolic link, never a FIFO or
/// a device but /dev/null.
/// @throws FileError "cannot open the transcript `PATH`: REASON".
kernel::OutputFile open_transcript(const std::string& path);

/// `inner`, with each call appended to `path` as one JSON line: `call` (1, 2, ...), `system`,
/// `prompt`, `tools` (their names), then `answer` (`tool_call` {name, arguments} and `text`)
/// and `usage`, or `error` {kind, message}. The file is opened by `open_transcript`: created,
/// or appended to if it exists.
/// @throws FileError if the file cannot be opened.
std::unique_ptr<LlmClient> with_transcript(std::unique_ptr<LlmClient> inner,
                                           const std::filesystem::path& path);

}  // namespace clampai::agent
