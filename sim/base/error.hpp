// InputError: the one error type for bad input at the boundaries (scenario files, CLI values,
// topology files, catalog names). Its message names the file/key/value and what would be valid;
// main() prints it and exits with status 2. Inside the engine, invariants are asserts.
#pragma once
#include <stdexcept>
#include <string>

namespace dtsim {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace dtsim
