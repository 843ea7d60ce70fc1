// The one MCP client of an upstream server (a child process on pipes), shared by `clampai
// gateway` and `clampai agent --upstream`: its process, its requests, its tools and their pins,
// and what becomes of a committed step once its call is forwarded (recorded, undone on an error).
// Private to the server library.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/json.hpp"
#include "clampai/kernel/ledger.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/server/gateway.hpp"

namespace clampai::driver {
class Committer;
}

namespace clampai::server {

/// The upstream could not be started (exit status 1, not a usage error).
class UpstreamError : public Error {
 public:
  using Error::Error;
};

/// What the upstream answered to one request.
struct UpstreamAnswer {
  /// `cancelled`: the client cancelled the request before its answer came (the upstream was
  /// told with `notifications/cancelled`).
  enum class Kind : std::uint8_t { result, error, gone, timeout, cancelled } kind = Kind::gone;
  kernel::jsonio::JsonNode body;  // the result, or the error object
};

/// An upstream tool as its `tools/list` gave it, with its pin or why it has none.
struct ListedTool {
  kernel::jsonio::JsonNode tool;
  std::string pin;
  std::string unpinnable;
};

class UpstreamProcess;

/// The client, read while the upstream is waited for (so that it may cancel a request in
/// flight, with `UpstreamClient::cancel`).
struct ClientWatch {
  std::function<int()> fd;         // its input, or -1 once it has ended (or is not to be read)
  std::function<bool()> buffered;  // whether bytes it sent wait in its reader already
  std::function<void()> drain;     // reads what the client has sent, without waiting
};

/// The upstream server and the requests made of it: several may be outstanding at once, their
/// answers matched to them by their JSON-RPC ids.
class UpstreamClient {
 public:
  /// Passes on a notification of the upstream (`notifications/message`, `.../progress`) as the
  /// JSON text of the message.
  using Notify = std::function<void(const std::string& message)>;
  /// Answers a request of the upstream (`method`, its id as JSON text, its params or null):
  /// the whole reply message for the upstream, or empty to refuse it (-32601).
  using Ask = std::function<std::string(
      const std::string& method, const std::string& id, const kernel::jsonio::JsonNode* params)>;
  /// Starts `options.command`. @throws UpstreamError if it cannot be started, InvalidArgument
  /// for a bad `--env`.
  UpstreamClient(const GatewayOptions& options,
                 std::ostream& log,
                 Notify notify = {},
                 Ask ask = {});
  ~UpstreamClient();
  UpstreamClient(const UpstreamClient&) = delete;
  UpstreamClient& operator=(const UpstreamClient&) = delete;

  [[nodiscard]] bool alive() const;
  /// Why the upstream is gone, or `no answer`.
  [[nodiscard]] std::string why_gone() const;
  /// Sends a notification (a whole JSON-RPC message); false if the upstream is gone.
  bool notify(const std::string& message);
  /// Sends a request and waits for its answer, refusing what the upstream asks of the client
  /// meanwhile and passing on its log and progress notifications; the answers to requests
  /// `start`ed before that come meanwhile are kept for `next_answer`. A timeout of any request
  /// stops the upstream (every other request outstanding is then `gone`).
  UpstreamAnswer request(const std::string& method, const std::string& params_json);
  /// Sends a request without waiting for its answer (`next_answer` gives it): its id, as JSON
  /// text, or empty when the upstream is gone. It has `upstream_timeout_ms` from now.
  std::string start(const std::string& method, const std::string& params_json);
  /// The id and answer of one request `start`ed, waiting for it as `request` does (and reading
  /// the client meanwhile when it is watched); nothing when none is outstanding, or once `stop`
  /// holds (asked each time the client was read).
  std::optional<std::pair<std::string, UpstreamAnswer>> next_answer(
      const std::function<bool()>& stop = {});
  /// Cancels the outstanding request `id` (the upstream is told with `notifications/cancelled`;
  /// its answer, if it comes, is dropped): its answer is `cancelled`. False if it is not
  /// outstanding.
  bool cancel(const std::string& id);
  /// `initialize` at `version`, offering the client capabilities `capabilities` (a JSON
  /// object's text), then `notifications/initialized` when `then_initialized`.
  UpstreamAnswer initialize(std::string_view version,
                            bool then_initialized,
                            const std::string& capabilities = "{}");

