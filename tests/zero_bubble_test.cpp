// The zero-bubble ZB-H1 schedule (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", Sec. 3.1):
// its passes per stage (F, B and W of every micro-batch once, at the paper's offsets), the
// backward pass split into its input- and weight-gradient GEMMs, the step's bubble against the
// paper's (p - 1)(F + B - W) and 1F1B's (p - 1)(F + B + W), the peak memory against 1F1B's and
// fit's walk of the same passes, and the layouts it refuses.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <utility>

#include "sim/base/error.hpp"
#include "sim/base/units.hpp"
#include "sim/engine/engine.hpp"
#include "sim/trace/sink.hpp"
#include "tests/program_helpers.hpp"
#include "topologies/builders.hpp"
#include "workloads/memory_fit.hpp"
#include "workloads/pipeline_schedule.hpp"
#include "workloads/program.hpp"

using namespace dtsim;
using dtsim::test::plan_of;

namespace {

ParallelPlan zb_plan(int pp, int micro_batches, Schedule schedule = Schedule::zbh1) {
  ParallelPlan p = plan_of(1, pp, 1, 1, micro_batches, Recompute::none);
  p.schedule = schedule;
  p.attention = Attention::flash;
  p.dropout = false;
  return p;
}

// Three dense layers per stage and a small vocabulary, so that the end stages' embedding and head
// leave the stages' passes nearly alike.
ModelShape uniform_model(int pp) {
  ModelShape m = find_model("gpt-1.7b");
  m.layers = 3 * pp;
  m.vocab = 1024;
  return m;
}

// A step of `m` under `p` on p.pp A100s of one node, every event traced into `sink`.
EngineResult simulate(const ModelShape& m, ParallelPlan p, Program& program, MemoryTraceSink* sink = nullptr) {
  validate_plan(p, m, p.pp);
  ClusterConfig c;
  c.gpus_per_node = p.pp;
  program = build_program(m, p);
  return Engine(program, build_cluster(c), find_gpu("A100-SXM4-80GB"), Precision::bf16)
      .run(sink, sink ? TraceDetail::all : TraceDetail::summary);
}

// Seconds of `rank`'s compute-stream kernels (as they ran, slowed by the transfers beside them)
// whose op `keep` takes: the k-th compute event of a rank is the k-th op of its compute stream.
template <class Keep>
double busy_s(const MemoryTraceSink& sink, const StageProgram& stage, int rank, Keep keep) {
  std::vector<const EventRecord*> events;
  for (const EventRecord& e : sink.events_)
    if (e.rank == rank && e.stream == static_cast<int>(Stream::compute)) events.push_back(&e);
  std::sort(events.begin(), events.end(), [](const EventRecord* a, const EventRecord* b) { return a->start_ns < b->start_ns; });
  const std::vector<std::int32_t>& ops = stage.stream_ops[static_cast<int>(Stream::compute)];
  REQUIRE(events.size() == ops.size());
  double ns = 0;
  for (std::size_t k = 0; k < ops.size(); ++k)
    if (keep(stage, ops[k])) ns += static_cast<double>(events[k]->end_ns - events[k]->start_ns);
  return ns * 1e-9;
}

}  // namespace

TEST_CASE("ZB-H1 runs each micro-batch's F, B and W once per stage at the paper's offsets", "[zero-bubble]") {
  for (const auto& [pp, m] : std::vector<std::pair<int, int>>{{4, 8}, {4, 2}, {6, 13}}) {
    const ParallelPlan p = zb_plan(pp, m);
    for (int stage = 0; stage < pp; ++stage) {
      INFO("pp " << pp << ", " << m << " micro-batches, stage " << stage);
      const std::vector<PipelinePass> order = pipeline_order(p, stage);
      REQUIRE(order.size() == 3 * static_cast<std::size_t>(m));
      std::map<std::pair<int, int>, int> position;  // (kind 0 F / 1 B / 2 W, micro-batch) -> index
      int in_flight = 0, most_in_flight = 0;
      for (std::size_t i = 0; i < order.size(); ++i) {
        const PipelinePass& pass = order[i];
        const int kind = pass.forward ? 0 : pass.weight ? 2 : 1;
        CHECK(position.emplace(std::pair(kind, pass.micro_batch), static_cast<int>(i)).second);
        in_flight += kind == 0 ? 1 : kind == 1 ? -1 : 0;
        most_in_flight = std::max(most_in_flight, in_flight);
      }
      for (int mb = 0; mb < m; ++mb) {  // each micro-batch's F, then its B, then its W
        CHECK(position.at({0, mb}) < position.at({1, mb}));
        CHECK(position.at({1, mb}) < position.at({2, mb}));
      }
      // 1F1B's warm-up: pp - 1 - stage forwards before the first B, so at most pp - stage
      // micro-batches wait for their B (stage 0: pp, 1F1B's peak).
      CHECK(position.at({1, 0}) == std::min(pp - 1 - stage, m - 1) + 1);
      CHECK(most_in_flight == std::min(pp - stage, m));
      // The W passes trail B by `stage` steps: the last stage's first W comes after its B of
      // micro-batch min(pp - 1, m - 1); stage 0 runs each W right after its B.
      if (stage == 0)
        for (int mb = 0; mb < m; ++mb) CHECK(position.at({2, mb}) == position.at({1, mb}) + 1);
    }
  }
}

