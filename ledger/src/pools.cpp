// Budget pools on the PostgreSQL ledger (docs/POOLS.md, docs/LEDGER.md): created and changed
// from a pools file (`clampai ledger pools apply`), read (`clampai ledger pools show`). Commits
// charge them in postgres.cpp.
#include <pqxx/pqxx>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "clampai/kernel/number.hpp"
#include "clampai/ledger/ledger.hpp"
#include "session.hpp"

namespace clampai::ledger {

namespace {

constexpr long long kPoolsLock = 0x636c616d70706f6c;  // "clamppol": one `apply` at a time

// A figure the database wrote (numeric as text), exactly.
kernel::Decimal figure(const std::string& pool, const std::string& text) {
  std::optional<kernel::Decimal> d = kernel::Decimal::parse(text);
  if (!d)
    throw Error("pool `" + pool + "` has the figure `" + text + "` on the ledger, not a decimal");
  return *d;
}

constexpr const char* kAllPools =
    "SELECT name, coalesce(parent, ''), total::text, gross::text, net::text FROM "
    "clampai_ledger_pools ORDER BY depth, name";

}  // namespace

std::vector<kernel::LedgerPool> detail::pool_rows(const pqxx::result& rows) {
  std::vector<kernel::LedgerPool> out;
  out.reserve(rows.size());
  for (const auto& row : rows)
    out.push_back({row[0].as<std::string>(),
                   row[1].as<std::string>(),
                   row[2].as<std::string>(),
                   row[3].as<std::string>(),
                   row[4].as<std::string>()});
  return out;
}

std::vector<PoolChange> apply_pools(const std::string& conninfo,
                                    const std::vector<kernel::PoolDecl>& decls) {
  kernel::check_pools(decls);
  // Each pool's depth (0: a root), from the file (every parent is declared there).
  std::map<std::string, const kernel::PoolDecl*> by_name;
  for (const kernel::PoolDecl& d : decls) by_name[d.name] = &d;
  std::map<std::string, int> depth;
  for (const kernel::PoolDecl& d : decls) {
    int n = 0;
    for (const kernel::PoolDecl* p = &d; !p->parent.empty(); p = by_name.at(p->parent)) ++n;
    depth[d.name] = n;
  }
  std::vector<const kernel::PoolDecl*> order;
  order.reserve(decls.size());
  for (const kernel::PoolDecl& d : decls) order.push_back(&d);
  std::sort(order.begin(), order.end(), [&](const auto* a, const auto* b) {
    return std::pair(depth[a->name], a->name) < std::pair(depth[b->name], b->name);
  });

  detail::Session session;
  session.conninfo = conninfo;
  session.application_name = "clampai-pools";
  detail::migrate(session);
  return session.guarded([&] {
    pqxx::work w(session.connection());
    w.exec_params("SELECT pg_advisory_xact_lock($1)", kPoolsLock);
    // Every pool row locked in the commits' order (depth, then name): a total changes while no
    // commit is between its check and its charge.
    std::map<std::string, kernel::LedgerPool> have;
    for (kernel::LedgerPool& p : detail::pool_rows(w.exec(std::string(kAllPools) + " FOR UPDATE")))
      have.emplace(p.name, std::move(p));
    std::vector<PoolChange> out;
    for (const kernel::PoolDecl* d : order) {
      const std::string total = d->total.to_string();
      const auto it = have.find(d->name);
      if (it == have.end()) {
        w.exec_params(
            "INSERT INTO clampai_ledger_pools (name, parent, depth, total) VALUES ($1, "
            "nullif($2, ''), $3, $4::numeric)",
            d->name,
            d->parent,
            depth[d->name],
            total);
        out.push_back({d->name, d->parent, "created", "", total, "0", "0"});
        continue;
      }
      const kernel::LedgerPool& row = it->second;
      if (row.parent != d->parent)
        throw InvalidArgument(
            "pool `" + d->name + "`: its parent on the ledger is " +
            (row.parent.empty() ? "none (a root)" : "`" + row.parent + "`") + ", the file says " +
            (d->parent.empty() ? "none (a root)" : "`" + d->parent + "`") +
            ": a pool's parent never changes (its spend is part of its parent's); nothing was "
            "applied");
      PoolChange c{d->name, d->parent, "unchanged", row.total, row.total, row.gross, row.net};
      if (figure(d->name, row.total) != d->total) {
        if (d->total < figure(d->name, row.net))
          throw InvalidArgument("pool `" + d->name + "`: cannot lower its total to " + total +
                                ": its net spend is " + row.net + " (gross " + row.gross +
                                ", total " + row.total +
                                "); a total never goes below what is spent; nothing was applied");
        w.exec_params(
            "UPDATE clampai_ledger_pools SET total = $2::numeric, updated_at = now() WHERE name = "
            "$1",
            d->name,
            total);
        c.action = "changed";
        c.total = total;
      }
      out.push_back(std::move(c));
      have.erase(it);
    }
    for (auto& [name, row] : have)
      out.push_back({name, row.parent, "kept", row.total, row.total, row.gross, row.net});
    w.commit();
    return out;
  });
}

std::vector<kernel::PoolStatus> pool_status(std::vector<kernel::LedgerPool> rows, bool leaf_first) {
  if (leaf_first) std::reverse(rows.begin(), rows.end());
  std::vector<kernel::PoolStatus> out;
  out.reserve(rows.size());
  for (const kernel::LedgerPool& r : rows) {
    const kernel::Decimal total = figure(r.name, r.total);
    const kernel::Decimal gross = figure(r.name, r.gross);
    const kernel::Decimal net = figure(r.name, r.net);
    const int scale = std::max({total.scale, gross.scale, net.scale});
    const auto at = [&](const kernel::Decimal& d) {
      const std::optional<kernel::Decimal> x = d.rescaled(scale);
      if (!x)
        throw Error("pool `" + r.name + "`: " + d.to_string() + " does not fit at scale " +
                    std::to_string(scale));
      return x->units;
    };
    kernel::PoolStatus s;
    s.name = r.name;
    s.parent = r.parent;
    s.scale = scale;
    s.total = at(total);
    s.gross = at(gross);
    s.net = at(net);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<kernel::LedgerPool> read_pools(const std::string& conninfo) {
  detail::Session session;
  session.conninfo = conninfo;
  session.application_name = "clampai-pools";
  return session.guarded([&] {
    pqxx::read_transaction r(session.connection());
    if (!r.exec("SELECT to_regclass('clampai_ledger_pools') IS NOT NULL")[0][0].as<bool>())
      return std::vector<kernel::LedgerPool>{};
    return detail::pool_rows(r.exec(kAllPools));
  });
}

}  // namespace clampai::ledger
