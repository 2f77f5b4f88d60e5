// Opening an input file: only a regular file is read. A folder, FIFO, device or socket would read
// as empty, block on a writer that never comes, or never end (/dev/zero).
#pragma once
#include <fstream>
#include <string>

namespace dtsim {

// Opens `path` for reading; throws InputError "PATH: not a regular file; give WHAT" or "PATH:
// cannot open WHAT" (what: "the validation file", "the claims file", ...).
std::ifstream open_input_file(const std::string& path, const std::string& what);

}  // namespace dtsim
