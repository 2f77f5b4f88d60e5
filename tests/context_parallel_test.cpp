// Context parallelism (parallel.cp): worked examples of what a CP rank computes and sends, the
// ring's overlap bound in the engine, the groups that reduce gradients (DP x CP), the checks of
// the key, fit's memory against the simulated peak, and validate building rows with cp > 1.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <sstream>

#include "sim/base/error.hpp"
#include "sim/engine/engine.hpp"
#include "sim/validation/validate.hpp"
#include "tests/program_helpers.hpp"
#include "topologies/builders.hpp"
#include "workloads/memory_fit.hpp"
#include "workloads/program.hpp"

using namespace dtsim;
using dtsim::test::plan_of;

namespace {

// Llama-style: 8 query heads of 64 over 2 KV heads, 1024 tokens.
ModelShape tiny_llama() {
  ModelShape m;
  m.name = "tiny-llama";
  m.layers = 2;
  m.hidden = 512;
  m.heads = 8;
  m.kv_heads = 2;
  m.ffn_hidden = 1376;
  m.ffn = FfnKind::swiglu;
  m.vocab = 1000;
  m.seq_len = 1024;
  m.tied_embeddings = false;
  m.position = PositionEmbedding::rotary;
  m.bias = false;
  return m;
}

ParallelPlan cp_plan(const ModelShape& m, int cp, int dp, CpComm comm = CpComm::p2p) {
  ParallelPlan p = plan_of(1, 1, dp, 1, dp, Recompute::none);
  p.cp = cp;
  p.cp_comm = comm;
  p.attention = Attention::flash;
  p.dropout = false;
  validate_plan(p, m, cp * dp);
  return p;
}

// The ops of layer 0, micro-batch 0, in a phase, on stage 0.
std::vector<int> layer_ops(const StageProgram& s, Phase phase) {
  std::vector<int> out;
  for (int i = 0; i < s.size(); ++i)
    if (s.layer[i] == 0 && s.micro_batch[i] == 0 && s.phase[i] == phase) out.push_back(i);
  return out;
}

// Trace events of one rank, op kind, layer 0, micro-batch 0 and phase, in start order.
std::vector<EventRecord> events_of(const MemoryTraceSink& sink, int rank, OpKind kind, Phase phase) {
  std::vector<EventRecord> out;
  for (const EventRecord& e : sink.events_)
    if (e.rank == rank && e.op == static_cast<int>(kind) && e.layer == 0 && e.micro_batch == 0 &&
        e.phase == static_cast<int>(phase))
      out.push_back(e);
  std::sort(out.begin(), out.end(), [](const EventRecord& a, const EventRecord& b) { return a.start_ns < b.start_ns; });
  return out;
}

MemoryTraceSink run_traced(const ModelShape& m, const ParallelPlan& p, int nodes, int gpus_per_node, double* step_s) {
  ClusterConfig c;
  c.gpu = "H100-SXM5-80GB";
  c.nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  c.nics_per_node = 1;
  const ClusterGraph graph = build_cluster(c);
  const Program prog = build_program(m, p);
  Engine engine(prog, graph, find_gpu(c.gpu), Precision::bf16);
  MemoryTraceSink sink;
  *step_s = engine.run(&sink, TraceDetail::all).summary.step_time_s;
  return sink;
}

}  // namespace

