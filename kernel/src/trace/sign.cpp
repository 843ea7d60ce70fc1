// Ed25519 through OpenSSL's EVP interface (one-shot EVP_DigestSign/Verify: Ed25519 hashes the
// message itself), and the check of a trace's signatures.
#include "clampai/kernel/sign.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <vector>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/trace_reader.hpp"

namespace clampai::kernel {

namespace {

// Keys are small; a file much larger is no key.
constexpr std::size_t kMaxKeyBytes = 64 * 1024;

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

std::string hex(const unsigned char* bytes, std::size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 0xF];
  }
  return out;
}

std::optional<std::vector<unsigned char>> unhex(std::string_view text) {
  if (text.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::vector<unsigned char> out(text.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int hi = digit(text[2 * i]);
    const int lo = digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return out;
}

// What a PEM text holds, by its first armour line (for messages).
std::string pem_label(std::string_view pem) {
  const std::string_view begin = "-----BEGIN ";
  const auto at = pem.find(begin);
  if (at == std::string_view::npos) return "";
  const auto end = pem.find("-----", at + begin.size());
  if (end == std::string_view::npos) return "";
  return std::string(pem.substr(at + begin.size(), end - at - begin.size()));
}

std::string describe_label(const std::string& label) {
  if (label.empty()) return "no PEM block (`-----BEGIN ...-----`)";
  return "a PEM `" + label + "`";
}

Pkey read_pem(std::string_view pem, bool private_key) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) throw std::bad_alloc();
  // No passphrase callback: an encrypted key is refused, never prompted for.
  auto no_passphrase = [](char*, int, int, void*) -> int { return -1; };
  EVP_PKEY* k = private_key ? PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr)
                            : PEM_read_bio_PUBKEY(bio.get(), nullptr, no_passphrase, nullptr);
  ERR_clear_error();
  return Pkey(k);
}

void require_ed25519(const EVP_PKEY* k, const std::string& origin, const char* what) {
  if (EVP_PKEY_get_base_id(k) != EVP_PKEY_ED25519)
    throw InvalidArgument(origin + ": " + what + " is " +
                          std::string(EVP_PKEY_get0_type_name(k) ? EVP_PKEY_get0_type_name(k)
                                                                 : "of another algorithm") +
                          ", not Ed25519 (make one with `clampai keygen FILE`)");
}

std::string write_pem(EVP_PKEY* k, bool private_key) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (!bio) throw std::bad_alloc();
  const int ok = private_key ? PEM_write_bio_PKCS8PrivateKey(
                                   bio.get(), k, nullptr, nullptr, 0, nullptr, nullptr)
                             : PEM_write_bio_PUBKEY(bio.get(), k);
  if (ok != 1) {
    ERR_clear_error();
    throw Error("cannot write the key as PEM");
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

}  // namespace

struct SigningKey::Impl {
  Pkey key;
};
struct VerifyingKey::Impl {
  Pkey key;
};

SigningKey::SigningKey(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SigningKey::SigningKey(SigningKey&&) noexcept = default;
SigningKey& SigningKey::operator=(SigningKey&&) noexcept = default;
SigningKey::~SigningKey() = default;

SigningKey SigningKey::load(const std::string& path) {
  return from_pem(read_file(path, kMaxKeyBytes), "signing key `" + path + "`");
}

SigningKey SigningKey::from_pem(std::string_view pem, const std::string& origin) {
  Pkey k = read_pem(pem, /*private_key=*/true);
  if (!k) {
    const std::string label = pem_label(pem);
    if (label == "PUBLIC KEY")
      throw InvalidArgument(origin +
                            ": a public key, where the private key is needed (give the file "
                            "`clampai keygen` wrote without `.pub`)");
    if (label == "ENCRYPTED PRIVATE KEY")
      throw InvalidArgument(origin + ": an encrypted private key (give it unencrypted, mode 0600)");
    throw InvalidArgument(origin + ": not a PEM private key: found " + describe_label(label) +
                          " (expected `-----BEGIN PRIVATE KEY-----`, as `clampai keygen` writes)");
  }
  require_ed25519(k.get(), origin, "the key");
  auto impl = std::make_unique<Impl>();
  impl->key = std::move(k);
  return SigningKey(std::move(impl));
}

SigningKey SigningKey::generate() {
  EVP_PKEY* k = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  if (k == nullptr) {
    ERR_clear_error();
    throw Error("cannot generate an Ed25519 key");
  }
  auto impl = std::make_unique<Impl>();
  impl->key = Pkey(k);
  return SigningKey(std::move(impl));
}

std::string SigningKey::sign_hex(std::string_view data) const {
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  unsigned char sig[64];
  std::size_t n = sizeof sig;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, impl_->key.get()) != 1 ||
      EVP_DigestSign(
          ctx.get(), sig, &n, reinterpret_cast<const unsigned char*>(data.data()), data.size()) !=
          1) {
    ERR_clear_error();
    throw Error("cannot sign with the Ed25519 key");
  }
  return hex(sig, n);
}

