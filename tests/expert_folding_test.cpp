// Megatron-Core's MoE layouts and schedule beyond plain expert parallelism: parallel folding
// (parallel.etp = 1: whole experts, the EP group spanning the TP, CP and DP ranks, each rank
// routing its own sequence-parallel tokens outside the TP region) and the EP-overlapped 1F1B
// (parallel.moe_a2a_overlap: one more warm-up forward, then every forward beside a backward).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "sim/base/error.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/groups.hpp"
#include "tests/program_helpers.hpp"
#include "topologies/builders.hpp"
#include "workloads/pipeline_schedule.hpp"
#include "workloads/program.hpp"

using namespace dtsim;
using dtsim::test::plan_of;

namespace {

// Qwen3-MoE's structure at a small size: 8 routed experts (2 per token), no shared expert.
ModelShape tiny_qwen_moe() {
  ModelShape m;
  m.name = "tiny-qwen-moe";
  m.layers = 2;
  m.hidden = 256;
  m.heads = 4;
  m.kv_heads = 2;
  m.ffn_hidden = 512;
  m.ffn = FfnKind::swiglu;
  m.vocab = 1000;
  m.seq_len = 128;
  m.tied_embeddings = false;
  m.position = PositionEmbedding::rotary;
  m.bias = false;
  m.experts = 8;
  m.active_experts = 2;
  m.expert_ffn_hidden = 128;
  return m;
}

// TP 2 x DP 4 with sequence parallelism, EP 8 folded over all of them (etp 1) or EP 4 over DP.
ParallelPlan folded_plan(const ModelShape& m, int ep, int etp) {
  ParallelPlan p = plan_of(2, 1, 4, 1, 8, Recompute::none, 1);
  p.sequence_parallel = true;
  p.ep = ep, p.etp = etp;
  validate_plan(p, m, 8);
  return p;
}

// Forward ops of MoE layer 1, micro-batch 0, on stage 0: kind -> (GEMM m or bytes, count).
std::map<OpKind, std::pair<double, int>> layer_ops(const StageProgram& s) {
  std::map<OpKind, std::pair<double, int>> out;
  for (int i = 0; i < s.size(); ++i)
    if (s.layer[i] == 1 && s.micro_batch[i] == 0 && s.phase[i] == Phase::forward) {
      auto& [size, count] = out[s.kind[i]];
      size = s.gemm_m[i] > 0 ? s.gemm_m[i] : s.bytes[i];
      ++count;
    }
  return out;
}

}  // namespace

