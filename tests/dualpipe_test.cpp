// DualPipe (DeepSeek-V3 report Sec. 3.2.1, deepseek-ai/DualPipe): the schedule's passes per rank,
// the two directions' sends and receives, the mirror stages' parameters and gradient sum, the
// overlapped pairs, and the step against the bubble of the DualPipe table.
#include <catch2/catch.hpp>

#include <map>

#include "sim/engine/engine.hpp"
#include "tests/program_helpers.hpp"
#include "topologies/builders.hpp"
#include "workloads/memory_fit.hpp"
#include "workloads/pipeline_schedule.hpp"
#include "workloads/program.hpp"

using namespace dtsim;
using dtsim::test::plan_of;

namespace {

ParallelPlan dualpipe_plan(int pp, int micro_batches) {
  ParallelPlan p = plan_of(1, pp, 1, 1, micro_batches, Recompute::none);
  p.schedule = Schedule::dualpipe;
  return p;
}

// Compute time of a rank's forward (or backward and recompute) kernels, from an engine trace.
double busy_s(const MemoryTraceSink& sink, int rank, bool forward) {
  double ns = 0;
  for (const EventRecord& e : sink.events_) {
    const auto phase = static_cast<Phase>(e.phase);
    if (e.rank == rank && e.stream == static_cast<int>(Stream::compute) && phase != Phase::optimizer &&
        (phase == Phase::forward) == forward)
      ns += static_cast<double>(e.end_ns - e.start_ns);
  }
  return ns * 1e-9;
}

}  // namespace

TEST_CASE("DualPipe runs every micro-batch once per rank, half from each end", "[dualpipe]") {
  for (int pp : {2, 4, 8})
    for (int m : {2 * pp, 2 * pp + 2, 4 * pp}) {
      ParallelPlan p = dualpipe_plan(pp, m);
      p.stage_layers.assign(pp, 1);
      for (int s = 0; s < pp; ++s) {
        INFO("pp " << pp << " micro-batches " << m << " stage " << s);
        const std::vector<PipelinePass> order = pipeline_order(p, s);
        std::map<std::pair<int, bool>, int> seen;
        int overlapped = 0;
        for (std::size_t i = 0; i < order.size(); ++i) {
          const PipelinePass& pass = order[i];
          ++seen[{pass.micro_batch, pass.forward}];
          CHECK(pass.chunk == (pass.micro_batch < m / 2 ? 0 : 1));
          if (pass.overlapped) {
            ++overlapped;
            REQUIRE(i + 1 < order.size());
            CHECK(pass.forward);
            CHECK_FALSE(order[i + 1].forward);
            CHECK(order[i + 1].chunk != pass.chunk);  // the two directions side by side
          }
        }
        CHECK(seen.size() == static_cast<std::size_t>(2 * m));
        for (const auto& [key, n] : seen) CHECK(n == 1);
        // Steps 4 and 5 of DualPipe.step: 2 (m/2 - pp + r + 1) - [middle rank] + (pp/2 - r - 1) pairs.
        const int r = std::min(s, pp - 1 - s), middle = s == pp / 2 - 1 || s == pp / 2;
        CHECK(overlapped == 2 * (m / 2 - pp + r + 1) - middle + (pp / 2 - r - 1));
        // Each direction's backward passes come in the order of its forward passes.
        int last[2] = {-1, -1};
        for (const PipelinePass& pass : order)
          if (!pass.forward) {
            CHECK(pass.micro_batch > last[pass.chunk]);
            last[pass.chunk] = pass.micro_batch;
          }
      }
    }
}

TEST_CASE("DualPipe holds its own and the mirror stage and refuses layouts it cannot run", "[dualpipe]") {
  ModelShape m = find_model("gpt-1.7b");  // 24 layers
  ParallelPlan p = dualpipe_plan(4, 8);
  validate_plan(p, m, 4);
  // Rank 1 runs stage 1 from the first stage on and stage 2 from the last stage back.
  CHECK(p.chunk_first_layer(1, 0) == 6);
  CHECK(p.chunk_first_layer(1, 1) == 12);
  CHECK(p.chunk_reversed(1));
  CHECK_FALSE(p.chunk_reversed(0));
  // The end ranks hold both the embedding and the head.
  CHECK(p.holds_embedding(0, 0));
  CHECK(p.holds_head(0, 1));
  CHECK(p.holds_embedding(3, 1));
  CHECK(p.holds_head(3, 0));
  CHECK_FALSE(p.holds_head(1, 1));
  // Two stages' parameters, gradients and optimizer state on every rank: twice a 1F1B stage's.
  ParallelPlan one = p;
  one.schedule = Schedule::one_f_one_b;
  for (int s = 0; s < 4; ++s) {
    const StageState dual = stage_state(m, p, s);
    const StageState a = stage_state(m, one, s), b = stage_state(m, one, 3 - s);
    CHECK(dual.weights == Approx(a.weights + b.weights));
    CHECK(dual.optimizer == Approx(a.optimizer + b.optimizer));
  }

  ParallelPlan odd = dualpipe_plan(3, 8);
  CHECK_THROWS_WITH(validate_plan(odd, m, 3), Catch::Contains("parallel.pp = 3") && Catch::Contains("even"));
  ParallelPlan few = dualpipe_plan(4, 6);
  CHECK_THROWS_WITH(validate_plan(few, m, 4), Catch::Contains("6 micro-batches") && Catch::Contains("2 x parallel.pp = 8"));
  ParallelPlan uneven = dualpipe_plan(4, 9);
  CHECK_THROWS_WITH(validate_plan(uneven, m, 4), Catch::Contains("9 micro-batches"));
}

