// The approvals' tickets of a trace (tickets.hpp).
#include "clampai/kernel/tickets.hpp"

namespace clampai::kernel {

std::optional<std::string> OpenTickets::refusal(const TraceEntry& e) const {
  const std::string kind(to_string(e.kind));
  switch (e.kind) {
    case EntryKind::approval_requested:
      if (e.ticket.empty()) return "an `approval_requested` entry without a ticket";
      if (open_.count(e.ticket) > 0)
        return "ticket `" + e.ticket + "` is requested again while it is open";
      return std::nullopt;
    case EntryKind::approval_granted:
    case EntryKind::approval_denied:
    case EntryKind::approval_expired: {
      if (e.ticket.empty()) return "an `" + kind + "` entry without a ticket";
      const auto it = open_.find(e.ticket);
      if (it == open_.end())
        return "an `" + kind + "` entry of ticket `" + e.ticket +
               "`, which is not open (answered or expired already, or never requested)";
      if (it->second != e.action)
        return "an `" + kind + "` entry of ticket `" + e.ticket + "` names action `" + e.action +
               "`, and the ticket is for `" + it->second + "`";
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

void OpenTickets::note(const TraceEntry& e) {
  if (e.kind == EntryKind::approval_requested)
    open_.emplace(e.ticket, e.action);
  else if (e.kind == EntryKind::approval_granted || e.kind == EntryKind::approval_denied ||
           e.kind == EntryKind::approval_expired)
    open_.erase(e.ticket);
}

bool OpenTickets::open(std::string_view ticket) const { return open_.find(ticket) != open_.end(); }

}  // namespace clampai::kernel
