// SHA-256 digests and HMAC-SHA-256 seals (through OpenSSL's EVP interface), as lowercase hex.
#pragma once

#include <string>
#include <string_view>

namespace clampai::kernel {

/// The SHA-256 digest of `data`, as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

/// An incremental SHA-256 whose context is allocated once and reused for every digest (no
/// allocation per digest). Not thread-safe: one per thread or under a lock.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  /// Starts a new digest.
  void reset();
  void update(std::string_view data);
  /// Finishes the digest and writes it as 64 lowercase hex digits to `hex` (not terminated).
  void final_hex(char* hex);

 private:
  void* ctx_;  // EVP_MD_CTX
};

/// The HMAC-SHA-256 of `data` under `key` (RFC 2104), as 64 lowercase hex digits.
std::string hmac_sha256_hex(std::string_view key, std::string_view data);

}  // namespace clampai::kernel