TEST_CASE("DualPipe's step runs to the end with its bubble and sums the mirror ranks' gradients", "[dualpipe][engine]") {
  // Two dense stages per rank, no DP: the step is the busiest rank's m (F + B) plus the bubble of the
  // DualPipe table, (pp/2 - 1)(F&B + B - 3W), with W inside B here and F&B = F + B (nothing to overlap).
  ModelShape m = find_model("gpt-1.7b");
  const int pp = 4, mbs = 16;
  ParallelPlan p = dualpipe_plan(pp, mbs);
  p.attention = Attention::flash;
  p.dropout = false;
  validate_plan(p, m, pp);
  ClusterConfig c;
  c.gpus_per_node = pp;
  const Program prog = build_program(m, p);
  MemoryTraceSink sink;
  const EngineResult r = Engine(prog, build_cluster(c), find_gpu("A100-SXM4-80GB"), Precision::bf16).run(&sink, TraceDetail::all);
  std::int64_t ops = 0;
  for (const StageProgram& s : prog.stages) ops += s.size();
  CHECK(r.summary.events == ops);

  // Every rank sums its gradients with its mirror's before the optimizer step.
  for (const StageProgram& st : prog.stages) {
    int mirror = 0;
    for (int i = 0; i < st.size(); ++i)
      if (st.kind[i] == OpKind::mirror_all_reduce) {
        ++mirror;
        CHECK(st.group[i] == Group::pp_mirror);
      }
    CHECK(mirror == 1);
  }

  // F and B of the busiest rank: the end ranks hold the embedding and the head, one in each
  // direction; their mean pass stands for the table's uniform F and B.
  const double f = busy_s(sink, 0, true) / mbs, b = busy_s(sink, 0, false) / mbs;
  CHECK(f > busy_s(sink, 1, true) / mbs);
  const double expected = mbs * (f + b) + (pp / 2 - 1) * ((f + b) + b);
  CHECK(r.summary.step_time_s == Approx(expected).epsilon(0.02));
  // 1F1B's bubble on the same passes would be (pp - 1)(F + B).
  CHECK(r.summary.step_time_s < mbs * (f + b) + (pp - 1) * (f + b));
}

TEST_CASE("DualPipe runs a pair's computation beside the other pass's all-to-alls", "[dualpipe][engine]") {
  // Qwen3-30B-A3B cut to 8 layers, EP 2 over DP 2, 2 stages: every forward that has a backward
  // beside it alternates with it on the compute stream between their all-to-alls.
  ModelShape m = find_model("qwen3-30b-a3b");
  m.layers = 8;
  m.seq_len = 1024;
  ParallelPlan p = plan_of(1, 2, 2, 1, 32, Recompute::none);
  p.schedule = Schedule::dualpipe;
  p.ep = 2;
  p.attention = Attention::flash;
  validate_plan(p, m, 4);
  const Program prog = build_program(m, p);
  const StageProgram& st = prog.stages[0];
  // Switches between micro-batches on the compute stream inside overlapped pairs (forward and
  // backward passes of different micro-batches with no pipeline op between them).
  int switches = 0;
  const auto& compute = st.stream_ops[static_cast<int>(Stream::compute)];
  for (std::size_t i = 1; i < compute.size(); ++i) {
    const int a = compute[i - 1], b = compute[i];
    if (st.micro_batch[a] >= 0 && st.micro_batch[b] >= 0 && st.micro_batch[a] != st.micro_batch[b] &&
        st.phase[a] != st.phase[b] && st.phase[a] != Phase::optimizer && st.phase[b] != Phase::optimizer)
      ++switches;
  }
  // Each pair switches at every all-to-all of its four MoE layers (2 per layer and pass), where
  // passes that run one after the other switch once.
  int pairs = 0;
  for (const PipelinePass& pass : pipeline_order(p, 0)) pairs += pass.overlapped;
  CHECK(pairs == 13);
  CHECK(switches >= 2 * 8 * pairs);
  ClusterConfig c;
  c.gpus_per_node = 2;
  c.nodes = 2;
  MemoryTraceSink sink;
  const EngineResult r = Engine(prog, build_cluster(c), find_gpu("H100-SXM5-80GB"), Precision::bf16).run(&sink, TraceDetail::all);
  std::int64_t ops = 0;
  for (const StageProgram& s : prog.stages) ops += s.size();
  CHECK(r.summary.events == ops * 2);  // two DP ranks per stage
}
