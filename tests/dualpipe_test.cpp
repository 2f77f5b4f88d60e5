// DualPipe (DeepSeek-V3 report Sec. 3.2.1, deepseek-ai/DualPipe): the schedule's passes per rank,
// the two directions' sends and receives, the mirror stages' parameters and gradient sum, the
// overlapped pairs, and the step against the bubble of the DualPipe table. DualPipeV
// (dualpipev.py, the "cut-in-half" DualPipe): its passes, the V's layer placement (chunk 0 down,
// chunk 1 back up, embedding and head on rank 0), the turn on the last rank without a message,
// one copy of the weights, and the step's bubble against the order's own and the table's; both
// schedules' activations in flight against the table's PP + 1.
#include <catch2/catch.hpp>

#include <map>
#include <tuple>
#include <utility>

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

ParallelPlan v_plan(int pp, int micro_batches) {
  ParallelPlan p = plan_of(1, pp, 1, 1, micro_batches, Recompute::none);
  p.schedule = Schedule::dualpipev;
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

// A step of `m` under plan `p` (flash attention, no dropout) on p.pp A100s of one node, every
// event traced; the engine ran one event per op.
struct TracedStep {
  TracedStep(const ModelShape& m, ParallelPlan p) : plan(std::move(p)) {
    plan.attention = Attention::flash;
    plan.dropout = false;
    validate_plan(plan, m, plan.pp);
    ClusterConfig c;
    c.gpus_per_node = plan.pp;
    program = build_program(m, plan);
    result = Engine(program, build_cluster(c), find_gpu("A100-SXM4-80GB"), Precision::bf16).run(&sink, TraceDetail::all);
    std::int64_t ops = 0;
    for (const StageProgram& s : program.stages) ops += s.size();
    CHECK(result.summary.events == ops);
  }
  ParallelPlan plan;
  Program program;
  MemoryTraceSink sink;
  EngineResult result;
};

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
  const int pp = 4, mbs = 16;
  const TracedStep step(find_model("gpt-1.7b"), dualpipe_plan(pp, mbs));
  const Program& prog = step.program;
  const MemoryTraceSink& sink = step.sink;
  const EngineResult& r = step.result;

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

TEST_CASE("DualPipeV runs every micro-batch down chunk 0 and back up chunk 1 once per rank", "[dualpipe]") {
  for (int pp : {2, 3, 4, 8})
    for (int m : {2 * pp, 2 * pp + 1, 4 * pp}) {
      ParallelPlan p = v_plan(pp, m);
      p.stage_layers.assign(pp, 2);
      for (int s = 0; s < pp; ++s) {
        INFO("pp " << pp << " micro-batches " << m << " rank " << s);
        const std::vector<PipelinePass> order = pipeline_order(p, s);
        std::map<std::tuple<int, int, bool>, int> seen;
        int overlapped = 0;
        for (std::size_t i = 0; i < order.size(); ++i) {
          const PipelinePass& pass = order[i];
          ++seen[{pass.micro_batch, pass.chunk, pass.forward}];
          if (pass.overlapped) {
            ++overlapped;
            REQUIRE(i + 1 < order.size());
            CHECK(pass.forward);
            CHECK_FALSE(order[i + 1].forward);
            CHECK(order[i + 1].chunk != pass.chunk);  // F0 beside B1, F1 beside B0
          }
        }
        CHECK(seen.size() == static_cast<std::size_t>(4 * m));
        for (const auto& [key, n] : seen) CHECK(n == 1);
        // Steps 4 and 5 of DualPipeV.step: 2 (m - 2 pp + r + 1) - [last rank] + (pp - r - 1) pairs.
        CHECK(overlapped == 2 * (m - 2 * pp + s + 1) - (s == pp - 1) + (pp - s - 1));
        // Each chunk's passes come in micro-batch order, and a micro-batch's chunk-1 forward (and
        // chunk-0 backward) after its chunk-0 forward (chunk-1 backward) on the turning rank.
        int last[2][2] = {{-1, -1}, {-1, -1}};
        std::map<std::tuple<int, int, bool>, std::size_t> at;
        for (std::size_t i = 0; i < order.size(); ++i) {
          const PipelinePass& pass = order[i];
          CHECK(pass.micro_batch > last[pass.forward][pass.chunk]);
          last[pass.forward][pass.chunk] = pass.micro_batch;
          at[{pass.micro_batch, pass.chunk, pass.forward}] = i;
        }
        if (s == pp - 1)
          for (int mb = 0; mb < m; ++mb) {
            CHECK(at[{mb, 0, true}] < at[{mb, 1, true}]);
            CHECK(at[{mb, 1, false}] < at[{mb, 0, false}]);
          }
      }
    }
}

TEST_CASE("DualPipeV places the V's stages, holds one copy of the weights and refuses what it cannot run",
          "[dualpipe]") {
  ModelShape m = find_model("gpt-1.7b");  // 24 layers: 8 stages of 3 on 4 ranks
  ParallelPlan p = v_plan(4, 8);
  validate_plan(p, m, 4);
  // Rank 1 runs stage 1 of 8 on the way down and stage 6 on the way back up.
  CHECK(p.chunk_first_layer(1, 0) == 3);
  CHECK(p.chunk_layers(1, 0) == 3);
  CHECK(p.chunk_first_layer(1, 1) == 18);
  CHECK(p.chunk_first_layer(3, 1) == 12);  // the last rank turns: stages 3 and 4 are its own
  CHECK(p.chunk_first_layer(0, 1) == 21);
  CHECK(p.chunk_reversed(1));
  CHECK(p.turns_locally(3));
  CHECK_FALSE(p.turns_locally(2));
  // Rank 0 holds both ends of the model.
  CHECK(p.holds_embedding(0, 0));
  CHECK(p.holds_head(0, 1));
  CHECK_FALSE(p.holds_head(3, 0));
  CHECK_FALSE(p.holds_embedding(3, 1));
  // One copy of the weights: a middle rank holds what a 1F1B stage of the same layers holds, half
  // of DualPipe's two stages.
  ParallelPlan one = p, dual = p;
  one.schedule = Schedule::one_f_one_b;
  dual.schedule = Schedule::dualpipe;
  CHECK(stage_state(m, p, 1).weights == Approx(stage_state(m, one, 1).weights));
  CHECK(stage_state(m, p, 1).weights == Approx(stage_state(m, dual, 1).weights / 2));
  double v_total = 0, one_total = 0;
  for (int s = 0; s < 4; ++s) v_total += stage_state(m, p, s).weights, one_total += stage_state(m, one, s).weights;
  CHECK(v_total <= one_total);  // a tied embedding is not copied: the head sits beside it

  ParallelPlan few = v_plan(4, 7);
  CHECK_THROWS_WITH(validate_plan(few, m, 4), Catch::Contains("7 micro-batches") && Catch::Contains("2 x parallel.pp = 8"));
  ParallelPlan thin = v_plan(4, 8);
  thin.stage_layers = {6, 11, 1, 6};
  CHECK_THROWS_WITH(validate_plan(thin, m, 4), Catch::Contains("stage 2 holds 1 layer"));
  // Rank 0 may hold no layer at all: its chunks are the embedding and the head.
  ParallelPlan ends = v_plan(4, 8);
  ends.stage_layers = {0, 8, 8, 8};
  validate_plan(ends, m, 4);
  CHECK(ends.chunk_layers(0, 0) == 0);
  CHECK(ends.chunk_first_layer(1, 0) == 0);
  CHECK(ends.chunk_first_layer(1, 1) == 20);
}

TEST_CASE("DualPipeV's step turns on the last rank without a message and idles as its order does",
          "[dualpipe][engine]") {
  // 8 stages of 3 dense layers on 4 ranks, no DP, a small vocabulary so that rank 0's embedding
  // and head leave its chunks like the others (uniform chunk passes).
  ModelShape m = find_model("gpt-1.7b");
  m.vocab = 1024;
  const int pp = 4, mbs = 16;
  const TracedStep step(m, v_plan(pp, mbs));
  const Program& prog = step.program;
  const MemoryTraceSink& sink = step.sink;
  const EngineResult& r = step.result;

  // Messages: every rank but the last sends down (pp_next) its chunk-0 activations and chunk-1
  // input gradients, m each; every rank but the first sends up (pp_prev) its chunk-1 activations
  // and chunk-0 input gradients. The last rank turns with no message; rank 0 ends the model.
  for (int s = 0; s < pp; ++s) {
    const StageProgram& st = prog.stages[s];
    int up = 0, down = 0, mirror = 0;
    for (int i = 0; i < st.size(); ++i) {
      if (st.kind[i] == OpKind::pp_send) (st.group[i] == Group::pp_next ? down : up)++;
      if (st.kind[i] == OpKind::mirror_all_reduce) ++mirror;
    }
    INFO("rank " << s);
    CHECK(mirror == 0);
    CHECK(down == (s == pp - 1 ? 0 : 2 * mbs));
    CHECK(up == (s == 0 ? 0 : 2 * mbs));
  }

  // The bubble: the step less a rank's passes and its optimizer step. Run in this order with
  // uniform chunk passes F and B (W inside B, no overlap gain), the V idles 2 (pp - 1) B - F per
  // rank (an event-by-event walk of the order); the DualPipe table's (PP/2 - 1)(F&B + B - 3W)
  // for PP = 2 pp stages, (pp - 1)(F + 2B) here, bounds it; 1F1B idles (pp - 1)(F + B) in rank
  // passes, twice the chunks'.
  const double f = busy_s(sink, 1, true) / mbs / 2, b = busy_s(sink, 1, false) / mbs / 2;  // chunk passes
  double optimizer_ns = 0;
  for (const EventRecord& e : sink.events_)
    if (e.rank == 0 && e.stream == static_cast<int>(Stream::compute) && static_cast<Phase>(e.phase) == Phase::optimizer)
      optimizer_ns += static_cast<double>(e.end_ns - e.start_ns);
  const double work = busy_s(sink, 0, true) + busy_s(sink, 0, false) + optimizer_ns * 1e-9;
  const double bubble = r.summary.step_time_s - work;
  CHECK(bubble == Approx(2 * (pp - 1) * b - f).epsilon(0.05));
  CHECK(bubble < (pp - 1) * (f + 2 * b));
  CHECK(bubble < 0.8 * (pp - 1) * (2 * f + 2 * b));
}
TEST_CASE("DualPipe and DualPipeV hold the DualPipe table's PP + 1 chunks of activations per device", "[dualpipe]") {
  // deepseek-ai/DualPipe README, "Activation Per Device": PP + 1 for both, PP counting the model's
  // pipeline stages (a chunk pass keeps one stage's activations): pp for DualPipe on pp ranks,
  // 2 pp for DualPipeV on pp ranks. The most forward chunk passes waiting for their backward, per rank.
  for (const int pp : {4, 8}) {
    const int m = 2 * pp + 4;
    for (const auto& [plan, stages] : {std::pair(dualpipe_plan(pp, m), pp), std::pair(v_plan(pp, m), 2 * pp)}) {
      for (int s = 0; s < pp; ++s) {
        int in_flight = 0, most = 0;
        for (const PipelinePass& pass : pipeline_order(plan, s)) most = std::max(most, in_flight += pass.forward ? 1 : -1);
        INFO(schedule_name(plan.schedule) << ", pp " << pp << ", rank " << s);
        CHECK(most == stages + 1);
      }
    }
  }
}
