// SHA-256 through OpenSSL EVP, with the digest fetched once.
#include "clampai/kernel/digest.hpp"

#include <openssl/evp.h>

#include "clampai/kernel/assert.hpp"

namespace clampai::kernel {

std::string sha256_hex(std::string_view data) {
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  CLAMPAI_ALWAYS_ASSERT(md != nullptr);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  CLAMPAI_ALWAYS_ASSERT(EVP_Digest(data.data(), data.size(), out, &len, md, nullptr) == 1);
  CLAMPAI_ALWAYS_ASSERT(len == 32);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex(64, '0');
  for (unsigned i = 0; i < 32; ++i) {
    hex[2 * i] = kHex[out[i] >> 4];
    hex[2 * i + 1] = kHex[out[i] & 0xF];
  }
  return hex;
}

}  // namespace clampai::kernel
