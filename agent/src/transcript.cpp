// The transcript decorator: the LLM's prompts and answers as JSON Lines.
#include "clampai/agent/transcript.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

#include "clampai/kernel/error.hpp"

namespace clampai::agent {

namespace {

class TranscriptLlm final : public LlmClient {
 public:
  TranscriptLlm(std::unique_ptr<LlmClient> inner, const std::filesystem::path& path)
      : inner_(std::move(inner)), out_(path, std::ios::trunc) {
    if (!out_) throw FileError("cannot write the transcript `" + path.string() + "`");
  }

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
    out_ << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    out_.flush();
  }

  std::unique_ptr<LlmClient> inner_;
  std::ofstream out_;
  std::uint64_t calls_ = 0;
};

}  // namespace

std::unique_ptr<LlmClient> with_transcript(std::unique_ptr<LlmClient> inner,
                                           const std::filesystem::path& path) {
  return std::make_unique<TranscriptLlm>(std::move(inner), path);
}

}  // namespace clampai::agent
