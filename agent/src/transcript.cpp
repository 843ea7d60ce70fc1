// The transcript decorator: the LLM's prompts and answers as JSON Lines.
#include "clampai/agent/transcript.hpp"

#include <nlohmann/json.hpp>

#include "clampai/kernel/error.hpp"

namespace clampai::agent {

kernel::OutputFile open_transcript(const std::string& path) {
  kernel::WriteOptions options;
  options.mode = kernel::WriteMode::append;
  options.permissions = 0600;
  options.what = "transcript";
  return kernel::OutputFile(path, options);
}

namespace {

class TranscriptLlm final : public LlmClient {
 public:
  TranscriptLlm(std::unique_ptr<LlmClient> inner, const std::filesystem::path& path)
      : inner_(std::move(inner)), out_(open_transcript(path.string())) {}

  LlmResponse complete(const LlmRequest& request) override {
    nlohmann::json line{{"call", ++calls_}, {"system", request.system}, {"prompt", request.prompt}};
    line["tools"] = nlohmann::json::array();
    for (const auto& t : request.tools) line["tools"].push_back(t.name);
    try {
      LlmResponse r = inner_->complete(request);
      nlohmann::json answer{{"text", r.text}};
      if (r.tool_call)
        answer["tool_call"] = {{"name", r.tool_call->name},
                               {"arguments", nlohmann::json::parse(r.tool_call->arguments)}};
      line["answer"] = std::move(answer);
      line["usage"] = {{"input_tokens", r.usage.input_tokens},
                       {"output_tokens", r.usage.output_tokens}};
      write(line);
      return r;
    } catch (const LlmError& e) {
      line["error"] = {{"kind", std::string(to_string(e.kind()))}, {"message", e.what()}};
      write(line);
      throw;
    }
  }
  [[nodiscard]] std::string_view name() const noexcept override { return inner_->name(); }

 private:
  void write(const nlohmann::json& line) {
    out_.write(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }

  std::unique_ptr<LlmClient> inner_;
  kernel::OutputFile out_;
  std::uint64_t calls_ = 0;
};

}  // namespace

std::unique_ptr<LlmClient> with_transcript(std::unique_ptr<LlmClient> inner,
                                           const std::filesystem::path& path) {
  return std::make_unique<TranscriptLlm>(std::move(inner), path);
}

}  // namespace clampai::agent
