// open_input_file (see input_file.hpp).
#include "sim/base/input_file.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include "sim/base/error.hpp"

namespace dtsim {

std::ifstream open_input_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw InputError(fmt::format("{}: not a regular file; give {}", path, what));
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot open {}", path, what));
  return in;
}

}  // namespace dtsim
