// Mixture-of-experts and MLA layers against their closed forms: a layer's GEMM FLOPs are twice
// its active linear parameters per token (a step's six times), the dispatch and combine
// all-to-alls carry tokens x top_k x hidden x bytes of which (ep - 1) / ep leave the rank, expert
// state is divided by EP (and sharded over dp / ep), the expert-parallel key is checked, and the
// EP and expert-DP groups meet in the engine.
#include <catch2/catch.hpp>

#include <map>
#include <tuple>

#include "sim/base/error.hpp"
#include "sim/network/comm_model.hpp"
#include "sim/engine/engine.hpp"
#include "sim/network/transfers.hpp"
#include "tests/program_helpers.hpp"
#include "topologies/builders.hpp"
#include "workloads/layer_params.hpp"
#include "workloads/memory_fit.hpp"
#include "workloads/program.hpp"

using namespace dtsim;
using dtsim::test::plan_of;

namespace {

// DeepSeek-V3's structure at a small size: MLA, 1 dense layer then MoE layers of 8 routed
// experts (2 per token) and 1 shared expert.
ModelShape tiny_moe() {
  ModelShape m;
  m.name = "tiny-moe";
  m.layers = 4;
  m.hidden = 256;
  m.heads = 4;
  m.ffn_hidden = 512;
  m.ffn = FfnKind::swiglu;
  m.vocab = 1000;
  m.seq_len = 128;
  m.tied_embeddings = false;
  m.position = PositionEmbedding::none;
  m.bias = false;
  m.experts = 8;
  m.active_experts = 2;
  m.shared_experts = 1;
  m.expert_ffn_hidden = 128;
  m.dense_layers = 1;
  m.q_lora_rank = 64;
  m.kv_lora_rank = 32;
  m.nope_head_dim = 32;
  m.rope_head_dim = 16;
  m.v_head_dim = 32;
  return m;
}

ParallelPlan moe_plan(const ModelShape& m, int dp, int ep, Recompute r = Recompute::none, int zero = 0) {
  ParallelPlan p = plan_of(1, 1, dp, 1, 2 * dp, r, zero);
  p.ep = ep;
  validate_plan(p, m, dp);
  return p;
}

// Attention-core GEMM FLOPs of one layer and sequence (QK^T and the context, full s x s).
double core_flops(const ModelShape& m) {
  const double s = m.seq_len;
  return 2 * s * s * m.heads * (m.nope_head_dim + m.rope_head_dim + m.v_head_dim);
}

// Parameters of an MoE layer that a token multiplies: all but the norms (two layer norms and the
// two MLA latent norms, 2 values per channel as model.cpp counts them).
double active_linear_params(const ModelShape& m) {
  return m.moe_layer_active_params() - 4.0 * m.hidden - 2.0 * (m.q_lora_rank + m.kv_lora_rank);
}

}  // namespace

TEST_CASE("an MoE layer's forward GEMMs are 2 x active parameters x tokens", "[moe][program]") {
  const ModelShape m = tiny_moe();
  for (int ep : {1, 2, 4}) {
    const Program prog = build_program(m, moe_plan(m, 4, ep));
    const StageProgram& s = prog.stages[0];
    double flops = 0;
    for (int i = 0; i < s.size(); ++i)
      if (s.layer[i] == 2 && s.micro_batch[i] == 0 && s.phase[i] == Phase::forward && s.gemm_m[i] > 0)
        flops += s.flops[i];
    INFO("ep = " << ep);
    CHECK(flops == Approx(2 * active_linear_params(m) * m.seq_len + core_flops(m)));
  }
}

TEST_CASE("a DeepSeek-R1 step is 6 x active parameters x tokens plus attention within 0.1 percent", "[moe][program]") {
  // Exactly: the embedding lookup and the norms are no GEMMs (0.005 % of the 37 B).
  const ModelShape& m = find_model("deepseek-r1");
  ParallelPlan p = plan_of(1, 1, 8, 1, 8, Recompute::full, 1);
  p.ep = 8;
  validate_plan(p, m, 8);
  const Program prog = build_program(m, p);
  const double tokens = static_cast<double>(p.global_batch) * m.seq_len;
  const double expected = 6 * m.active_params() * tokens + 3 * core_flops(m) * m.layers * p.global_batch;
  CHECK(prog.model_flops_per_step == Approx(expected).epsilon(1e-3));
}

