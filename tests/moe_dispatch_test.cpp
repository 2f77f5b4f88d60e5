// DeepEP's two-hop dispatch and node-limited routing: the expected reach of a token against its
// closed forms, the bytes of each hop, the dispatcher on the DeepSeek-R1 scenario, and the keys'
// errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "sim/base/error.hpp"
#include "sim/compute/compute_model.hpp"
#include "sim/network/transfers.hpp"
#include "sim/scenario/run.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/model.hpp"
#include "workloads/moe_dispatch.hpp"
#include "topologies/gpu_catalog.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/program.hpp"
#include "tests/scenario_helpers.hpp"

using namespace dtsim;

namespace {

// C(n, k) for the closed forms below.
double binom(double n, int k) {
  double c = 1;
  for (int i = 0; i < k; ++i) c = c * (n - i) / (i + 1);
  return c;
}

ModelShape routed(int experts, int top_k, int groups, int topk_groups) {
  ModelShape m = find_model("deepseek-v3");
  m.experts = experts, m.active_experts = top_k, m.moe_groups = groups, m.moe_topk_groups = topk_groups;
  return m;
}

std::string r1_scenario() { return std::string(DTSIM_SOURCE_DIR) + "/scenarios/deepseek-r1-256xh100.ini"; }

// Bytes the step carried over the network's links (NICs and switches) and over NVLink.
struct LinkBytes {
  double network = 0, nvlink = 0;
};
LinkBytes link_bytes(const EngineResult& r) {
  LinkBytes b;
  for (const LinkRecord& l : r.links) (l.kind.rfind("nvlink", 0) == 0 ? b.nvlink : b.network) += l.bytes;
  return b;
}

}  // namespace

TEST_CASE("a token reaches M (1 - C(E - E/M, k) / C(E, k)) of M bins, about M (1 - (1 - 1/M)^k)", "[moe_dispatch]") {
  // Unlimited routing, 256 experts on 8 nodes, top-8: the chance that a node gets none of the 8
  // distinct experts is C(224, 8) / C(256, 8).
  const ModelShape free = routed(256, 8, 1, 1);
  CHECK(expected_bins_reached(free, 8) == Approx(8 * (1 - binom(224, 8) / binom(256, 8))).epsilon(1e-12));
  CHECK(expected_bins_reached(free, 8) == Approx(8 * (1 - std::pow(7.0 / 8, 8))).epsilon(0.01));
  // One expert per bin: every pick is a bin of its own. One pick: one bin.
  CHECK(expected_bins_reached(free, 256) == Approx(8));
  CHECK(expected_bins_reached(routed(256, 1, 1, 1), 8) == Approx(1));
  // DeepSeek-V3: 8 groups, one per node, 4 of them allowed. The node's group is chosen with 1/2,
  // then misses the 8 picks among the 128 allowed experts with C(96, 8) / C(128, 8): the formula
  // with M' = 4 allowed nodes.
  const ModelShape v3 = find_model("deepseek-v3");
  CHECK(expected_bins_reached(v3, 8) == Approx(4 * (1 - binom(96, 8) / binom(128, 8))).epsilon(1e-12));
  CHECK(expected_bins_reached(v3, 8) == Approx(4 * (1 - std::pow(3.0 / 4, 8))).epsilon(0.01));
  CHECK(expected_bins_reached(v3, 8) <= 4);
  // A group over 2 nodes (16 nodes): 4 groups of 2 nodes, M' = 8.
  CHECK(expected_bins_reached(v3, 16) == Approx(8 * (1 - binom(112, 8) / binom(128, 8))).epsilon(1e-12));
  // Two groups per node (4 nodes): the node holds x of the 4 chosen groups, hypergeometric.
  double miss = 0;
  for (int x = 0; x <= 2; ++x) miss += binom(2, x) * binom(6, 4 - x) / binom(8, 4) * binom(128 - 32.0 * x, 8) / binom(128, 8);
  CHECK(expected_bins_reached(v3, 4) == Approx(4 * (1 - miss)).epsilon(1e-12));
}