TEST_CASE("a CP rank computes its share of the sequence and exchanges the keys and values", "[cp][program]") {
  const ModelShape m = tiny_llama();
  const ParallelPlan p = cp_plan(m, 4, 1);
  const Program prog = build_program(m, p);
  const StageProgram& s = prog.stages[0];
  // Keys and values of the whole sequence on this rank's heads: 2 bytes x 1024 tokens x (2 KV
  // heads x 64) x 2; the ring all-gather moves 3/4 of them through every rank.
  const double kv = 2.0 * 1024 * (2 * 64) * 2;
  double flash_flops = 0, gathered = 0, last_flash = 0;
  int gathers = 0;
  for (int i : layer_ops(s, Phase::forward)) {
    if (s.kind[i] == OpKind::qkv_proj) CHECK(s.gemm_m[i] == 1024 / 4);  // the rank's 256 queries
    if (s.kind[i] == OpKind::flash_attention) flash_flops += s.flops[i], last_flash = s.flops[i];
    if (s.kind[i] == OpKind::cp_kv_all_gather) {
      ++gathers, gathered += s.bytes[i];
      CHECK(s.comm[i] == CommKind::all_gather);
      CHECK(s.group[i] == Group::cp);
      CHECK(s.stream[i] == Stream::cp);
    }
  }
  CHECK(gathers == 1);
  CHECK(gathered == kv);
  // 256 queries x 1024 keys x 8 heads x 2 FLOPs x (64 + 64): a quarter of the whole attention,
  // the last K/V block's share (1/4 of it) run after the exchange.
  CHECK(flash_flops == Approx(2.0 * 8 * 256 * 1024 * 128));
  CHECK(last_flash == Approx(flash_flops / 4));
  // Backward: the keys and values gathered again, their gradients reduce-scattered back, the
  // kernels at twice the forward FLOPs.
  double backward_flash = 0, reduced = 0;
  gathered = 0;
  for (int i : layer_ops(s, Phase::backward)) {
    if (s.kind[i] == OpKind::flash_attention) backward_flash += s.flops[i];
    if (s.kind[i] == OpKind::cp_kv_all_gather) gathered += s.bytes[i];
    if (s.kind[i] == OpKind::cp_dkv_reduce_scatter) {
      reduced += s.bytes[i];
      CHECK(s.comm[i] == CommKind::reduce_scatter);
    }
  }
  CHECK(gathered == kv);
  CHECK(reduced == kv);
  CHECK(backward_flash == Approx(2 * flash_flops));
  // The job's model FLOPs do not depend on how the sequence is split.
  const ParallelPlan whole = cp_plan(m, 1, 1);
  CHECK(prog.model_flops_per_step == Approx(build_program(m, whole).model_flops_per_step));
}

TEST_CASE("the p2p ring hides the exchange behind the attention of the blocks in hand", "[cp][engine]") {
  // cp = 4 over two nodes of 2 GPUs (one NIC each): the exchange crosses the network.
  const ModelShape m = tiny_llama();
  double ring_s = 0, gather_s = 0;
  const MemoryTraceSink ring = run_traced(m, cp_plan(m, 4, 1), 2, 2, &ring_s);
  const MemoryTraceSink gather = run_traced(m, cp_plan(m, 4, 1, CpComm::all_gather), 2, 2, &gather_s);
  for (int rank = 0; rank < 4; ++rank) {
    const auto x = events_of(ring, rank, OpKind::cp_kv_all_gather, Phase::forward);
    const auto a = events_of(ring, rank, OpKind::flash_attention, Phase::forward);
    REQUIRE(x.size() == 1);
    REQUIRE(a.size() == 2);
    // The blocks in hand start with the exchange; the last block waits for both: the ring's
    // bound max((cp - 1)/cp A, X) + A/cp.
    CHECK(a[0].start_ns < x[0].end_ns);
    CHECK(a[1].start_ns >= std::max(a[0].end_ns, x[0].end_ns));
    // Llama 3's all-gather: the attention waits for the keys and values.
    const auto gx = events_of(gather, rank, OpKind::cp_kv_all_gather, Phase::forward);
    const auto ga = events_of(gather, rank, OpKind::flash_attention, Phase::forward);
    REQUIRE(gx.size() == 1);
    REQUIRE(ga.size() == 1);
    CHECK(ga[0].start_ns >= gx[0].end_ns);
  }
  // The CP group's four ranks end each exchange together.
  CHECK(events_of(ring, 0, OpKind::cp_kv_all_gather, Phase::forward)[0].end_ns ==
        events_of(ring, 3, OpKind::cp_kv_all_gather, Phase::forward)[0].end_ns);
  CHECK(ring_s < gather_s);
}

TEST_CASE("DP x CP ranks reduce the gradients together and ZeRO shards over them", "[cp][engine]") {
  // cp = 2, dp = 2 on one node of 4: one gradient all-reduce over all four ranks.
  const ModelShape m = tiny_llama();
  ParallelPlan p = cp_plan(m, 2, 2);
  p.dp_overlap = false;
  double step_s = 0;
  const MemoryTraceSink sink = run_traced(m, p, 1, 4, &step_s);
  std::map<int, std::vector<TimeNs>> reduce_end;
  for (const EventRecord& e : sink.events_)
    if (e.op == static_cast<int>(OpKind::dp_all_reduce)) reduce_end[e.rank].push_back(e.end_ns);
  REQUIRE(reduce_end[0].size() == 1);
  for (int rank = 1; rank < 4; ++rank) CHECK(reduce_end[rank] == reduce_end[0]);
  // Ranks are ordered tp, cp, dp, pp: ranks 0 and 1 share sequences, 0 and 2 do not.
  CHECK(p.coords(1).cp == 1);
  CHECK(p.coords(2).dp == 1);
  // The distributed optimizer's state is sharded over dp x cp = 4 ranks.
  ParallelPlan sharded = p;
  sharded.zero_stage = 1;
  ParallelPlan replicated = cp_plan(m, 1, 2);
  replicated.zero_stage = 1;
  const auto optimizer = [&](const ParallelPlan& plan) {
    return build_program(m, plan).stages[0].static_bytes[static_cast<int>(MemCategory::optimizer)];
  };
  CHECK(optimizer(sharded) == Approx(optimizer(replicated) / 2));
}

