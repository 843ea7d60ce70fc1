// Signed traces on the command line: `clampai keygen` and what `--signing-key` sets up
// (private to the CLI).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <string_view>

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

}  // namespace clampai::cli