std::string SigningKey::private_pem() const { return write_pem(impl_->key.get(), true); }
std::string SigningKey::public_pem() const { return write_pem(impl_->key.get(), false); }

VerifyingKey::VerifyingKey(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VerifyingKey::VerifyingKey(VerifyingKey&&) noexcept = default;
VerifyingKey& VerifyingKey::operator=(VerifyingKey&&) noexcept = default;
VerifyingKey::~VerifyingKey() = default;

VerifyingKey VerifyingKey::load(const std::string& path) {
  return from_pem(read_file(path, kMaxKeyBytes), "public key `" + path + "`");
}

VerifyingKey VerifyingKey::from_pem(std::string_view pem, const std::string& origin) {
  Pkey k = read_pem(pem, /*private_key=*/false);
  if (!k) {
    const std::string label = pem_label(pem);
    if (label == "PRIVATE KEY" || label == "ENCRYPTED PRIVATE KEY")
      throw InvalidArgument(origin +
                            ": a private key, where the public key is needed (give the `.pub` "
                            "file `clampai keygen` wrote; the private key stays with the signer)");
    throw InvalidArgument(origin + ": not a PEM public key: found " + describe_label(label) +
                          " (expected `-----BEGIN PUBLIC KEY-----`, as `clampai keygen` writes)");
  }
  require_ed25519(k.get(), origin, "the key");
  auto impl = std::make_unique<Impl>();
  impl->key = std::move(k);
  return VerifyingKey(std::move(impl));
}

bool VerifyingKey::verify_hex(std::string_view data, std::string_view signature_hex) const {
  const auto sig = unhex(signature_hex);
  if (!sig || sig->size() != 64) return false;
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx) throw std::bad_alloc();
  if (EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, impl_->key.get()) != 1) {
    ERR_clear_error();
    throw Error("cannot verify with the Ed25519 key");
  }
  const int ok = EVP_DigestVerify(ctx.get(),
                                  sig->data(),
                                  sig->size(),
                                  reinterpret_cast<const unsigned char*>(data.data()),
                                  data.size());
  ERR_clear_error();
  return ok == 1;
}

SignatureCheck check_signatures(TraceReader& reader, const VerifyingKey& key) {
  SignatureCheck out;
  TraceEntry e;
  std::size_t index = 0;
  for (; reader.next(e); ++index) {
    const bool point = e.kind == EntryKind::sealed || e.kind == EntryKind::checkpoint;
    if (!point && e.signature.empty()) continue;
    const std::string what =
        "entry " + std::to_string(index) + " (" + std::string(to_string(e.kind)) + ")";
    if (e.signature.empty()) {
      out.first_bad = index;
      out.message = what + " is not signed";
      break;
    }
    if (!key.verify_hex(e.signed_bytes(), e.signature)) {
      out.first_bad = index;
      out.message = what +
                    ": its signature does not verify with the public key (the chain "
                    "before it was changed, or another key signed it)";
      break;
    }
    ++out.signed_entries;
    out.covered_through = index;
  }
  if (out.first_bad) {
    out.entries = index + 1;
    return out;
  }
  const TraceCheck chain = reader.finish();
  out.entries = chain.entries;
  if (!chain.ok) {
    out.first_bad = chain.first_bad;
    out.message = chain.message;
    return out;
  }
  out.uncovered = out.covered_through ? out.entries - (*out.covered_through + 1) : out.entries;
  if (out.signed_entries == 0) {
    out.message = "no entry is signed (no signed seal or checkpoint): nothing proves who wrote it";
    return out;
  }
  out.ok = true;
  out.message = std::to_string(out.signed_entries) + " signature(s) verified";
  out.message += out.uncovered == 0 ? ", the last one covering every entry"
                                    : "; the last " + std::to_string(out.uncovered) +
                                          " entries follow the last signature: none covers them";
  return out;
}

}  // namespace clampai::kernel