TEST_CASE("ZB-H1 splits each backward pass into its input gradients and a later weight-gradient pass",
          "[zero-bubble]") {
  const int pp = 4, m = 8;
  const ModelShape model = uniform_model(pp);
  Program zb, plain;
  simulate(model, zb_plan(pp, m), zb);
  simulate(model, zb_plan(pp, m, Schedule::one_f_one_b), plain);
  for (int stage = 0; stage < pp; ++stage) {
    INFO("stage " << stage);
    const StageProgram& s = zb.stages[stage];
    const StageProgram& o = plain.stages[stage];
    // The same work: every backward GEMM with a weight is there as its two halves (the weight
    // GEMMs' FLOPs, the other GEMMs' FLOPs), and nothing else is added or lost.
    double zb_flops = 0, plain_flops = 0, weight_flops = 0, input_flops = 0;
    for (int i = 0; i < s.size(); ++i) {
      zb_flops += s.flops[i];
      if (s.gemm_part[i] == GemmPart::weight_grad) weight_flops += s.flops[i];
      if (s.gemm_part[i] == GemmPart::input_grad) input_flops += s.flops[i];
    }
    for (int i = 0; i < o.size(); ++i) plain_flops += o.flops[i];
    CHECK(zb_flops == Approx(plain_flops).epsilon(1e-12));
    CHECK(weight_flops > 0);
    CHECK(weight_flops == Approx(input_flops).epsilon(1e-12));
    // Every micro-batch's weight GEMMs come after all of its input-gradient GEMMs on the stream.
    std::map<int, int> last_input, first_weight;
    for (int op : s.stream_ops[static_cast<int>(Stream::compute)]) {
      if (s.gemm_part[op] == GemmPart::input_grad) last_input[s.micro_batch[op]] = op;
      if (s.gemm_part[op] == GemmPart::weight_grad) first_weight.try_emplace(s.micro_batch[op], op);
    }
    REQUIRE(first_weight.size() == static_cast<std::size_t>(m));
    for (const auto& [mb, op] : first_weight) CHECK(last_input.at(mb) < op);
  }
}

TEST_CASE("ZB-H1's step idles (p - 1)(F + B - W) where 1F1B idles (p - 1)(F + B + W), at 1F1B's peak memory",
          "[zero-bubble][engine]") {
  const int pp = 4, m = 16;
  const ModelShape model = uniform_model(pp);
  Program zb, plain;
  MemoryTraceSink zb_sink, plain_sink;
  const EngineResult rz = simulate(model, zb_plan(pp, m), zb, &zb_sink);
  const EngineResult r1 = simulate(model, zb_plan(pp, m, Schedule::one_f_one_b), plain, &plain_sink);

  // The last stage's F, B and W per micro-batch and its whole work, from its kernels as they ran:
  // with the head it is the slowest stage, which paces the steady state, so the step is its work
  // and its bubble.
  const int last = pp - 1;
  const auto all = [](const StageProgram&, int) { return true; };
  const auto pass_s = [&](auto&& keep) { return busy_s(zb_sink, zb.stages[last], last, keep) / m; };
  const double f = pass_s([](const StageProgram& s, int op) { return s.phase[op] == Phase::forward; });
  const double w = pass_s([](const StageProgram& s, int op) { return s.gemm_part[op] == GemmPart::weight_grad; });
  const double b = pass_s([](const StageProgram& s, int op) {
    return s.phase[op] == Phase::backward && s.gemm_part[op] != GemmPart::weight_grad;
  });
  REQUIRE(w > 0.2 * b);
  const double zb_bubble = rz.summary.step_time_s - busy_s(zb_sink, zb.stages[last], last, all);
  const double plain_bubble = r1.summary.step_time_s - busy_s(plain_sink, plain.stages[last], last, all);
  // The formulas leave out the messages between stages (about 1 ms of either bubble here).
  CHECK(plain_bubble == Approx((pp - 1) * (f + b + w)).epsilon(0.05));
  CHECK(zb_bubble == Approx((pp - 1) * (f + b - w)).epsilon(0.08));
  CHECK(plain_bubble - zb_bubble == Approx(2 * (pp - 1) * w).epsilon(0.05));
  CHECK(rz.summary.step_time_s < r1.summary.step_time_s);

  // Stage 0 holds pp micro-batches' activations at its peak under both; the later stages hold
  // fewer whole ones and the weight GEMMs' inputs of the rest, never more than 1F1B's peak.
  CHECK(rz.summary.peak_memory_gib == Approx(r1.summary.peak_memory_gib).epsilon(0.01));
  // fit walks the same passes (the W passes freeing what the B passes keep for them).
  ParallelPlan p = zb_plan(pp, m);
  const double fit = training_memory(model, training_setup(p, model.seq_len), p.tp, p.pp, p.dp).total() - kRuntimeOverheadBytes;
  CHECK(fit / kGiB == Approx(rz.summary.peak_memory_gib).epsilon(0.01));
}

TEST_CASE("ZB-H1 refuses what it does not run", "[zero-bubble]") {
  ModelShape m = uniform_model(4);
  ParallelPlan grouped = zb_plan(4, 8);
  grouped.microbatch_group = 4;
  CHECK_THROWS_WITH(validate_plan(grouped, m, 4), Catch::Contains("microbatch_group"));
  ParallelPlan virtual_stages = zb_plan(4, 8);
  virtual_stages.virtual_stages = 2;
  CHECK_THROWS_WITH(validate_plan(virtual_stages, m, 4), Catch::Contains("only the interleaved schedule"));
  CHECK(parse_schedule("zbh1", "parallel.schedule") == Schedule::zbh1);
  CHECK(schedule_name(Schedule::zbh1) == "zbh1");
  CHECK_THROWS_WITH(parse_schedule("zb-h2", "parallel.schedule"), Catch::Contains("zbh1"));
}
