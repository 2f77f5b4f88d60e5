// The step's program against closed forms: Megatron's FLOP count, mixed-precision Adam memory
// with and without ZeRO-1, and Korthikanti et al.'s activation memory per layer.
#include <catch2/catch.hpp>

#include "tests/program_helpers.hpp"
#include "workloads/program.hpp"

using namespace dtsim;
using dtsim::test::layer_activation_bytes;
using dtsim::test::plan_of;

namespace {

double executed_gemm_flops(const Program& prog) {
  double f = 0;
  for (const StageProgram& s : prog.stages)
    for (int i = 0; i < s.size(); ++i)
      if (s.gemm_m[i] > 0) f += s.flops[i] * prog.plan.tp * prog.plan.dp;
  return f;
}

}  // namespace

TEST_CASE("a step's FLOPs match Megatron's 96 B s l h^2 (1 + s/6h + V/16lh) with full recompute", "[program]") {
  // GPT-3 175B shape, as in Narayanan et al. 2021 Eq. 3.
  const ModelShape& m = find_model("gpt3-175b");
  ParallelPlan p = plan_of(8, 8, 2, 1, 64, Recompute::full);
  validate_plan(p, m, 128);
  const Program prog = build_program(m, p);
  const double B = p.global_batch, s = m.seq_len, l = m.layers, h = m.hidden, V = m.vocab;
  const double megatron = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  CHECK(executed_gemm_flops(prog) == Approx(megatron).epsilon(0.001));
  // Model FLOPs (no recompute): 72 B s l h^2 (1 + s/6h + V/12lh).
  CHECK(prog.model_flops_per_step == Approx(72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))).epsilon(0.001));
}

TEST_CASE("weights and gradients and Adam state take 16 bytes per param and ZeRO-1 4 + 12/N_d", "[program][memory]") {
  const ModelShape& m = find_model("gpt-1.7b");
  const double psi = m.total_params();
  for (int zero : {0, 1}) {
    ParallelPlan p = plan_of(1, 1, 8, 4, 32, Recompute::none, zero);
    validate_plan(p, m, 8);
    const Program prog = build_program(m, p);
    const auto& st = prog.stages[0].static_bytes;
    const double total = st[0] + st[1] + st[2];
    INFO("zero_stage " << zero);
    CHECK(total == Approx(zero == 0 ? 16 * psi : 4 * psi + 12 * psi / 8));
  }
}

TEST_CASE("activation memory per layer follows Korthikanti et al. 2022", "[program][memory]") {
  const ModelShape& m = find_model("gpt-22b");
  const double s = m.seq_len, h = m.hidden, a = m.heads;
  for (int tp : {1, 2, 8}) {
    for (int b : {1, 4}) {
      ParallelPlan p = plan_of(tp, 1, 1, b, b, Recompute::none);
      validate_plan(p, m, tp);
      const Program prog = build_program(m, p);
      // No recompute: s b h (10 + 24/t + 5 a s / (h t)); for t = 1 this is s b h (34 + 5 a s / h).
      const double expected = s * b * h * (10 + 24.0 / tp + 5 * a * s / (h * tp));
      INFO("tp " << tp << " micro-batch " << b);
      CHECK(layer_activation_bytes(prog, 3) == Approx(expected));
    }
  }
  ParallelPlan p = plan_of(8, 1, 1, 1, 1, Recompute::full);
  validate_plan(p, m, 8);
  // Full recompute keeps the layer input only: 2 s b h.
  CHECK(layer_activation_bytes(build_program(m, p), 3) == Approx(2 * s * h));
}

TEST_CASE("1F1B keeps at most pp - stage micro-batches in flight", "[program]") {
  const ModelShape& m = find_model("gpt-1.7b");
  ParallelPlan p = plan_of(1, 4, 1, 1, 16, Recompute::none);
  validate_plan(p, m, 4);
  const Program prog = build_program(m, p);
  for (int stage = 0; stage < 4; ++stage) {
    const StageProgram& st = prog.stages[stage];
    int in_flight = 0, most = 0, last_mb = -1;
    Phase last_phase = Phase::optimizer;
    for (int op : st.stream_ops[0]) {
      if (st.micro_batch[op] == last_mb && st.phase[op] == last_phase) continue;
      last_mb = st.micro_batch[op];
      last_phase = st.phase[op];
      if (st.phase[op] == Phase::forward) most = std::max(most, ++in_flight);
      if (st.phase[op] == Phase::backward) --in_flight;
    }
    INFO("stage " << stage);
    CHECK(most == 4 - stage);
  }
}

TEST_CASE("BLOOM's uneven stages: the embedding and head count as one layer each", "[program]") {
  const ModelShape& m = find_model("bloom-176b");
  ParallelPlan p = plan_of(4, 12, 8, 2, 2048, Recompute::full, 1);
  validate_plan(p, m, 384);
  REQUIRE(p.stage_layers.size() == 12);
  CHECK(p.stage_layers.front() == 5);
  CHECK(p.stage_layers.back() == 5);
  CHECK(p.stage_layers[6] == 6);
}
