// The determinism contract of the parallel engine: every shipped scenario gives the same summary,
// per-rank rows and trace rows with 1 and with several threads; and heterogeneity (a slow GPU, a
// degraded link) reaches the whole step.
#include <catch2/catch.hpp>

#include <tuple>
#include <string>
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/engine/domains.hpp"
#include "sim/scenario/run.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/program.hpp"
#include "tests/scenario_helpers.hpp"

using namespace dtsim;

namespace {

struct Run {
  EngineResult result;
  MemoryTraceSink sink;
};

Scenario load(const std::string& file, std::vector<std::string> overrides) {
  return test::load_shipped(file, overrides);
}

// Every window is handed out to the threads, however small the step (the engine's default runs
// small steps' windows on one thread; the test below checks that too).
Run simulate(Scenario sc, EngineOptions options) {
  options.parallel_from_ranks = 0;
  const ClusterGraph graph = make_cluster(sc);
  validate_scenario(sc, graph.num_gpus());
  const Program program = build_program(sc.model, sc.plan);
  Engine engine(program, graph, find_gpu(sc.cluster.gpu), sc.precision, sc.protocol, sc.algorithm, *sc.nccl);
  if (!sc.slow_gpus.empty()) {
    options.gpu_speed.assign(graph.num_gpus(), 1.0);
    for (const GpuFactor& f : sc.slow_gpus) options.gpu_speed[f.gpu] = f.factor;
  }
  Run r;
  r.result = engine.run(sc.trace_detail == TraceDetail::summary ? nullptr : &r.sink, sc.trace_detail, options);
  return r;
}

// Field by field (the records have padding, so their bytes cannot be compared).
bool same(const EventRecord& a, const EventRecord& b) {
  return std::tie(a.rank, a.stream, a.category, a.phase, a.op, a.layer, a.micro_batch, a.start_ns, a.end_ns, a.flops,
                  a.bytes) == std::tie(b.rank, b.stream, b.category, b.phase, b.op, b.layer, b.micro_batch, b.start_ns,
                                       b.end_ns, b.flops, b.bytes);
}
bool same(const MemoryRecord& a, const MemoryRecord& b) {
  return std::tie(a.rank, a.time_ns, a.weights, a.gradients, a.optimizer, a.activations, a.buffers) ==
         std::tie(b.rank, b.time_ns, b.weights, b.gradients, b.optimizer, b.activations, b.buffers);
}
template <class T>
bool same_rows(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}

Run simulate(const Scenario& sc, int threads) { return simulate(sc, EngineOptions{.threads = threads}); }

// b simulated events_ratio times fewer events than a.
void check_same(const Run& a, const Run& b, int events_ratio = 1) {
  const Summary &x = a.result.summary, &y = b.result.summary;
  CHECK(x.step_time_s == y.step_time_s);
  CHECK(x.events == events_ratio * y.events);
  CHECK(x.model_tflops_per_gpu == y.model_tflops_per_gpu);
  CHECK(x.peak_memory_gib == y.peak_memory_gib);
  CHECK(x.oom_rank == y.oom_rank);
  CHECK(x.oom_time_s == y.oom_time_s);
  CHECK(x.compute == y.compute);
  CHECK(x.exposed_comm == y.exposed_comm);
  CHECK(x.bubble == y.bubble);
  REQUIRE(a.result.ranks.size() == b.result.ranks.size());
  for (std::size_t i = 0; i < a.result.ranks.size(); ++i) {
    CHECK(a.result.ranks[i].peak_memory_bytes == b.result.ranks[i].peak_memory_bytes);
    CHECK(a.result.ranks[i].bubble_s == b.result.ranks[i].bubble_s);
  }
  REQUIRE(a.result.links.size() == b.result.links.size());
  for (std::size_t i = 0; i < a.result.links.size(); ++i) CHECK(a.result.links[i].bytes == b.result.links[i].bytes);
  CHECK(a.sink.events_.size() == b.sink.events_.size());
  CHECK(same_rows(a.sink.events_, b.sink.events_));
  CHECK(same_rows(a.sink.memory_, b.sink.memory_));
}

}  // namespace