TEST_CASE("the dispatch and combine all-to-alls carry tokens x top_k x hidden x bytes", "[moe][program]") {
  const ModelShape m = tiny_moe();
  const int ep = 4;
  for (Recompute r : {Recompute::none, Recompute::full}) {
    const Program prog = build_program(m, moe_plan(m, 4, ep, r));
    const StageProgram& s = prog.stages[0];
    const double bytes = 2.0 * m.seq_len * m.active_experts * m.hidden;
    std::map<Phase, int> per_phase;
    for (int i = 0; i < s.size(); ++i) {
      if (s.comm[i] != CommKind::all_to_all) continue;
      CHECK(s.group[i] == Group::ep);
      CHECK(s.bytes[i] == Approx(bytes));
      if (s.layer[i] == 2 && s.micro_batch[i] == 0) ++per_phase[s.phase[i]];
    }
    // Dispatch and combine in the forward pass, both again in the backward pass and, with full
    // recomputation, in the recomputed forward.
    CHECK(per_phase[Phase::forward] == 2);
    CHECK(per_phase[Phase::backward] == 2);
    CHECK(per_phase[Phase::recompute] == (r == Recompute::full ? 2 : 0));
  }
  // Lowered, each rank sends S / ep to each of the ep - 1 others: S (ep - 1) / ep leaves it.
  RingSet rings;
  rings.rings = {{0, 1, 2, 3}};
  std::vector<HopFlow> hops;
  lower_collective(CommKind::all_to_all, 1e6, rings, CollectiveCost{}, hops);
  double from_0 = 0;
  for (const HopFlow& h : hops) from_0 += h.src_gpu == 0 ? h.bytes : 0;
  CHECK(hops.size() == 12);
  CHECK(from_0 == Approx(1e6 * 3 / 4));
  // Across two nodes of two: rank 0 sends what node 1 gets (2 x S/4) in one flow to its rail peer
  // 2, the network bytes of all pairs, and 2 x S/4 to its local peer 1 (its own share and the one
  // it forwards from 2).
  rings.members_per_node = 2;
  lower_collective(CommKind::all_to_all, 1e6, rings, CollectiveCost{}, hops);
  CHECK(hops.size() == 8);
  std::map<int, double> to;
  for (const HopFlow& h : hops)
    if (h.src_gpu == 0) to[h.dst_gpu] += h.bytes;
  CHECK(to.size() == 2);
  CHECK(to[2] == Approx(1e6 / 2));
  CHECK(to[1] == Approx(1e6 / 2));
}

TEST_CASE("expert weights and gradients and optimizer state are divided by EP", "[moe][memory]") {
  const ModelShape m = tiny_moe();
  const double routed = m.moe_layers() * m.experts * m.expert_params();
  const double replicated = m.total_params() - routed;
  const double dp = 4;
  for (int ep : {1, 2, 4}) {
    for (int zero : {0, 1, 2}) {
      const Program prog = build_program(m, moe_plan(m, 4, ep, Recompute::none, zero));
      const StageProgram& s = prog.stages[0];
      const double edp = dp / ep;
      auto sharded = [&](int stage) { return zero >= stage ? replicated / dp + routed / ep / edp : replicated + routed / ep; };
      INFO("ep = " << ep << ", zero = " << zero);
      CHECK(s.static_bytes[static_cast<int>(MemCategory::weights)] == Approx(2 * (replicated + routed / ep)));
      CHECK(s.static_bytes[static_cast<int>(MemCategory::gradients)] == Approx(2 * sharded(2)));
      CHECK(s.static_bytes[static_cast<int>(MemCategory::optimizer)] == Approx(12 * sharded(1)));
      // The static memory model agrees.
      TrainingSetup t{m.seq_len, 1, Recompute::none, zero, false, 2};
      t.ep = ep;
      const MemoryNeed need = training_memory(m, t, 1, 1, 4);
      CHECK(need.items[0].bytes == Approx(s.static_bytes[static_cast<int>(MemCategory::weights)]));
      CHECK(need.items[2].bytes == Approx(s.static_bytes[static_cast<int>(MemCategory::optimizer)]));
    }
  }
  CHECK(layer_params(m, moe_plan(m, 4, 4), 0).experts == 0);  // the dense first layer
  CHECK(layer_params(m, moe_plan(m, 4, 4), 1).experts == Approx(2 * m.expert_params()));
}

