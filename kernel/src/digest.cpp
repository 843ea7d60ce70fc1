// SHA-256 through OpenSSL EVP, with the digest fetched once.
#include "clampai/kernel/digest.hpp"

#include <openssl/evp.h>

#include "clampai/kernel/assert.hpp"

namespace clampai::kernel {

namespace {

void to_hex(const unsigned char* out, char* hex) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned i = 0; i < 32; ++i) {
    hex[2 * i] = kHex[out[i] >> 4];
    hex[2 * i + 1] = kHex[out[i] & 0xF];
  }
}

std::string hex32(const unsigned char* out) {
  std::string hex(64, '0');
  to_hex(out, hex.data());
  return hex;
}

const EVP_MD* sha256_md() {
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  CLAMPAI_ALWAYS_ASSERT(md != nullptr);
  return md;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  CLAMPAI_ALWAYS_ASSERT(EVP_Digest(data.data(), data.size(), out, &len, sha256_md(), nullptr) == 1);
  CLAMPAI_ALWAYS_ASSERT(len == 32);
  return hex32(out);
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  CLAMPAI_ALWAYS_ASSERT(ctx_ != nullptr);
  reset();
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::reset() {
  CLAMPAI_ALWAYS_ASSERT(EVP_DigestInit_ex2(static_cast<EVP_MD_CTX*>(ctx_), sha256_md(), nullptr) ==
                        1);
}

void Sha256::update(std::string_view data) {
  CLAMPAI_ALWAYS_ASSERT(
      EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data.data(), data.size()) == 1);
}

void Sha256::final_hex(char* hex) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  CLAMPAI_ALWAYS_ASSERT(EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), out, &len) == 1);
  CLAMPAI_ALWAYS_ASSERT(len == 32);
  to_hex(out, hex);
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
