// Ed25519 keys and signatures (through OpenSSL's EVP interface) for signed traces: the seal and
// every checkpoint carry a signature of their entry (docs/SPEC.md, 13; docs/SERVE.md, security
// model). Keys are PEM files as `openssl genpkey -algorithm ed25519` writes them: the private
// key PKCS#8, the public key SubjectPublicKeyInfo.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "clampai/kernel/trace.hpp"

namespace clampai::kernel {

class TraceReader;
class SafetyKernel;

/// An Ed25519 private key.
class SigningKey {
 public:
  /// Reads a PEM private key (PKCS#8, `-----BEGIN PRIVATE KEY-----`) from `path`.
  /// @throws FileError if the file cannot be read; InvalidArgument naming the file and what is
  /// wrong: not PEM, a public key where the private one is needed, another algorithm than
  /// Ed25519, an encrypted key.
  static SigningKey load(const std::string& path);
  /// The same from PEM text; `origin` names it in errors.
  static SigningKey from_pem(std::string_view pem, const std::string& origin);
  /// A new key from the system's random source.
  static SigningKey generate();

  SigningKey(SigningKey&&) noexcept;
  SigningKey& operator=(SigningKey&&) noexcept;
  ~SigningKey();

  /// The signature of `data` (64 bytes), as 128 lowercase hex digits.
  [[nodiscard]] std::string sign_hex(std::string_view data) const;
  /// The key as PEM: PKCS#8 (`-----BEGIN PRIVATE KEY-----`).
  [[nodiscard]] std::string private_pem() const;
  /// Its public key as PEM: SubjectPublicKeyInfo (`-----BEGIN PUBLIC KEY-----`).
  [[nodiscard]] std::string public_pem() const;

 private:
  struct Impl;
  explicit SigningKey(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// An Ed25519 public key.
class VerifyingKey {
 public:
  /// Reads a PEM public key (SubjectPublicKeyInfo, `-----BEGIN PUBLIC KEY-----`) from `path`.
  /// @throws FileError if the file cannot be read; InvalidArgument naming the file and what is
  /// wrong (not PEM, a private key, another algorithm).
  static VerifyingKey load(const std::string& path);
  /// The same from PEM text; `origin` names it in errors.
  static VerifyingKey from_pem(std::string_view pem, const std::string& origin);

  VerifyingKey(VerifyingKey&&) noexcept;
  VerifyingKey& operator=(VerifyingKey&&) noexcept;
  ~VerifyingKey();

  /// True iff `signature_hex` (128 hex digits) is this key's signature of `data`.
  [[nodiscard]] bool verify_hex(std::string_view data, std::string_view signature_hex) const;

 private:
  struct Impl;
  explicit VerifyingKey(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// What the signatures of a trace say (`check_signatures`).
struct SignatureCheck {
  bool ok = false;
  std::size_t entries = 0;         // entries read
  std::size_t signed_entries = 0;  // seals and checkpoints whose signature verifies
  /// The last entry a verified signature covers (it and every entry before it), if any.
  std::optional<std::size_t> covered_through{};
  /// Entries after the last verified signature: no signature covers them.
  std::size_t uncovered = 0;
  std::optional<std::size_t> first_bad{};  // the first seal or checkpoint that fails
  std::string message{};                   // what is wrong, or a summary
};

/// Checks every signature of the trace `reader` reads (its chain is checked by the reader as
/// it goes: a broken chain is reported as the reader reports it): every seal and checkpoint
/// must carry a signature that `key` verifies over the entry's `signed_bytes()`; a trace with
/// no signed entry fails. Entries after the last signature are counted in `uncovered`.
/// @throws TraceError if the trace cannot be read.
SignatureCheck check_signatures(TraceReader& reader, const VerifyingKey& key);

/// `--checkpoint-every N`: a `checkpoint` entry (signed by the kernel's
/// `KernelOptions::signer`, if any) once N entries have been appended since the last one (or
/// since the kernel started). Call `after` after each operation on the kernel.
class Checkpoints {
 public:
  /// `every` 0: never. `length` is the kernel's `trace_length()` now.
  Checkpoints(std::uint64_t every, std::uint64_t length);
  /// Appends a checkpoint to `kernel` if one is due (and the kernel is not sealed); true if it
  /// did. Thread-safe: of threads that find one due, one appends it.
  /// @throws what `SafetyKernel::record_note` throws (a trace that cannot be written, a
  /// signer that fails).
  bool after(SafetyKernel& kernel);

 private:
  std::uint64_t every_;
  std::atomic<std::uint64_t> due_;  // the trace length at which the next one is due
  std::mutex mutex_;
};

}  // namespace clampai::kernel
