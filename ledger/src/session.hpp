// One libpq connection of a ledger, opened again on demand, and how its failures become the
// kernel's errors (private to ledger/: postgres.cpp and escrow.cpp).
#pragma once

#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <utility>
#include <vector>

#include "clampai/ledger/ledger.hpp"

namespace clampai::ledger::detail {

struct Session {
  std::string conninfo;
  std::string application_name;  // tests find the connection by it (pg_stat_activity)
  std::unique_ptr<pqxx::connection> conn;

  /// The open connection, connecting if there is none. @throws LedgerUnavailable.
  pqxx::connection& connection() {
    if (conn && conn->is_open()) return *conn;
    conn.reset();
    try {
      auto c = std::make_unique<pqxx::connection>(conninfo);
      pqxx::nontransaction n(*c);
      n.exec("SET application_name = " + n.quote(application_name));
      conn = std::move(c);
    } catch (const pqxx::broken_connection& e) {
      throw LedgerUnavailable("cannot connect to the ledger " + redact_url(conninfo) + ": " +
                              e.what());
    }
    return *conn;
  }

  /// Runs `f`, turning the ways a connection fails into LedgerUnavailable (and dropping the
  /// connection, so that the next call reconnects): an SQLSTATE of class 08, 57 or 53 means the
  /// server or the connection went away, and the outcome of what was in flight is unknown.
  /// Other SQL errors become Error, with their SQLSTATE.
  template <typename F>
  auto guarded(F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const LedgerUnavailable&) {
      conn.reset();
      throw;
    } catch (const pqxx::broken_connection& e) {
      conn.reset();
      throw LedgerUnavailable("lost the connection to the ledger " + redact_url(conninfo) + ": " +
                              e.what());
    } catch (const pqxx::in_doubt_error& e) {
      conn.reset();
      throw LedgerUnavailable("the ledger " + redact_url(conninfo) +
                              " did not confirm a commit: " + e.what());
    } catch (const pqxx::sql_error& e) {
      const std::string cls = e.sqlstate().substr(0, 2);
      if (cls != "08" && cls != "57" && cls != "53") {
        throw Error("the ledger " + redact_url(conninfo) + ": " + e.what() + " (SQLSTATE " +
                    e.sqlstate() + ")");
      }
      conn.reset();
      throw LedgerUnavailable("the ledger " + redact_url(conninfo) +
                              " is unavailable: " + e.what());
    }
  }
};

/// Creates or upgrades the ledger's schema in `session`'s database (its versioned migrations,
/// under an advisory lock; postgres.cpp). @throws Error if the database's schema is newer.
void migrate(Session& session);

/// Pool rows selected as (name, parent or '', total, gross, net), as text (pools.cpp).
std::vector<kernel::LedgerPool> pool_rows(const pqxx::result& rows);

}  // namespace clampai::ledger::detail
