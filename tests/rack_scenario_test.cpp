// The shipped GB200 NVL72 scenario: its expert-parallel all-to-alls and its gradient reduction stay
// on each rack's NVLink (only the pipeline crosses InfiniBand), and the same job on 8-GPU HGX B200
// nodes sends them over InfiniBand and is slower for it.
#include <catch2/catch.hpp>

#include "sim/scenario/run.hpp"
#include "sim/scenario/scenario.hpp"
#include "tests/scenario_helpers.hpp"

using namespace dtsim;

namespace {

struct Carried {
  double nvlink = 0, infiniband = 0, step_s = 0;
};

Carried run_rack_scenario(std::vector<std::string> overrides) {
  overrides.push_back("--training.global_batch=128");  // two micro-batches per pipeline
  const auto vm = test::overrides(overrides);
  Scenario sc = load_scenario(std::string(DTSIM_SOURCE_DIR) + "/scenarios/deepseek-r1-8xgb200-nvl72.ini", vm);
  const EngineResult r = run_scenario(sc, "", 1, true);
  Carried c;
  c.step_s = r.summary.step_time_s;
  for (const LinkRecord& l : r.links) {
    if (l.kind.rfind("nvlink", 0) == 0) c.nvlink += l.bytes;
    if (l.kind == "infiniband") c.infiniband += l.bytes;
  }
  return c;
}

}  // namespace

TEST_CASE("the NVL72 scenario keeps its EP all-to-alls on the rack's NVLink: HGX nodes cannot", "[nvl72][scenario]") {
  const Carried rack = run_rack_scenario({});
  const Carried hgx = run_rack_scenario({"--cluster.node_kind=nvswitch", "--cluster.gpu=B200", "--cluster.nodes=64",
                                         "--cluster.gpus_per_node=8", "--cluster.nics_per_node=8"});
  INFO("rack: " << rack.nvlink << " B NVLink, " << rack.infiniband << " B InfiniBand, " << rack.step_s << " s; HGX: "
                << hgx.nvlink << " B NVLink, " << hgx.infiniband << " B InfiniBand, " << hgx.step_s << " s");
  // On the racks InfiniBand carries the pipeline's activations alone: a small share of the traffic.
  CHECK(rack.infiniband < 0.05 * rack.nvlink);
  // On 8-GPU nodes an EP group of 64 spans 8 nodes: most of the all-to-all crosses InfiniBand.
  CHECK(hgx.infiniband > 10 * rack.infiniband);
  CHECK(hgx.step_s > 1.5 * rack.step_s);
}
