// docs/scenario-keys.md names exactly the scenario keys dtsim reads (scenario_options()), so the
// reference cannot drift from the parser: a key added to one and not the other fails here.
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "sim/scenario/scenario.hpp"

TEST_CASE("docs/scenario-keys.md names exactly the scenario keys", "[cli][docs]") {
  std::set<std::string> parsed;
  const auto options = dtsim::scenario_options();
  for (const auto& option : options.options()) parsed.insert(option->long_name());

  std::ifstream in(std::string(DTSIM_SOURCE_DIR) + "/docs/scenario-keys.md");
  REQUIRE(in);
  std::set<std::string> documented;
  const std::regex key("`([a-z]+\\.[a-z_A-Z0-9]+)`");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const std::string first = line.substr(1, line.find('|', 1) - 1);  // the key column
    for (std::sregex_iterator it(first.begin(), first.end(), key), end; it != end; ++it) documented.insert((*it)[1]);
  }
  for (const std::string& k : parsed) {
    INFO("read by dtsim, missing from docs/scenario-keys.md: " << k);
    CHECK(documented.count(k) == 1);
  }
  for (const std::string& k : documented) {
    INFO("in docs/scenario-keys.md, not a scenario key: " << k);
    CHECK(parsed.count(k) == 1);
  }
}