TEST_CASE("BF16 Adam moments hold 8 bytes of optimizer state per parameter", "[moe][memory]") {
  const ModelShape m = tiny_moe();
  ParallelPlan fp32 = moe_plan(m, 4, 2, Recompute::none, 1), bf16 = fp32;
  bf16.moment_bytes = 2;
  const auto optimizer = [&](const ParallelPlan& p) {
    const StageProgram s = build_program(m, p).stages[0];
    double step = 0;
    for (int i = 0; i < s.size(); ++i)
      if (s.kind[i] == OpKind::optimizer_step) step = s.bytes[i];
    return std::pair{s.static_bytes[static_cast<int>(MemCategory::optimizer)], step};
  };
  const auto [state32, step32] = optimizer(fp32);
  const auto [state16, step16] = optimizer(bf16);
  CHECK(state16 == Approx(state32 * 8 / 12));
  // Adam reads and writes both moments: 8 bytes a parameter fewer, on the shard's 12 / 12 B.
  CHECK(step32 - step16 == Approx(8 * state32 / 12));
  // fit reads the same setting.
  TrainingSetup t = training_setup(bf16, m.seq_len);
  CHECK(training_memory(m, t, 1, 1, 4).items[2].bytes == Approx(state16));
}

TEST_CASE("router weights applied in the activation keep no expert outputs", "[moe][memory]") {
  // Megatron-Core v0.13+: the experts' SwiGLU multiplies the copies by their weights, so the
  // un-permutation is a plain sum and its backward pass needs nothing kept; the legacy combine
  // keeps the T x top_k x hidden expert outputs of each MoE layer for the weights' gradient.
  const ModelShape m = tiny_moe();
  ParallelPlan combine = moe_plan(m, 4, 2), activation = combine;
  activation.moe_probs = MoeProbs::activation;
  const Program with_outputs = build_program(m, combine), without = build_program(m, activation);
  const double copies = m.seq_len * m.active_experts, kept = 2 * copies * m.hidden;
  CHECK(test::layer_activation_bytes(with_outputs, 1) - test::layer_activation_bytes(without, 1) == Approx(kept));
  CHECK(test::layer_activation_bytes(with_outputs, 0) == Approx(test::layer_activation_bytes(without, 0)));
  // The static memory model keeps the same: one micro-batch of the three MoE layers in flight.
  const auto activations = [&](const ParallelPlan& p) {
    return training_memory(m, training_setup(p, m.seq_len), 1, 1, 4).items[3].bytes;
  };
  CHECK(activations(combine) - activations(activation) == Approx(m.moe_layers() * kept));
  CHECK(parse_moe_probs("activation", "training.moe_probs") == MoeProbs::activation);
  CHECK_THROWS_WITH(parse_moe_probs("input", "training.moe_probs"),
                    Catch::Contains("training.moe_probs = 'input'") && Catch::Contains("combine"));
}

TEST_CASE("parallel.ep must divide dp and the experts and needs an MoE model", "[moe][plan]") {
  const ModelShape m = tiny_moe();
  auto check = [&](const ModelShape& model, int dp, int ep, int zero, const char* needle) {
    ParallelPlan p = plan_of(1, 1, dp, 1, dp, Recompute::none, zero);
    p.ep = ep;
    CHECK_THROWS_WITH(validate_plan(p, model, dp), Catch::Contains(needle));
  };
  check(m, 4, 3, 0, "parallel.ep = 3: must divide parallel.dp = 4");
  check(m, 16, 16, 0, "model.experts = 8 is not divisible by it");
  check(m, 4, 0, 0, "parallel.ep = 0: must be >= 1");
  check(m, 4, 2, 3, "ZeRO-3");
  check(find_model("gpt-1.7b"), 4, 2, 0, "has no experts");
}

TEST_CASE("the EP group exchanges tokens and the expert-DP group reduces expert gradients", "[moe][engine]") {
  // dp = 4, ep = 2 on two nodes of 2 GPUs: EP groups {0,1} {2,3}, expert-DP groups {0,2} {1,3}.
  const ModelShape m = tiny_moe();
  ParallelPlan p = plan_of(1, 1, 4, 1, 8, Recompute::none, 0);
  p.ep = 2;
  p.dp_overlap = false;
  ClusterConfig c;
  c.nodes = 2;
  c.gpus_per_node = 2;
  const ClusterGraph graph = build_cluster(c);
  validate_plan(p, m, graph.num_gpus());
  const Program prog = build_program(m, p);
  Engine engine(prog, graph, find_gpu("A100-SXM4-80GB"), Precision::bf16);
  MemoryTraceSink sink;
  const EngineResult r = engine.run(&sink, TraceDetail::all);
  CHECK(r.summary.step_time_s > 0);
  std::map<int, std::vector<TimeNs>> dispatch_end, expert_reduce_end;
  for (const EventRecord& e : sink.events_) {
    if (e.op == static_cast<int>(OpKind::moe_dispatch)) dispatch_end[e.rank].push_back(e.end_ns);
    if (e.op == static_cast<int>(OpKind::expert_dp_all_reduce)) expert_reduce_end[e.rank].push_back(e.end_ns);
  }
  // 3 MoE layers x 2 micro-batches x (forward + backward) on every rank.
  for (int rank = 0; rank < 4; ++rank) CHECK(dispatch_end[rank].size() == 12);
  CHECK(dispatch_end[0] == dispatch_end[1]);  // one collective, ending together
  CHECK(dispatch_end[2] == dispatch_end[3]);
  REQUIRE(expert_reduce_end[0].size() == 1);
  CHECK(expert_reduce_end[0] == expert_reduce_end[2]);
  CHECK(expert_reduce_end[1] == expert_reduce_end[3]);
}

