// `clampai agent --upstream`: the agent's committed steps executed through their bound tools on
// the upstream (gateway.hpp, `upstream_committer`), through the gateway's one upstream client.
#include <ostream>
#include <variant>

#include "clampai/driver/committer.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/server/gateway.hpp"
#include "clampai/server/mcp.hpp"
#include "json_out.hpp"
#include "jsonrpc.hpp"
#include "ops.hpp"
#include "upstream.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;
using ck::jsonio::JsonNode;

namespace {

// Sets the member at `path` of the object `root`, making the objects on the way.
void put(JsonNode& root, const std::vector<std::string>& path, JsonNode value) {
  JsonNode* at = &root;
  for (std::size_t k = 0; k < path.size(); ++k) {
    JsonNode* next = nullptr;
    for (auto& [key, member] : at->members) {
      if (key == path[k]) next = &member;
    }
    if (next == nullptr) {
      next = &at->add(path[k], k + 1 == path.size() ? JsonNode() : JsonNode::make_object());
    }
    if (k + 1 == path.size()) {
      *next = std::move(value);
      return;
    }
    if (next->kind != JsonNode::Kind::object) *next = JsonNode::make_object();
    at = next;
  }
}

class ToolCommitter final : public driver::Committer {
 public:
  ToolCommitter(driver::Committer& inner,
                OutcomeTrace trace,
                const Bindings& bindings,
                const GatewayOptions& options,
                std::ostream& log)
      : inner_(inner), trace_(trace), log_(log), upstream_(options, log) {
    const UpstreamAnswer init = upstream_.initialize(mcp_protocol_versions[0], true);
    if (init.kind != UpstreamAnswer::Kind::result) {
      const JsonNode* msg = init.body.find("message");
      throw UpstreamError("the upstream did not initialise: " +
                          (init.kind == UpstreamAnswer::Kind::error && msg != nullptr
                               ? msg->text
                               : "it is gone (" + upstream_.why_gone() + ")"));
    }
    const ck::TaskModel& model = inner.model();
    tool_of_.assign(model.actions.size(), nullptr);
    for (const ToolBinding& t : bindings.tools) {
      const ck::Action& a = model.actions[t.action];
      if (tool_of_[t.action] != nullptr)
        throw InvalidArgument("action `" + a.id + "` is bound to two tools, `" +
                              tool_of_[t.action]->tool + "` and `" + t.tool +
                              "`: the agent could not tell which one to call");
      tool_of_[t.action] = &t;
      for (const auto& [index, expr] : t.params) {
        if (expr.op != BindingExpr::Op::number && expr.op != BindingExpr::Op::constant)
          throw InvalidArgument(
              "tool `" + t.tool + "`: parameter `" + a.parameters[index].name + "` of `" + a.id +
              "` is computed by `" + expr.text +
              "`, which cannot be written back into the call's arguments: `clampai agent "
              "--upstream` fills only number arguments (a binding `ARG`) and constants");
      }
      if (auto why = upstream_.hidden(t)) throw InvalidArgument(*why);
    }
  }

  [[nodiscard]] const ck::SafetyKernel& view() const override { return inner_.view(); }
  ck::Outcome commit(const ck::Proposal& proposal) override {
    std::string call;
    if (auto refused = prepare(proposal, call)) return std::move(*refused);
    return forward(inner_.commit(proposal), proposal.action, call);
  }
  ck::Outcome commit_decided(ck::Decided&& decided) override {
    const std::size_t action = decided.proposal().action;
    std::string call;
    if (auto refused = prepare(decided.proposal(), call)) return std::move(*refused);
    return forward(inner_.commit_decided(std::move(decided)), action, call);
  }
  ck::Decision record_rejection(const ck::Proposal& proposal) override {
    return inner_.record_rejection(proposal);
  }
  [[nodiscard]] bool records_rejections() const override { return inner_.records_rejections(); }
  std::optional<ck::Outcome> rollback(const ck::Receipt& receipt) override {
    return inner_.rollback(receipt);
  }
  ck::Outcome compensate(const ck::Receipt& receipt) override { return inner_.compensate(receipt); }
  std::uint64_t refresh() override { return inner_.refresh(); }
  [[nodiscard]] std::uint64_t head() const override { return inner_.head(); }
  std::optional<ck::Proposal> when_stuck(const driver::Choice& choice) override {
    return inner_.when_stuck(choice);
  }
  std::optional<driver::Termination> on_refusal(const ck::Decision& decision) override {
    return inner_.on_refusal(decision);
  }

 private:
  // A refusal that commits nothing (T5), said to the chooser like the kernel's.
  ck::Outcome refusal(std::size_t action, const std::string& subject, std::string message) const {
    ck::Decision d;
    d.action = action;
    d.reasons.push_back(
        ck::Reason{ck::ReasonCode::precondition_failed, subject, std::move(message)});
    return ck::Outcome{std::move(d), std::nullopt, inner_.view().state(), {}};
  }