TEST_CASE("every shipped scenario gives identical results and trace rows on 1 and 3 threads", "[engine][threads][heavy]") {
  // The 16K scenario at 256 GPUs (DP 2) keeps its clos3 fabric, layout per replica and heterogeneity.
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"bloom-176b.ini", {}},
      {"gpt-1.7b-32xa100.ini", {"--output.trace_detail=full"}},
      {"gpt-neox-20b-2x3090.ini", {"--output.trace_detail=full"}},
      {"gpt2-xl-2x3090.ini", {"--output.trace_detail=full"}},
      {"tests/tiny-pipeline.ini", {"--output.trace_detail=full"}},
      {"llama3-405b-16k.ini",
       {"--parallel.dp=2", "--training.global_batch=32", "--cluster.nodes=32", "--cluster.pod_gpus=128",
        "--cluster.slow_gpus=17:0.8,101:0.9", "--cluster.degraded_links=node3.nic0--tor1:0.5"}},
      // The long-context scenario's CP 16 and [TP, CP, PP, DP] order on 256 GPUs.
      {"llama3-405b-131k.ini",
       {"--parallel.pp=2", "--model.layers=8", "--parallel.virtual_stages=4", "--parallel.dp=1", "--training.global_batch=2", "--model.seq_len=16384",
        "--cluster.nodes=32", "--cluster.pod_gpus=128", "--output.trace_detail=full"}},
  };
  for (const auto& [file, overrides] : cases) {
    INFO(file);
    const Scenario sc = load(file, overrides);
    const Run one = simulate(sc, 1), three = simulate(sc, 3);
    CHECK(one.result.summary.events > 0);
    check_same(one, three);
  }
}

TEST_CASE("a small step's windows on the calling thread give what handed-out windows give", "[engine][threads][heavy]") {
  const Scenario sc = load("bloom-176b.ini", {});
  const ClusterGraph graph = make_cluster(sc);
  const Program program = build_program(sc.model, sc.plan);
  Engine engine(program, graph, find_gpu(sc.cluster.gpu), sc.precision, sc.protocol, sc.algorithm, *sc.nccl);
  REQUIRE(graph.num_gpus() < EngineOptions{}.parallel_from_ranks);
  EngineOptions options;
  options.threads = 2;
  Run on_leader;
  on_leader.result = engine.run(&on_leader.sink, sc.trace_detail, options);
  check_same(simulate(sc, 2), on_leader);
}

// For each (scenario file, overrides): the two runs `both` makes of it give the same results.
template <class Both>
void check_same_on(const std::vector<std::pair<std::string, std::vector<std::string>>>& cases, Both both,
                   int (*events_ratio)(const Scenario&) = nullptr) {
  for (const auto& [file, overrides] : cases) {
    INFO(file);
    const Scenario sc = load(file, overrides);
    const auto [a, b] = both(sc);
    check_same(a, b, events_ratio ? events_ratio(sc) : 1);
  }
}

TEST_CASE("windows as long as the step's least latency tail: every protocol and algorithm", "[engine][threads][heavy]") {
  // The lookahead is the least tail of any transfer the step can start; a transfer that ended
  // inside its window would throw (schedule_remote). Forced protocols and algorithms give each
  // step other least tails: LL's and Simple's 30 µs bases, LL128's 50 µs, trees' and the
  // hierarchical phases' steps; DP groups of 4 GPUs on each of 2 nodes, PCIe with host staging.
  std::vector<std::pair<std::string, std::vector<std::string>>> cases;
  for (const char* protocol : {"ll", "ll128", "simple"})
    for (const char* algorithm : {"ring", "tree", "hierarchical"})
      cases.push_back({"gpt-1.7b-32xa100.ini",
                       {std::string("--cluster.nccl_protocol=") + protocol, std::string("--cluster.nccl_algorithm=") + algorithm,
                        "--parallel.tp=2", "--parallel.pp=2", "--parallel.dp=8", "--parallel.rank_order=tp,dp,pp",
                        "--output.trace_detail=full"}});
  cases.push_back({"gpt-neox-20b-2x3090.ini", {"--cluster.nccl_protocol=ll", "--output.trace_detail=full"}});
  cases.push_back({"gpt-1.7b-32xa100.ini", {"--cluster.gpu=H100-SXM5-80GB", "--cluster.nccl_algorithm=nvls",
                                            "--cluster.nccl_version=2.27", "--parallel.tp=8", "--parallel.dp=4",
                                            "--output.trace_detail=full"}});
  // DP groups of 4 GPUs on each of 4 nodes: NVLS inside the nodes, trees across.
  cases.push_back({"gpt-1.7b-32xa100.ini", {"--cluster.gpu=H100-SXM5-80GB", "--cluster.nccl_algorithm=nvls_tree",
                                            "--cluster.nccl_version=2.27", "--parallel.tp=2", "--parallel.dp=16",
                                            "--output.trace_detail=full"}});
  check_same_on(cases, [](const Scenario& sc) { return std::pair(simulate(sc, 1), simulate(sc, 3)); });
}

