#include "sign_cmd.hpp"

#include <filesystem>
#include <iostream>
#include <memory>
#include <system_error>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/sign.hpp"
#include "output.hpp"

namespace clampai::cli {

namespace ck = clampai::kernel;
namespace fs = std::filesystem;

namespace {
std::string keygen_out;
}  // namespace

CLI::App* add_keygen_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "keygen",
      "Make an Ed25519 key pair for signed traces: OUT (the private key, PKCS#8 PEM, mode 0600) "
      "and OUT.pub (the public key, SPKI PEM), as `openssl genpkey -algorithm ed25519` would");
  set_help_footer(cmd,
                  "0 written, 2 bad input (a file exists already: never overwritten)",
                  "clampai keygen trace-key.pem",
                  "docs/SERVE.md (Security model)");
  cmd->add_option("OUT", keygen_out, "The private key file to write (the public key: OUT.pub)")
      ->required();
  return cmd;
}

int run_keygen_command() {
  const std::string pub = keygen_out + ".pub";
  try {
    // Neither file is written if either exists: a key pair is written whole or not at all.
    for (const std::string& path : {keygen_out, pub}) {
      std::error_code ec;
      if (fs::symlink_status(path, ec).type() != fs::file_type::not_found)
        throw FileError("cannot write the key `" + path + "`: " + ck::describe_file(path) +
                        " exists there (a key is never overwritten: move it away, or choose "
                        "another name)");
    }
    const ck::SigningKey key = ck::SigningKey::generate();
    ck::write_file_atomically(keygen_out, key.private_pem(), false, "private key", 0600);
    try {
      ck::write_file_atomically(pub, key.public_pem(), false, "public key", 0644);
    } catch (...) {
      std::error_code ec;
      fs::remove(keygen_out, ec);  // ours: written a moment ago
      throw;
    }
  } catch (const Error& e) {
    return fail("text", "keygen", "", e.what());
  }
  std::cout << "wrote the private key " << keygen_out << " (keep it secret: it signs traces)"
            << " and the public key " << pub << " (give it to `clampai trace verify "
            << "--public-key`)\n";
  return 0;
}

std::function<std::string(std::string_view)> signer_from_key_file(const std::string& path) {
  std::shared_ptr<const ck::SigningKey> key;
  try {
    key = std::make_shared<const ck::SigningKey>(ck::SigningKey::load(path));
  } catch (const Error& e) {  // the message names the file
    throw FileError(std::string("--signing-key: ") + e.what());
  }
  return [key](std::string_view bytes) { return key->sign_hex(bytes); };
}

ck::VerifyingKey public_key_from_file(const std::string& path) {
  try {
    return ck::VerifyingKey::load(path);
  } catch (const Error& e) {  // the message names the file
    throw FileError(std::string("--public-key: ") + e.what());
  }
}

ck::SignatureCheck check_signed(ck::TraceReader& reader,
                                const ck::VerifyingKey& key,
                                ck::TraceCheck& check) {
  ck::SignatureCheck signatures = ck::check_signatures(reader, key);
  if (!signatures.ok) {
    check.ok = false;
    check.first_bad = signatures.first_bad;
    check.message = "signatures: " + signatures.message;
  }
  return signatures;
}

}  // namespace clampai::cli