TEST_CASE("the memory model sizes an uneven split by its most loaded stage", "[moe][memory]") {
  // DeepSeek-R1's 61 layers on 8 stages: neither 61 nor 63 divides by 8, so the split is the
  // embedding and the head counted as a layer each, 63 spread with the extra layers in the middle:
  // 6, 8, 8, 8, 8, 8, 8, 7. The heaviest stages hold 8 MoE layers (the 3 dense ones are on stage
  // 0), their routed experts split over ep = 8.
  const ModelShape& m = find_model("deepseek-r1");
  REQUIRE(stage_split(m, 8).layers == std::vector<int>{6, 8, 8, 8, 8, 8, 8, 7});
  TrainingSetup t{m.seq_len, 1, Recompute::full, 0, false, 8};
  t.ep = 8;
  const double routed = m.experts * m.expert_params();
  const double expected = 2 * 8 * (m.moe_layer_params() - routed + routed / 8);
  CHECK(training_memory(m, t, 1, 8, 8).items[0].bytes == Approx(expected));
  CHECK_THAT(training_memory(m, t, 1, 8, 8).items[0].includes, Catch::Contains("8 layers"));
}

TEST_CASE("with shared-expert overlap the all-to-alls run beside the shared experts, both ways", "[moe][engine]") {
  // Megatron-Core's --moe-shared-expert-overlap on dp = ep = 4 across two nodes: the dispatch runs
  // beside the shared experts' first GEMM and activation, the combine beside their second GEMM;
  // the routed experts wait for the dispatch. The backward pass mirrors it.
  const ModelShape m = tiny_moe();
  ClusterConfig c;
  c.nodes = 2;
  c.gpus_per_node = 2;
  const ClusterGraph graph = build_cluster(c);
  const auto run = [&](bool overlap, MemoryTraceSink& sink) {
    ParallelPlan p = plan_of(1, 1, 4, 1, 8, Recompute::none, 0);
    p.ep = 4;
    p.moe_shared_expert_overlap = overlap;
    validate_plan(p, m, graph.num_gpus());
    return Engine(build_program(m, p), graph, find_gpu("A100-SXM4-80GB"), Precision::bf16).run(&sink, TraceDetail::all);
  };
  MemoryTraceSink serial_trace, overlapped_trace;
  const EngineResult serial = run(false, serial_trace), overlapped = run(true, overlapped_trace);
  // (phase, layer, micro-batch) of rank 0 -> the op's start and end.
  std::map<std::tuple<int, int, int, int>, std::pair<TimeNs, TimeNs>> at;
  for (const EventRecord& e : overlapped_trace.events_)
    if (e.rank == 0) at[{e.op, e.phase, e.layer, e.micro_batch}] = {e.start_ns, e.end_ns};
  const auto of = [&](OpKind k, Phase ph) {
    const auto it = at.find({static_cast<int>(k), static_cast<int>(ph), 2, 0});
    REQUIRE(it != at.end());
    return it->second;
  };
  const auto dispatch = of(OpKind::moe_dispatch, Phase::forward), combine = of(OpKind::moe_combine, Phase::forward);
  CHECK(of(OpKind::shared_fc1, Phase::forward).first < dispatch.second);
  CHECK(of(OpKind::expert_fc1, Phase::forward).first >= dispatch.second);
  CHECK(of(OpKind::shared_fc2, Phase::forward).first < combine.second);
  CHECK(of(OpKind::moe_unpermute, Phase::forward).first >= combine.second);
  const auto combine_back = of(OpKind::moe_combine, Phase::backward);
  CHECK(of(OpKind::shared_fc2, Phase::backward).first < combine_back.second);
  CHECK(of(OpKind::expert_fc2, Phase::backward).first >= combine_back.second);
  const auto dispatch_back = of(OpKind::moe_dispatch, Phase::backward);
  CHECK(of(OpKind::shared_fc1, Phase::backward).first < dispatch_back.second);
  CHECK(of(OpKind::moe_permute, Phase::backward).first >= dispatch_back.second);
  CHECK(overlapped.summary.step_time_s < serial.summary.step_time_s);
}