TEST_CASE("per-node flow networks give what one flow network gives", "[engine][threads][heavy]") {
  // In-node transfers on their nodes' own flow networks (domains.hpp) share no link with
  // the rest, so the step, the per-rank rows, the link bytes and the trace rows are unchanged.
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"bloom-176b.ini", {}},
      {"deepseek-r1-256xh100.ini", {}},
      {"tests/tiny-pipeline.ini", {"--output.trace_detail=full"}},
      {"tests/tiny-pipeline.ini",
       {"--cluster.gpu=B200", "--cluster.node_kind=nvl72", "--cluster.gpus_per_node=72", "--cluster.nodes=2",
        "--cluster.fabric=rail", "--parallel.tp=8", "--parallel.pp=2", "--parallel.dp=9", "--training.global_batch=18"}},
      {"llama3-405b-16k.ini",
       {"--parallel.dp=2", "--training.global_batch=32", "--cluster.nodes=32", "--cluster.pod_gpus=128",
        "--cluster.slow_gpus=17:0.8,101:0.9"}},
  };
  check_same_on(cases, [](const Scenario& sc) {
    return std::pair(simulate(sc, EngineOptions{.threads = 1, .node_domains = false}), simulate(sc, 2));
  });
}

TEST_CASE("kernel chains give what an event per kernel gives", "[engine][threads][heavy]") {
  // A chain's kernels are handled at their own times (rank.hpp); with collectives
  // overlapping kernels (BLOOM's DP reduction, TP overlap) and slow GPUs the chains are retimed.
  // The summary and per-rank rows match one event per kernel; a full trace runs without chains.
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"bloom-176b.ini", {"--cluster.slow_gpus=5:0.7"}},
      {"deepseek-r1-256xh100.ini", {}},
      // DeepEP's hops beside the shared experts: kernels on the SMs its kernels leave.
      {"deepseek-r1-256xh100.ini", {"--parallel.moe_dispatcher=deepep", "--parallel.moe_shared_expert_overlap=true"}},
      {"gpt-1.7b-32xa100.ini", {"--parallel.tp_overlap=true", "--output.trace_detail=summary"}},
      {"llama3-405b-16k.ini",
       {"--parallel.dp=2", "--training.global_batch=32", "--cluster.nodes=32", "--cluster.pod_gpus=128",
        "--cluster.slow_gpus=17:0.8,101:0.9"}},
      // ZeRO-3 without a pipeline: the first layer's gather is posted as the rank starts, beside
      // the chain of the embedding and its norm, which it slows from its first kernel.
      {"tests/tiny-pipeline.ini",
       {"--model.embedding_norm=true", "--parallel.pp=1", "--parallel.tp=1", "--parallel.dp=8",
        "--parallel.zero_stage=3", "--parallel.dp_overlap=true"}},
  };
  check_same_on(cases, [](const Scenario& sc) {
    return std::pair(simulate(sc, EngineOptions{.threads = 1, .kernel_chains = false}), simulate(sc, 2));
  });
}

TEST_CASE("node domains of lone TP rings give what their flow networks give", "[engine][threads][heavy]") {
  // TP 8 fills each node and the pipeline and DP leave it: each node's TP rings never share a
  // link (NodeDomains::lone), so their flows are timed in closed form (Transfers::set_lone).
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"llama3-405b-16k.ini",
       {"--parallel.dp=2", "--training.global_batch=32", "--cluster.nodes=32", "--cluster.pod_gpus=128",
        "--cluster.slow_gpus=17:0.8,101:0.9"}},
      {"gpt-1.7b-32xa100.ini", {"--parallel.tp=8", "--parallel.dp=4", "--parallel.tp_overlap=true",
                                "--parallel.sequence_parallel=true", "--output.trace_detail=full"}},
      {"gpt-1.7b-32xa100.ini", {"--parallel.tp=2", "--parallel.pp=4", "--parallel.dp=4", "--parallel.rank_order=tp,pp,dp"}},
  };
  check_same_on(cases, [](const Scenario& sc) {
    return std::pair(simulate(sc, EngineOptions{.threads = 1, .lone_domains = false}),
                     simulate(sc, EngineOptions{.threads = 2, .tp_symmetric = true, .fold_tp = true}));
  }, [](const Scenario& sc) { return sc.slow_gpus.empty() && sc.trace_detail != TraceDetail::all ? sc.plan.tp : 1; });
}

