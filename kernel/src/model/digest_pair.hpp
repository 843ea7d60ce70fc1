// SHA-256 of trace lines as read (internal to the kernel library): a message given as two byte
// ranges (a line without its `hash` member), two messages at a time.
#pragma once

#include <string_view>

namespace clampai::kernel::detail {

/// A message: the bytes of `head` followed by those of `tail`.
struct SplitMessage {
  std::string_view head;
  std::string_view tail;
};

/// The SHA-256 digests of `a` and `b`, 32 bytes each, to `out_a` and `out_b`. Where the CPU has
/// the SHA extensions the two are computed interleaved (the rounds of one message run while
/// those of the other wait on their latency: about half the time of two in turn); otherwise,
/// and if the interleaved code ever disagreed with OpenSSL on its self-test, through OpenSSL.
void sha256_two(const SplitMessage& a,
                const SplitMessage& b,
                unsigned char* out_a,
                unsigned char* out_b);

/// The SHA-256 digest of `m` (32 bytes) to `out`, as `sha256_two` computes it.
void sha256_one(const SplitMessage& m, unsigned char* out);

/// The SHA-256 digest of `m`, as `sha256_one` computes it, written as 64 lowercase hex digits
/// to `hex` (not terminated).
void sha256_one_hex(const SplitMessage& m, char* hex);

/// The 32-byte `digest` as 64 lowercase hex digits, to `hex` (not terminated).
void digest_hex(const unsigned char* digest, char* hex);

/// Whether `hex` is the 64 lowercase hex digits of the 32-byte `digest`.
bool digest_is_hex(const unsigned char* digest, std::string_view hex);

}  // namespace clampai::kernel::detail