TEST_CASE("an imbalanced expert load makes the group wait for its most loaded rank", "[moe][program]") {
  // training.moe_load_imbalance r: the most loaded rank receives r x the mean copies, capped by a
  // capacity factor; its grouped GEMMs and all-to-all traffic set every rank's timing while the
  // FLOPs (model FLOPs) stay the mean's.
  const ModelShape m = tiny_moe();
  const auto expert_ops = [&](double imbalance, double capacity) {
    ParallelPlan p = moe_plan(m, 4, 4);
    p.moe_load_imbalance = imbalance, p.moe_capacity_factor = capacity;
    const StageProgram s = build_program(m, p).stages[0];
    std::map<OpKind, std::pair<double, double>> out;  // forward op of layer 2 -> (GEMM m or bytes, flops)
    for (int i = 0; i < s.size(); ++i)
      if (s.layer[i] == 2 && s.micro_batch[i] == 0 && s.phase[i] == Phase::forward)
        out.emplace(s.kind[i], std::make_pair(s.gemm_m[i] > 0 ? s.gemm_m[i] : s.bytes[i], s.flops[i]));  // the first of a kind
    return out;
  };
  const auto balanced = expert_ops(1, 0), hot = expert_ops(1.5, 0), capped = expert_ops(1.5, 1.2);
  for (OpKind k : {OpKind::expert_fc1, OpKind::expert_fc2, OpKind::moe_dispatch, OpKind::moe_combine}) {
    INFO(op_kind_name(k));
    CHECK(hot.at(k).first == Approx(1.5 * balanced.at(k).first).epsilon(0.01));
    CHECK(capped.at(k).first == Approx(1.2 * balanced.at(k).first).epsilon(0.01));
    CHECK(hot.at(k).second == Approx(balanced.at(k).second));
  }
  // The permutation before the dispatch handles its own tokens (the sort after it, the received).
  CHECK(hot.at(OpKind::moe_permute).first == Approx(balanced.at(OpKind::moe_permute).first));
  // A dense model refuses the keys.
  ParallelPlan dense = plan_of(1, 1, 4, 1, 8, Recompute::none);
  dense.moe_load_imbalance = 1.5;
  CHECK_THROWS_WITH(validate_plan(dense, find_model("gpt-1.7b"), 4), Catch::Contains("training.moe_load_imbalance = 1.5"));
}

TEST_CASE("the alltoall dispatcher sorts the received copies by local expert and back", "[moe][program]") {
  // Megatron-Core's permutation 2 (token_dispatcher.py, sort_chunks_by_idxs): with more than one
  // local expert the copies a rank receives, grouped by source rank, are sorted by expert after
  // the dispatch and back before the combine, a read and a write of each copy.
  const ModelShape m = tiny_moe();
  const auto passes = [&](int ep) {
    const StageProgram s = build_program(m, moe_plan(m, 4, ep)).stages[0];
    std::map<OpKind, std::vector<double>> out;  // forward permutations of layer 2 -> their bytes
    for (int i = 0; i < s.size(); ++i)
      if (s.layer[i] == 2 && s.micro_batch[i] == 0 && s.phase[i] == Phase::forward &&
          (s.kind[i] == OpKind::moe_permute || s.kind[i] == OpKind::moe_unpermute))
        out[s.kind[i]].push_back(s.bytes[i]);
    return out;
  };
  const double copies = double(m.seq_len) * m.active_experts;
  const auto sorted = passes(4), local = passes(1);  // 2 local experts each; no exchange at ep 1
  REQUIRE(sorted.at(OpKind::moe_permute).size() == 2);
  REQUIRE(sorted.at(OpKind::moe_unpermute).size() == 2);
  CHECK(sorted.at(OpKind::moe_permute)[1] == Approx(2 * 2 * copies * m.hidden));
  CHECK(sorted.at(OpKind::moe_unpermute)[0] == Approx(2 * 2 * copies * m.hidden));
  CHECK(local.at(OpKind::moe_permute).size() == 1);
  CHECK(local.at(OpKind::moe_unpermute).size() == 1);
}
