// Signed traces on the command line: `clampai keygen` and what `--signing-key` sets up
// (private to the CLI).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <string_view>

#include "clampai/kernel/sign.hpp"
#include "clampai/kernel/trace_reader.hpp"

namespace clampai::cli {

/// Registers `keygen` on `app` and returns it.
CLI::App* add_keygen_command(CLI::App& app);
/// Runs the parsed `keygen`: writes OUT (the private key, PKCS#8 PEM, mode 0600) and OUT.pub
/// (its public key, SubjectPublicKeyInfo PEM); never over a file. Returns 0, or 2.
int run_keygen_command();

/// The signer of `--signing-key FILE` (KernelOptions::signer): signs with the Ed25519 private
/// key in `path`. @throws InvalidArgument naming the option and file if it is no such key;
/// FileError if it cannot be read.
std::function<std::string(std::string_view)> signer_from_key_file(const std::string& path);

/// The key of `trace verify --public-key FILE`. @throws FileError naming the option and the
/// file if it cannot be read or is no Ed25519 public key (bad input, not a broken trace).
kernel::VerifyingKey public_key_from_file(const std::string& path);

/// `trace verify --public-key`: the signatures of the trace `reader` reads (a file's or a
/// ledger's) checked with `key`; if they fail, so does `check`, with their message.
kernel::SignatureCheck check_signed(kernel::TraceReader& reader,
                                    const kernel::VerifyingKey& key,
                                    kernel::TraceCheck& check);

}  // namespace clampai::cli