TEST_CASE("the network bytes of the two-hop dispatch fall as fewer groups are allowed", "[moe_dispatch]") {
  // 64 EP ranks on 8 nodes, 7168-wide bf16 tokens.
  double last = 1e300;
  for (int allowed : {8, 4, 2, 1}) {
    const TwoHopBytes b = two_hop_bytes(routed(256, 8, 8, allowed), 4096, 2 * 7168.0, 64, 8);
    CHECK(b.scale_out < last);
    last = b.scale_out;
  }
  // One group allowed: every token to one node, its own with 1/8: 7/8 of the tokens leave once.
  CHECK(last == Approx(4096 * 2 * 7168.0 * 7 / 8));
  // All 8 copies of every token over the network would be 8 x 7/8 of them: the all-to-all's.
  const TwoHopBytes v3 = two_hop_bytes(find_model("deepseek-v3"), 4096, 2 * 7168.0, 64, 8);
  CHECK(v3.scale_out < 0.5 * 4096 * 8 * 2 * 7168.0 * 7 / 8);
  // Over NVLink: each rank forwards the (token, rank) pairs of its own tokens' count, 7/8 of them
  // to other ranks.
  CHECK(v3.scale_up == Approx(4096 * 2 * 7168.0 * expected_bins_reached(find_model("deepseek-v3"), 64) * 7 / 8));
}

TEST_CASE("the two-hop dispatch sends to the rail peers and the node peers at once", "[moe_dispatch]") {
  // Eight ranks, two nodes of four: rank 0's network bytes B go to its rail peer 4, its NVLink
  // bytes F in thirds to 1, 2 and 3, all in one phase.
  RingSet rings;
  rings.rings = {{0, 1, 2, 3, 4, 5, 6, 7}};
  rings.members_per_node = 4;
  std::vector<HopFlow> hops;
  const double B = 3e6, F = 6e6;
  lower_collective(CommKind::two_hop, B, rings, CollectiveCost{}, hops, F);
  CHECK(hops.size() == 8 * (1 + 3));
  std::map<int, double> to;
  for (const HopFlow& h : hops) {
    CHECK(h.phase == 0);
    if (h.src_gpu == 0) to[h.dst_gpu] += h.bytes;
  }
  CHECK(to == std::map<int, double>{{1, F / 3}, {2, F / 3}, {3, F / 3}, {4, B}});
  // Four nodes of two: B in thirds to 2, 4 and 6, F to 1.
  rings.members_per_node = 2;
  lower_collective(CommKind::two_hop, B, rings, CollectiveCost{}, hops, F);
  to.clear();
  for (const HopFlow& h : hops)
    if (h.src_gpu == 0) to[h.dst_gpu] += h.bytes;
  CHECK(to == std::map<int, double>{{1, F}, {2, B / 3}, {4, B / 3}, {6, B / 3}});
}

TEST_CASE("with deepep each dispatch and combine is one two-hop op of the expected bytes", "[moe_dispatch][program]") {
  Scenario sc = load_scenario(r1_scenario(), test::overrides({"--parallel.moe_dispatcher=deepep"}));
  validate_scenario(sc, 256);
  const Program prog = build_program(sc.model, sc.plan);
  const StageProgram& s = prog.stages[1];
  const TwoHopBytes b = two_hop_bytes(sc.model, 4096, 2 * 7168.0, 32, 8);
  int forward = 0;
  for (int i = 0; i < s.size(); ++i) {
    CHECK(s.comm[i] != CommKind::all_to_all);
    if (s.comm[i] != CommKind::two_hop) continue;
    CHECK(s.group[i] == Group::ep);
    CHECK(s.bytes[i] == Approx(b.scale_out));
    CHECK(s.forward_bytes[i] == Approx(b.scale_up));
    forward += s.phase[i] == Phase::forward && s.micro_batch[i] == 0;
  }
  CHECK(forward == 2 * 8);  // stage 1's 8 MoE layers: a dispatch and a combine each
}