TEST_CASE("parallel.cp is checked against the sequence, the attention kernel and the GPUs", "[cp][plan]") {
  const ModelShape m = tiny_llama();
  ParallelPlan p = plan_of(1, 1, 1, 1, 1, Recompute::none);
  p.attention = Attention::flash;
  p.cp = 3;
  CHECK_THROWS_WITH(validate_plan(p, m, 3), Catch::Contains("parallel.cp = 3: the sequence length 1024 must be a "
                                                            "multiple of 2 x cp = 6"));
  p.cp = 4;
  CHECK_THROWS_WITH(validate_plan(p, m, 8), Catch::Contains("parallel.tp x parallel.cp x parallel.pp x parallel.dp = "
                                                            "1 x 4 x 1 x 1 = 4, but the cluster has 8 GPUs"));
  p.attention = Attention::standard;
  CHECK_THROWS_WITH(validate_plan(p, m, 4), Catch::Contains("needs flash attention"));
  CHECK_THROWS_WITH(parse_cp_comm("ring", "parallel.cp_comm"), Catch::Contains("valid values are p2p, all_gather"));
  CHECK(parse_rank_order("tp,dp,pp", "k") == std::array<char, 4>{'t', 'c', 'd', 'p'});
  CHECK(parse_rank_order("dp,pp,tp", "k") == std::array<char, 4>{'d', 'p', 't', 'c'});
  CHECK(parse_rank_order("tp,cp,pp,dp", "k") == std::array<char, 4>{'t', 'c', 'p', 'd'});
  CHECK_THROWS_WITH(parse_rank_order("tp,cp,cp,dp", "k"), Catch::Contains("give tp, cp, dp and pp once each"));
}

TEST_CASE("fit divides the activations by cp and shards the state over dp x cp", "[cp][fit]") {
  const ModelShape& m = find_model("llama3-8b");
  TrainingSetup s{m.seq_len, 1, Recompute::none, 1, false, 0};
  s.attention = Attention::flash;
  s.dropout = false;
  const MemoryNeed one = training_memory(m, s, 1, 1, 2);
  s.cp = 4;
  const MemoryNeed four = training_memory(m, s, 1, 1, 2);
  const auto item = [](const MemoryNeed& n, const std::string& name) {
    for (const MemoryItem& i : n.items)
      if (i.name == name) return i.bytes;
    return -1.0;
  };
  CHECK(item(four, "activations") == Approx(item(one, "activations") / 4).epsilon(0.02));
  CHECK(item(four, "optimizer") == Approx(item(one, "optimizer") / 4));
  CHECK(item(four, "weights") == item(one, "weights"));
}

TEST_CASE("validate builds a row with context parallelism", "[cp][validate]") {
  const std::string header =
      "run_id,source_id,model,layers,hidden,heads,kv_heads,ffn_hidden,vocab,seq_len,global_batch_seqs,micro_batch,"
      "num_gpus,gpu_type,nic_gbps,nics_per_node,gpus_per_node,precision,tp,pp,cp,vpp_chunks,sequence_parallel,"
      "recompute,zero_or_sharding,framework,iter_time_s,tokens_per_s_per_gpu,tflops_per_gpu,flops_counting\n";
  std::istringstream csv(header +
                         "long,X,Llama 3 8B,32,4096,32,8,14336,128256,16384,8,1,32,H100-SXM5-80GB,400,8,8,bf16,2,1,4,1,"
                         "yes,none,distributed optimizer,NeMo 24.07 / Megatron-Core,9.0,,,\n");
  const std::vector<ValidationCase> cases = read_validation_cases(csv, "rows.csv", {});
  REQUIRE(cases.size() == 1);
  REQUIRE(cases[0].row.skip_reason.empty());
  const auto has = [&](const std::string& s) {
    return std::find(cases[0].overrides.begin(), cases[0].overrides.end(), s) != cases[0].overrides.end();
  };
  CHECK(has("--parallel.cp=4"));
  CHECK(has("--parallel.dp=4"));  // 32 GPUs / (tp 2 x pp 1 x cp 4)
  CHECK(has("--parallel.cp_comm=p2p"));
  const Scenario sc = validation_scenario(cases[0], "rows.csv");
  CHECK(sc.plan.cp == 4);
  CHECK(sc.plan.num_ranks() == 32);
}
