// The predicate and multi-dimensional attestors, and the fail-closed wrapper every caller uses.
#include "clampai/hardening/attestor.hpp"

#include <exception>
#include <set>

#include "clampai/kernel/error.hpp"

namespace clampai::hardening {

using clampai::InvalidArgument;

Attestation run_attestor(const Attestor& attestor, const AttestationContext& context) {
  try {
    Attestation a = attestor.attest(context);
    a.attestor = attestor.name();
    if (!a.error.empty()) a.passed = false;  // an attestor that could not decide fails
    return a;
  } catch (const std::exception& e) {
    Attestation a;
    a.attestor = attestor.name();
    a.error = std::string("threw: ") + e.what();
    return a;
  } catch (...) {
    Attestation a;
    a.attestor = attestor.name();
    a.error = "threw a non-standard exception";
    return a;
  }
}

PredicateAttestor::PredicateAttestor(std::string name, Predicate predicate)
    : name_(std::move(name)), predicate_(std::move(predicate)) {
  if (name_.empty()) throw InvalidArgument("predicate attestor: empty name");
  if (!predicate_) throw InvalidArgument("attestor `" + name_ + "`: no predicate");
}

Attestation PredicateAttestor::attest(const AttestationContext& context) const {
  Attestation a;
  a.attestor = name_;
  try {
    a.passed = predicate_(context, a.evidence);
  } catch (const std::exception& e) {
    a.passed = false;
    a.error = std::string("threw: ") + e.what();
  }
  return a;
}

MultiDimensionalAttestor::MultiDimensionalAttestor(
    std::string name, std::vector<std::shared_ptr<const Attestor>> dimensions, std::size_t quorum)
    : name_(std::move(name)), dimensions_(std::move(dimensions)), quorum_(quorum) {
  if (name_.empty()) throw InvalidArgument("multi-dimensional attestor: empty name");
  if (dimensions_.empty()) throw InvalidArgument("attestor `" + name_ + "`: no dimensions");
  std::set<std::string> names;
  for (const auto& d : dimensions_) {
    if (!d) throw InvalidArgument("attestor `" + name_ + "`: a dimension is null");
    if (!names.insert(d->name()).second)
      throw InvalidArgument("attestor `" + name_ + "`: dimension `" + d->name() +
                            "` appears twice");
  }
  if (quorum_ > dimensions_.size())
    throw InvalidArgument("attestor `" + name_ + "`: quorum " + std::to_string(quorum_) +
                          " exceeds its " + std::to_string(dimensions_.size()) + " dimensions");
  if (quorum_ == 0) quorum_ = dimensions_.size();
}

Attestation MultiDimensionalAttestor::attest(const AttestationContext& context) const {
  Attestation a;
  a.attestor = name_;
  std::size_t passed = 0;
  for (const auto& d : dimensions_) {
    a.dimensions.push_back(run_attestor(*d, context));
    if (a.dimensions.back().passed) ++passed;
  }
  a.passed = passed >= quorum_;
  a.evidence = std::to_string(passed) + " of " + std::to_string(dimensions_.size()) +
               " dimensions passed (" + std::to_string(quorum_) + " required)";
  for (const Attestation& d : a.dimensions) {
    if (!d.passed)
      a.evidence += "; `" + d.attestor + "` failed" + (d.error.empty() ? "" : ": " + d.error);
  }
  return a;
}

}  // namespace clampai::hardening