  /// Every page of the upstream's `tools/list`, kept until `forget_tools` (or its
  /// `notifications/tools/list_changed`). @throws InvalidArgument when it cannot be listed.
  const std::map<std::string, ListedTool>& tools();
  void forget_tools() { tools_.reset(); }
  /// Reads the client while waiting for the upstream's answers (none: it is not read).
  void watch(std::optional<ClientWatch> watch);
  /// Why the bound tool `b` is not offered (missing, unpinnable, changed), or nothing.
  std::optional<std::string> hidden(const ToolBinding& b);

 private:
  std::unique_ptr<UpstreamProcess> process_;
  std::ostream& log_;
  Notify notify_;
  Ask ask_;
  int timeout_ms_;
  std::uint64_t next_id_ = 0;
  std::optional<std::map<std::string, ListedTool>> tools_;
  struct Pending {
    std::string method;
    std::chrono::steady_clock::time_point deadline;
  };
  std::map<std::string, Pending> pending_;                   // by id (JSON text)
  std::deque<std::pair<std::string, UpstreamAnswer>> done_;  // answered, not taken yet
  // Reads one message of the upstream (or until the client cancelled something, `stop` held or
  // a request timed out), moving what is answered to `done_`.
  void pump(const std::function<bool()>& stop);
};

/// What became of a committed step whose call was forwarded.
enum class Settled : std::uint8_t {
  ok,           // the tool answered a result: the step stands
  undone,       // the tool answered an error: the step was rolled back (it was the latest)
  compensated,  // the tool answered an error: the step was compensated (others came after it)
  charged,      // the tool answered an error, but the step could not be undone: it stays
                // charged (the outcome recorded says why)
  unknown,      // no answer (the upstream is gone or timed out, or the client cancelled the call):
                // the charge stays, the tool may have acted
};

/// Where a step's outcome is recorded: the trace of `own`, or the shared trace of `shared`
/// (an `attested` entry of attestor `gateway`), or nowhere when both are null.
struct OutcomeTrace {
  kernel::SafetyKernel* own = nullptr;
  kernel::SharedKernel* shared = nullptr;
};

/// Records what became of step `receipt` of action `a` after its call was answered `answer`,
/// and undoes the step on an error: rolled back when it is still the latest step in effect,
/// compensated otherwise (`Committer::compensate`), left charged when neither can be done.
/// The outcome (an `attested` entry of attestor `gateway`, recorded after the undo) says which,
/// or why it stays charged. `why_gone` says why there was no answer.
Settled settle_step(driver::Committer& committer,
                    OutcomeTrace trace,
                    const kernel::Action& a,
                    const kernel::Receipt& receipt,
                    const UpstreamAnswer& answer,
                    const std::string& why_gone,
                    std::ostream& log);

/// `answer`, an answer of the upstream to the call of step `receipt`, as the client gets it
/// once the step is settled `settled`: when the tool answered an error (`undone`,
/// `compensated` or `charged`), the client is told what became of the step in `_meta` (of an
/// `isError` result) or `data` (of a JSON-RPC error) under `clampai/step`: `{"sequence": N,
/// "settled": "rolled_back" | "compensated" | "charged"}` (left out when the upstream put
/// something other than an object there). Otherwise `answer` as it is.
UpstreamAnswer settled_answer(UpstreamAnswer answer,
                              Settled settled,
                              const kernel::Receipt& receipt);

}  // namespace clampai::server