  // The `tools/call` params of a bound action's proposal in `call`, or why it cannot be made.
  std::optional<ck::Outcome> prepare(const ck::Proposal& p, std::string& call) {
    const ToolBinding* t = p.action < tool_of_.size() ? tool_of_[p.action] : nullptr;
    if (t == nullptr) return std::nullopt;  // the kernel's state only
    if (!upstream_.alive())
      throw InvalidArgument("the upstream is gone (" + upstream_.why_gone() +
                            "): no call can be made");
    std::optional<std::string> hidden;
    try {
      hidden = upstream_.hidden(*t);
    } catch (const InvalidArgument& e) {
      hidden = e.what();
    }
    if (hidden) return refusal(p.action, t->tool, "not called: " + *hidden);
    const ck::TaskModel& model = inner_.model();
    const ck::Action& a = model.actions[p.action];
    JsonNode args = JsonNode::make_object();
    for (const auto& [index, expr] : t->params) {
      if (expr.op != BindingExpr::Op::number || index >= p.params.size()) continue;
      const ck::Value& v = p.params[index];
      if (v.kind() != ck::Value::Kind::number)
        return refusal(
            p.action, t->tool, "parameter `" + a.parameters[index].name + "` is not a number");
      JsonNode n;
      n.kind = JsonNode::Kind::number;
      n.text = v.to_string();
      put(args, expr.argument, std::move(n));
    }
    // What the gateway would compute from these arguments must be the proposal itself.
    ck::ParamMap values;
    for (const auto& [index, expr] : t->params) {
      try {
        values.emplace_back(a.parameters[index].name, evaluate_binding(expr, &args));
      } catch (const InvalidArgument& e) {
        return refusal(p.action, t->tool, std::string("not called: ") + e.what());
      }
    }
    const auto back = raw_proposal(model, p.action, values);
    if (const auto* why = std::get_if<std::string>(&back))
      return refusal(p.action, t->tool, "not called: " + *why);
    const ck::Proposal& q = std::get<ck::Proposal>(back);
    for (std::size_t k = 0; k < a.parameters.size() && k < p.params.size(); ++k) {
      if (k < q.params.size() && q.params[k] == p.params[k]) continue;
      std::string how = "its default";
      for (const auto& [index, expr] : t->params) {
        if (index == k) how = "its binding `" + expr.text + "`";
      }
      return refusal(p.action,
                     t->tool,
                     "not called: tool `" + t->tool + "` cannot carry `" + a.parameters[k].name +
                         "` = " + p.params[k].to_string() + " (" + how + " makes it " +
                         (k < q.params.size() ? q.params[k].to_string() : "nothing") + ")");
    }
    call = "{\"name\":";
    append_json_string(call, t->tool);
    call += ",\"arguments\":";
    jsonrpc::append_json(call, args);
    call += "}";
    return std::nullopt;
  }

  // After the commit: the call, and what became of it.
  ck::Outcome forward(ck::Outcome out, std::size_t action, const std::string& call) {
    if (call.empty() || !out.decision.approved || !out.receipt) return out;
    const ck::Action& a = inner_.model().actions[action];
    const ToolBinding& t = *tool_of_[action];
    const UpstreamAnswer answer = upstream_.request("tools/call", call);
    const std::string why = answer.kind == UpstreamAnswer::Kind::timeout
                                ? "the upstream did not answer in time"
                                : "the upstream is gone (" + upstream_.why_gone() + ")";
    const ck::Receipt receipt = *out.receipt;
    const Settled settled = settle_step(inner_, trace_, a, receipt, answer, why, log_);
    switch (settled) {
      case Settled::ok:
      case Settled::charged:
        return out;
      case Settled::undone:
      case Settled::compensated: {
        std::string said = "the tool answered an error";
        if (answer.kind == UpstreamAnswer::Kind::error) {
          if (const JsonNode* m = answer.body.find("message");
              m != nullptr && m->kind == JsonNode::Kind::string)
            said += ": " + m->text;
        }
        return refusal(action,
                       t.tool,
                       said + "; step " + std::to_string(receipt.sequence) + " was " +
                           (settled == Settled::undone ? "rolled back" : "compensated"));
      }
      case Settled::unknown:
        break;
    }
    throw InvalidArgument("step " + std::to_string(receipt.sequence) + " (`" + a.id + "`, tool `" +
                          t.tool + "`): " + why +
                          "; its outcome is unknown (the tool may have acted): its charge stays");
  }

  driver::Committer& inner_;
  OutcomeTrace trace_;
  std::ostream& log_;
  UpstreamClient upstream_;
  std::vector<const ToolBinding*> tool_of_;  // per action
};

}  // namespace

std::unique_ptr<driver::Committer> upstream_committer(driver::Committer& inner,
                                                      ck::SafetyKernel* own,
                                                      ck::SharedKernel* shared,
                                                      const Bindings& bindings,
                                                      const GatewayOptions& options,
                                                      std::ostream& log) {
  return std::make_unique<ToolCommitter>(inner, OutcomeTrace{own, shared}, bindings, options, log);
}

}  // namespace clampai::server
