// SHA-256 digests and HMAC-SHA-256 seals (through OpenSSL's EVP interface), as lowercase hex.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace clampai::kernel {

/// The SHA-256 digest of `data`, as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

/// The HMAC-SHA-256 of `data` under `key` (RFC 2104), as 64 lowercase hex digits.
std::string hmac_sha256_hex(std::string_view key, std::string_view data);

/// `bytes` (at most 64) bytes from the system's CSPRNG (OpenSSL's RAND_bytes), as 2 x `bytes`
/// lowercase hex digits: an id nobody can guess from another (approval tickets, MCP sessions).
/// @throws Error naming `what` if the generator fails.
std::string random_hex(std::size_t bytes, std::string_view what);

}  // namespace clampai::kernel