// Clusters the TP permutation maps onto themselves: NICs one per GPU or shared, fat tree, rails
// and the three-tier Clos; DP overlap, ZeRO-3 gathers, TP overlap, sequence parallelism and
// interleaving.
const std::vector<std::pair<std::string, std::vector<std::string>>> kTpSymmetric = {
    {"bloom-176b.ini", {"--training.global_batch=256"}},
    {"bloom-176b.ini",
     {"--training.global_batch=256", "--cluster.fabric=rail", "--parallel.zero_stage=3", "--parallel.dp_overlap=true"}},
    {"gpt-1.7b-32xa100.ini", {"--parallel.tp=4", "--parallel.dp=8", "--parallel.tp_overlap=true", "--parallel.sequence_parallel=true"}},
    {"llama3-405b-16k.ini",
     {"--parallel.dp=2", "--training.global_batch=32", "--cluster.nodes=32", "--cluster.pod_gpus=128"}},
    {"llama3-405b-16k.ini",
     {"--parallel.tp=2", "--parallel.pp=8", "--parallel.dp=4", "--training.global_batch=32", "--cluster.nodes=8",
      "--cluster.pod_gpus=32", "--cluster.nics_per_node=2", "--parallel.schedule=interleaved",
      "--parallel.virtual_stages=2", "--model.layers=32"}},
    // Two NVL72 racks on rails: nine TP groups per rack, DP across the racks.
    {"tests/tiny-pipeline.ini",
     {"--cluster.gpu=B200", "--cluster.node_kind=nvl72", "--cluster.gpus_per_node=72", "--cluster.nodes=2",
      "--cluster.fabric=rail", "--parallel.tp=8", "--parallel.pp=2", "--parallel.dp=9", "--training.global_batch=18"}},
};

TEST_CASE("TP copies' transfers carried by their representative's give what separate transfers give", "[engine][threads][heavy]") {
  // Every rank runs; each send and collective leaving a TP group carries its TP peers' as well
  // (fold.hpp). The step, per-rank rows, link bytes, events and every rank's trace rows
  // are the same.
  std::vector<std::pair<std::string, std::vector<std::string>>> cases = kTpSymmetric;
  cases.push_back({"gpt-1.7b-32xa100.ini", {"--parallel.tp=8", "--parallel.dp=4", "--output.trace_detail=full"}});
  check_same_on(cases, [](const Scenario& sc) {
    REQUIRE(tp_fold_exact(sc));
    return std::pair(simulate(sc, 1), simulate(sc, EngineOptions{.threads = 2, .tp_symmetric = true}));
  });
}

TEST_CASE("folding TP groups gives what simulating every TP rank gives", "[engine][threads][heavy]") {
  // One rank per TP group runs for the group (fold.hpp). The step, per-rank rows, link
  // bytes and the stage ranks' trace rows are the same, from 1/tp the events.
  check_same_on(
      kTpSymmetric,
      [](const Scenario& sc) {
        REQUIRE(tp_fold_exact(sc));
        return std::pair(simulate(sc, 1), simulate(sc, EngineOptions{.threads = 2, .tp_symmetric = true, .fold_tp = true}));
      },
      [](const Scenario& sc) { return sc.plan.tp; });
}

TEST_CASE("TP groups fold only on clusters the TP permutation maps onto themselves", "[engine]") {
  CHECK(tp_fold_exact(load("bloom-176b.ini", {})));
  CHECK_FALSE(tp_fold_exact(load("bloom-176b.ini", {"--cluster.spines=4"})));       // ECMP over spines
  CHECK_FALSE(tp_fold_exact(load("bloom-176b.ini", {"--cluster.nics_per_node=3"})));  // GPUs 0, 3, 6 on NIC 0
  CHECK_FALSE(tp_fold_exact(load("bloom-176b.ini", {"--cluster.slow_gpus=5:0.7"})));
  CHECK_FALSE(tp_fold_exact(load("bloom-176b.ini", {"--cluster.degraded_links=node3.nic0--leaf0:0.5"})));
  CHECK_FALSE(tp_fold_exact(load("bloom-176b.ini", {"--parallel.rank_order=dp,tp,pp"})));
  CHECK_FALSE(tp_fold_exact(load("gpt-neox-20b-2x3090.ini", {})));  // a PCIe box
}

