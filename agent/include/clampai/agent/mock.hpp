// The mock LLM: deterministic, scriptable, no network. A list of answers, or a seeded policy:
// the best-ranked tool, a random one, or an adversary that tries every way an answer can be
// wrong (for the chaos and Monte Carlo tests).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "clampai/agent/llm.hpp"

namespace clampai::agent {

/// One scripted answer: a response to return, or an error to throw.
struct MockAnswer {
  std::optional<LlmResponse> response{};
  std::optional<LlmErrorKind> error{};
  std::string message{};

  /// A tool call of `action` with `arguments` (JSON text).
  static MockAnswer call(std::string action, std::string arguments = "{}");
  /// A text answer.
  static MockAnswer text(std::string text);
  /// An LlmError of `kind`.
  static MockAnswer fail(LlmErrorKind kind, std::string message = "scripted failure");
};

/// What the mock does once its script (if any) is used up.
enum class MockPolicy : std::uint8_t {
  best,         ///< call the first offered tool (the highest-ranked) with default parameters
  random,       ///< a random offered tool with random parameters within (and just outside) its
                ///< bounds, as a tool call or as JSON text; now and then {"stop": true}
  adversarial,  ///< a random attack: unknown or forbidden ids, prompt injection, two
                ///< conflicting choices, parameters out of range or of the wrong type, NUL
                ///< bytes, zero-width characters, huge or deeply nested text, every LlmError;
                ///< sometimes a valid choice, so that runs make progress
};

struct MockOptions {
  std::vector<MockAnswer> script{};  ///< answered first, in order
  MockPolicy policy = MockPolicy::best;
  std::uint64_t seed = 0;
  /// random and adversarial: the chance of {"stop": true} per call.
  double stop_probability = 0.01;
};

/// The mock LLM. Deterministic for a given seed and sequence of requests.
class MockLlm final : public LlmClient {
 public:
  explicit MockLlm(MockOptions options = {});

  [[nodiscard]] LlmResponse complete(const LlmRequest& request) override;
  [[nodiscard]] std::string_view name() const noexcept override { return "mock"; }

  /// How many times `complete` was called.
  [[nodiscard]] std::uint64_t calls() const noexcept { return calls_; }
  /// The prompt of the last request (empty before the first call).
  [[nodiscard]] const std::string& last_prompt() const noexcept { return last_prompt_; }

 private:
  LlmResponse best(const LlmRequest& request);
  LlmResponse random(const LlmRequest& request);
  LlmResponse adversarial(const LlmRequest& request);

  MockOptions options_;
  std::size_t next_ = 0;
  std::uint64_t calls_ = 0;
  std::mt19937_64 rng_;
  std::string last_prompt_{};
};

}  // namespace clampai::agent
