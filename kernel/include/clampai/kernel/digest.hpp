// SHA-256 digests and HMAC-SHA-256 seals (through OpenSSL's EVP interface), as lowercase hex.
#pragma once

#include <string>
#include <string_view>

namespace clampai::kernel {

/// The SHA-256 digest of `data`, as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

/// The HMAC-SHA-256 of `data` under `key` (RFC 2104), as 64 lowercase hex digits.
std::string hmac_sha256_hex(std::string_view key, std::string_view data);

}  // namespace clampai::kernel
