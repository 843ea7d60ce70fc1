// SHA-256 through OpenSSL EVP, with the digest fetched once.
#include "clampai/kernel/digest.hpp"

#include <openssl/evp.h>

#include "clampai/kernel/assert.hpp"

namespace clampai::kernel {

namespace {

std::string hex32(const unsigned char* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex(64, '0');
  for (unsigned i = 0; i < 32; ++i) {
    hex[2 * i] = kHex[out[i] >> 4];
    hex[2 * i + 1] = kHex[out[i] & 0xF];
  }
  return hex;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  CLAMPAI_ALWAYS_ASSERT(md != nullptr);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  CLAMPAI_ALWAYS_ASSERT(EVP_Digest(data.data(), data.size(), out, &len, md, nullptr) == 1);
  CLAMPAI_ALWAYS_ASSERT(len == 32);
  return hex32(out);
}

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  std::size_t len = 0;
  // A zero-length key is valid HMAC; OpenSSL wants a non-null pointer for it.
  static const unsigned char kEmpty = 0;
  const void* k = key.empty() ? static_cast<const void*>(&kEmpty) : key.data();
  CLAMPAI_ALWAYS_ASSERT(EVP_Q_mac(nullptr,
                                  "HMAC",
                                  nullptr,
                                  "SHA256",
                                  nullptr,
                                  k,
                                  key.size(),
                                  reinterpret_cast<const unsigned char*>(data.data()),
                                  data.size(),
                                  out,
                                  sizeof out,
                                  &len) != nullptr);
  CLAMPAI_ALWAYS_ASSERT(len == 32);
  return hex32(out);
}

}  // namespace clampai::kernel
