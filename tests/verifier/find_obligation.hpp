// The obligation of a report with a given id (a test fails without it).
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "clampai/verifier.hpp"

namespace clampai::test {

inline const verifier::Obligation& find(const verifier::Report& r, const std::string& id) {
  for (const auto& o : r.obligations) {
    if (o.id == id) return o;
  }
  FAIL("no obligation " << id);
  throw;
}

}  // namespace clampai::test