TEST_CASE("parallel folding lays each EP group over TP x DP and keeps the experts whole", "[moe][folding]") {
  const ModelShape m = tiny_qwen_moe();
  const ParallelPlan folded = folded_plan(m, 8, 1), split = folded_plan(m, 4, 0);
  CHECK(folded.expert_folding());
  CHECK_FALSE(split.expert_folding());
  // Ranks 0..7 are (tp, dp) = (0,0) (1,0) (0,1) ...: one EP group of all 8, nothing to reduce
  // the experts' gradients over; without folding EP 4 over DP at each TP rank, expert-DP 1 too.
  ClusterConfig c;
  c.nodes = 1;
  c.gpus_per_node = 8;
  const ClusterGraph graph = build_cluster(c);
  const Router router(graph);
  const CommModel comm(graph, router);
  RankGroups folded_groups(folded, comm), split_groups(split, comm);
  CHECK(folded_groups.members(5, Group::ep) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(folded_groups.members(5, Group::expert_dp) == std::vector<int>{5});
  CHECK(split_groups.members(5, Group::ep) == std::vector<int>{1, 3, 5, 7});
  CHECK(folded.expert_grad_ranks() == 1);

  // The MoE MLP runs on the rank's own T / tp tokens with whole experts: no SP all-gather or
  // reduce-scatter around it (the attention keeps its pair), the router on T / tp rows, and each
  // local expert (8 / 8 = 1) gets T / tp x top_k x ep / experts = 64 x 2 tokens.
  const auto f = layer_ops(build_program(m, folded).stages[0]);
  const auto s = layer_ops(build_program(m, split).stages[0]);
  CHECK(f.at(OpKind::tp_all_gather).second == 1);
  CHECK(s.at(OpKind::tp_all_gather).second == 2);
  CHECK(f.at(OpKind::router).first == Approx(m.seq_len / 2.0));
  CHECK(s.at(OpKind::router).first == Approx(m.seq_len));
  CHECK(f.at(OpKind::expert_fc1).first == Approx(m.seq_len / 2.0 * m.active_experts * 8 / m.experts));
  CHECK(f.at(OpKind::moe_dispatch).first == Approx(2.0 * m.seq_len / 2 * m.active_experts * m.hidden));

  // The weights: one whole expert per rank (folded) against two experts split over TP (split).
  const double expert = m.expert_params();
  const double folded_weights = build_program(m, folded).stages[0].static_bytes[static_cast<int>(MemCategory::weights)];
  const double split_weights = build_program(m, split).stages[0].static_bytes[static_cast<int>(MemCategory::weights)];
  CHECK(folded_weights - split_weights == Approx(2 * m.moe_layers() * (expert - 2 * expert / 2)).margin(1));
}

TEST_CASE("a folded step runs every rank's dispatch as one EP collective", "[moe][folding][engine]") {
  const ModelShape m = tiny_qwen_moe();
  ClusterConfig c;
  c.nodes = 2;
  c.gpus_per_node = 4;
  const ClusterGraph graph = build_cluster(c);
  const ParallelPlan p = folded_plan(m, 8, 1);
  MemoryTraceSink sink;
  const EngineResult r = Engine(build_program(m, p), graph, find_gpu("H100-SXM5-80GB"), Precision::bf16)
                             .run(&sink, TraceDetail::all);
  CHECK(r.summary.step_time_s > 0);
  std::map<int, std::vector<TimeNs>> dispatch_end;
  for (const EventRecord& e : sink.events_)
    if (e.op == static_cast<int>(OpKind::moe_dispatch)) dispatch_end[e.rank].push_back(e.end_ns);
  REQUIRE(dispatch_end.size() == 8);
  for (int rank = 1; rank < 8; ++rank) CHECK(dispatch_end[rank] == dispatch_end[0]);
}

TEST_CASE("parallel.etp is checked against TP, sequence parallelism and the model", "[moe][folding][plan]") {
  const ModelShape m = tiny_qwen_moe();
  const auto refused = [&](ModelShape model, int tp, int ep, int etp, bool sp, const char* needle) {
    ParallelPlan p = plan_of(tp, 1, 8 / tp, 1, 8, Recompute::none, 1);
    p.sequence_parallel = sp;
    p.ep = ep, p.etp = etp;
    CHECK_THROWS_WITH(validate_plan(p, model, 8), Catch::Contains(needle));
  };
  refused(m, 4, 2, 2, true, "parallel.etp = 2: must be parallel.tp = 4");
  refused(m, 2, 8, 1, false, "needs parallel.sequence_parallel = true");
  refused(m, 2, 8, 0, true, "must divide parallel.dp = 4");
  refused(m, 2, 16, 1, true, "must divide parallel.tp x cp x dp = 8");
  ModelShape shared = m;
  shared.shared_experts = 1;
  refused(shared, 2, 8, 1, true, "has shared experts");
  refused(find_model("gpt-1.7b"), 2, 1, 1, true, "has no experts; leave it at tp");
}

TEST_CASE("the EP-overlapped 1F1B adds a warm-up forward and pairs every later forward with a backward",
          "[moe][schedule]") {
  const ModelShape m = tiny_qwen_moe();
  ParallelPlan p = plan_of(1, 1, 4, 1, 16, Recompute::none, 1);
  p.ep = 4;
  p.moe_a2a_overlap = true;
  validate_plan(p, m, 4);
  // No pipeline, 4 micro-batches: F0, then F1 beside B0, F2 beside B1, F3 beside B2, then B3
  // (Megatron-Core's combined 1F1B without pipelining).
  const std::vector<PipelinePass> order = pipeline_order(p, 0);
  REQUIRE(order.size() == 8);
  CHECK((order[0].forward && !order[0].overlapped));
  for (int k = 0; k < 3; ++k) {
    CHECK((order[1 + 2 * k].forward && order[1 + 2 * k].overlapped && order[1 + 2 * k].micro_batch == k + 1));
    CHECK((!order[2 + 2 * k].forward && order[2 + 2 * k].micro_batch == k));
  }
  CHECK((!order[7].forward && order[7].micro_batch == 3));

  // Interleaved: one more warm-up forward than without, then forward/backward pairs.
  ParallelPlan il = plan_of(1, 2, 2, 1, 8, Recompute::none, 1);
  il.ep = 2, il.schedule = Schedule::interleaved, il.virtual_stages = 2;
  validate_plan(il, m, 4);
  const auto warmup = [](const std::vector<PipelinePass>& o) {
    return std::find_if(o.begin(), o.end(), [](const PipelinePass& x) { return !x.forward; }) - o.begin();
  };
  const std::vector<PipelinePass> plain = pipeline_order(il, 0);
  il.moe_a2a_overlap = true;
  const std::vector<PipelinePass> overlapped = pipeline_order(il, 0);
  // The first backward comes one forward later: the extra warm-up forward stands where the first
  // steady-state forward stood, and that one now runs beside the first backward.
  CHECK(warmup(overlapped) == warmup(plain) + 1);
  CHECK_FALSE(overlapped[warmup(plain) - 1].overlapped);
  CHECK(overlapped[warmup(plain)].overlapped);

  // Refused where Megatron-Core refuses it.
  const auto refused = [&](ParallelPlan q, const char* needle) {
    q.moe_a2a_overlap = true;
    CHECK_THROWS_WITH(validate_plan(q, m, 4), Catch::Contains(needle));
  };
  ParallelPlan plain_1f1b = plan_of(1, 2, 2, 1, 8, Recompute::none, 1);
  plain_1f1b.ep = 2;
  refused(plain_1f1b, "needs the interleaved schedule");
  ParallelPlan full = plan_of(1, 1, 4, 1, 8, Recompute::full, 1);
  full.ep = 4;
  refused(full, "full recomputation");
  refused(plan_of(1, 1, 4, 1, 8, Recompute::none, 1), "needs expert parallelism");
}

TEST_CASE("the EP-overlapped 1F1B hides all-to-all time behind the other micro-batch's kernels",
          "[moe][schedule][engine]") {
  const ModelShape m = tiny_qwen_moe();
  ClusterConfig c;
  c.nodes = 2;
  c.gpus_per_node = 2;
  const ClusterGraph graph = build_cluster(c);
  const auto step = [&](bool overlap) {
    ParallelPlan p = plan_of(1, 1, 4, 1, 16, Recompute::none, 1);
    p.ep = 4;
    p.moe_a2a_overlap = overlap;
    validate_plan(p, m, graph.num_gpus());
    MemoryTraceSink sink;
    return Engine(build_program(m, p), graph, find_gpu("H100-SXM5-80GB"), Precision::bf16)
        .run(&sink, TraceDetail::all)
        .summary;
  };
  const Summary serial = step(false), overlapped = step(true);
  CHECK(overlapped.step_time_s < serial.step_time_s);
  CHECK(overlapped.exposed_comm < serial.exposed_comm);
}