TEST_CASE("a node gets its own flow network only where nothing else crosses its in-node links", "[engine]") {
  auto domains_of = [](Scenario sc) {
    const ClusterGraph graph = make_cluster(sc);
    validate_scenario(sc, graph.num_gpus());
    const Program program = build_program(sc.model, sc.plan);
    const Router router(graph);
    const CommModel comm(graph, router);
    RankGroups groups(sc.plan, comm);
    return node_domains(program, graph, router, groups);
  };
  // TP 8 in NVSwitch nodes, DP one GPU per node: every node has its own.
  const Scenario llama = load("llama3-405b-16k.ini", {"--parallel.dp=2", "--training.global_batch=32",
                                                      "--cluster.nodes=32", "--cluster.pod_gpus=128"});
  const NodeDomains spread = domains_of(llama);
  CHECK(spread.links.size() == 32);
  CHECK(spread.domain_of_rank[9] == spread.domain_of_rank[15]);  // GPUs 8..15: node 1
  CHECK(spread.domain_of_rank[7] != spread.domain_of_rank[8]);
  CHECK(spread.group_in_node[0][9] == 1);   // TP
  CHECK(spread.group_in_node[1][9] == 0);   // DP
  CHECK(spread.lone[1] == 1);                // only TP rings, on links of their own
  // TP 4 and DP 2 in each node: the DP all-reduce's in-node phase shares the NVLink links.
  const Scenario shared = load("llama3-405b-16k.ini", {"--parallel.tp=4", "--parallel.dp=4", "--training.global_batch=32",
                                                       "--parallel.schedule=1f1b", "--parallel.virtual_stages=1",
                                                       "--parallel.rank_order=tp,cp,dp,pp",
                                                       "--cluster.nodes=32", "--cluster.pod_gpus=128"});
  CHECK(domains_of(shared).links.empty());
  // TP 4 and two pipeline stages in each node: its sends share the TP rings' links.
  const NodeDomains staged = domains_of(load("llama3-405b-16k.ini", {"--parallel.tp=4", "--parallel.pp=32", "--parallel.dp=2",
                                                                     "--parallel.schedule=1f1b", "--parallel.virtual_stages=1",
                                                                     "--parallel.rank_order=tp,pp,dp", "--training.global_batch=64",
                                                                     "--cluster.nodes=32", "--cluster.pod_gpus=128"}));
  REQUIRE(staged.links.size() == 32);
  CHECK(staged.lone[0] == 0);
}

TEST_CASE("a slow GPU stretches its own ops and the whole step", "[engine][heterogeneity]") {
  // No collective overlaps a kernel (DP reduction after the backward pass, TP collectives
  // synchronous), so no kernel is slowed by a resident collective and the factor shows alone.
  const std::vector<std::string> base = {"--output.trace_detail=full", "--parallel.dp_overlap=false"};
  std::vector<std::string> slow = base;
  slow.push_back("--cluster.slow_gpus=1:0.5");
  const Run nominal = simulate(load("tests/tiny-pipeline.ini", base), 2);
  const Run slowed = simulate(load("tests/tiny-pipeline.ini", slow), 2);
  // Rank 1's compute time doubles (durations are rounded per op, hence the margin) and, as its
  // peers wait for it in collectives and the pipeline, the step gets longer.
  const double before = nominal.result.ranks[1].compute_s + nominal.result.ranks[1].memory_bound_s;
  const double after = slowed.result.ranks[1].compute_s + slowed.result.ranks[1].memory_bound_s;
  CHECK(after == Approx(2 * before).epsilon(1e-6));
  CHECK(slowed.result.summary.step_time_s > nominal.result.summary.step_time_s);
  CHECK(slowed.result.ranks[0].compute_s == Approx(nominal.result.ranks[0].compute_s));
}

TEST_CASE("a degraded link carries less and slows the step", "[engine][heterogeneity]") {
  const Scenario base = load("llama3-405b-16k.ini", {"--parallel.dp=2", "--training.global_batch=32",
                                                    "--cluster.nodes=32", "--cluster.pod_gpus=128",
                                                    "--output.trace_detail=summary"});
  Scenario degraded = base;
  degraded.degraded_links.push_back(LinkFactor{"node0.nic0", "tor0", 0.05});
  const ClusterGraph graph = make_cluster(degraded);
  const ClusterGraph nominal_graph = make_cluster(base);
  int changed = 0;
  for (int id = 0; id < graph.num_links(); ++id)
    if (graph.link(id).bytes_per_s != nominal_graph.link(id).bytes_per_s) {
      CHECK(graph.link(id).bytes_per_s == Approx(0.05 * nominal_graph.link(id).bytes_per_s));
      ++changed;
    }
  CHECK(changed == 2);  // both directions
  CHECK(simulate(degraded, 2).result.summary.step_time_s > simulate(base, 2).result.summary.step_time_s);
}
