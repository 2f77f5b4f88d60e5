// Helpers for tests that run the dtsim binary: a scratch folder for this test process (removed
// at exit), paths in it, and running `dtsim ARGS` with stdout and stderr captured.
#pragma once
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

namespace dtsim::test {

struct Outcome {
  int status;
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline const std::filesystem::path& scratch() {
  static const struct Dir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("dtsim_test_" + std::to_string(std::random_device{}()));
    Dir() { std::filesystem::create_directories(path); }
    ~Dir() { std::filesystem::remove_all(path); }
  } dir;
  return dir.path;
}

inline std::string file(const std::string& name) { return (scratch() / name).string(); }

// Runs `PREFIX exec dtsim ARGS` in the shell with its output in scratch files.
inline Outcome run_dtsim(const std::string& args, const std::string& prefix = "") {
  const std::string cmd = prefix + " exec " + DTSIM_BINARY + " " + args + " >" + file("out") + " 2>" + file("err");
  const int raw = std::system(cmd.c_str());
  return Outcome{WEXITSTATUS(raw), slurp(file("out")), slurp(file("err"))};
}

}  // namespace dtsim::test
