// Loading task specs (JSON, see schema/task-spec.schema.json and docs/SPEC.md) and states.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "clampai/kernel/model.hpp"
#include "clampai/kernel/state.hpp"

namespace clampai::kernel {

/// Reads a task spec from JSON text into declarations, checking its structure (keys, JSON
/// types, numbers); `build_model` then checks its meaning.
/// @throws SpecError naming the JSON path (or `line:column` for malformed JSON).
TaskDecl parse_spec(std::string_view json_text);

/// parse_spec followed by build_model.
/// @throws SpecError as both do.
std::shared_ptr<const TaskModel> load_spec(std::string_view json_text);

/// Reads (with `read_file`: a regular file within `max_input_bytes()`) and loads a spec file.
/// @throws SpecError as load_spec does; FileError if the file cannot be read.
std::shared_ptr<const TaskModel> load_spec_file(const std::string& path);

/// Reads a state of `model` from JSON text: an object from variable name to value. Variables
/// it does not mention keep their initial values.
/// @throws SpecError naming the variable for an unknown name or a value of the wrong type.
State parse_state(const TaskModel& model, std::string_view json_text);

/// Reads named numbers (action parameters, weights) from a JSON object such as
/// `{"n": 3, "amount": "12.50"}`: a JSON number is read exactly from its text, never through
/// binary floating point; a string must hold a decimal. Keys must be unique.
/// @throws SpecError whose path is `what` (malformed JSON, a duplicate key, not an object) or
/// `what.NAME` (a value that is not a number or out of range).
std::vector<std::pair<std::string, Value>> parse_named_numbers(std::string_view json_text,
                                                               const std::string& what);

/// Reads the whole contents of a file: `read_file(path)` (file.hpp).
/// @throws FileError naming the file if it cannot be read, is not a regular file, or is larger
/// than `max_input_bytes()`.
std::string read_text_file(const std::string& path);

}  // namespace clampai::kernel