TEST_CASE("EP ranks per node follow the rank order and the node size", "[moe_dispatch]") {
  ParallelPlan p;
  p.tp = 1, p.pp = 8, p.dp = 32, p.ep = 32, p.gpus_per_node = 8;
  CHECK(ep_ranks_per_node(p) == 8);
  p.tp = 2, p.dp = 16, p.ep = 16;  // every other GPU: 4 per node
  CHECK(ep_ranks_per_node(p) == 4);
  p.gpus_per_node = 0;
  CHECK(ep_ranks_per_node(p) == 0);
}

TEST_CASE("deepep sends fewer bytes over the network than alltoall and runs DeepSeek-R1 faster", "[moe_dispatch][engine]") {
  Scenario all = load_scenario(r1_scenario(), test::overrides({}));
  Scenario deep = load_scenario(r1_scenario(), test::overrides({"--parallel.moe_dispatcher=deepep"}));
  Scenario unlimited = load_scenario(r1_scenario(), test::overrides({"--parallel.moe_dispatcher=deepep", "--model.moe_topk_groups=8"}));
  const EngineResult a = run_scenario(all, "", 2), d = run_scenario(deep, "", 2), u = run_scenario(unlimited, "", 2);
  const LinkBytes la = link_bytes(a), ld = link_bytes(d), lu = link_bytes(u);
  INFO("network bytes alltoall " << la.network << " deepep " << ld.network << " unlimited " << lu.network);
  INFO("step alltoall " << a.summary.step_time_s << " s, deepep " << d.summary.step_time_s << " s");
  CHECK(ld.network < lu.network);
  CHECK(lu.network < la.network);
  CHECK(d.summary.step_time_s < a.summary.step_time_s);
  CHECK(d.summary.exposed_comm < a.summary.exposed_comm);
  CHECK(d.summary.tokens_per_s > a.summary.tokens_per_s);
}

TEST_CASE("DeepEP's kernels hold 20 SMs, NCCL's 24: kernels beside them slow by sms / (sms - held)", "[moe_dispatch]") {
  const ComputeModel h100(find_gpu("H100-SXM5-80GB"), Precision::bf16);
  CHECK(h100.two_hop_overlap_slowdown() == Approx(132.0 / (132 - 20)));
  CHECK(h100.comm_overlap_slowdown() == Approx(132.0 / (132 - 24)));
}

TEST_CASE("the two hops run beside the shared experts, and the same on any thread count", "[moe_dispatch][engine]") {
  Scenario plain = load_scenario(r1_scenario(), test::overrides({"--parallel.moe_dispatcher=deepep"}));
  Scenario beside = load_scenario(r1_scenario(), test::overrides({"--parallel.moe_dispatcher=deepep", "--parallel.moe_shared_expert_overlap=true"}));
  const EngineResult p = run_scenario(plain, "", 1), b1 = run_scenario(beside, "", 1), b3 = run_scenario(beside, "", 3);
  CHECK(b1.summary.step_time_s < p.summary.step_time_s);
  CHECK(b1.summary.step_time_s == b3.summary.step_time_s);
  CHECK(b1.summary.exposed_comm == b3.summary.exposed_comm);
}

TEST_CASE("bad dispatcher and routing keys are refused with the key and the valid values", "[moe_dispatch]") {
  const std::string r1 = r1_scenario();
  auto refused = [&](std::vector<std::string> args, const std::string& says) {
    try {
      Scenario sc = load_scenario(r1, test::overrides(args));
      validate_scenario(sc, 256);
      FAIL("accepted " << args.front());
    } catch (const InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains(says));
    }
  };
  refused({"--parallel.moe_dispatcher=flexible"}, "parallel.moe_dispatcher = 'flexible': valid values are alltoall");
  refused({"--model.moe_groups=7"}, "model.moe_groups = 7: must be >= 1 and divide model.experts = 256");
  refused({"--model.moe_topk_groups=9"}, "model.moe_topk_groups = 9: must be between 1 and model.moe_groups = 8");
  refused({"--model.moe_groups=256", "--model.moe_topk_groups=4"}, "fewer than model.active_experts = 8");
  refused({"--model.experts=0", "--parallel.ep=1", "--parallel.moe_dispatcher=deepep"},
          "parallel.moe_dispatcher = deepep: model deepseek-r1 has no experts");
}
