// model.moe_layer_step: MoE layers interleaved with dense ones (Llama 4 Maverick: every second
// layer). The parameter count, the program's routers and expert state, and the scenario check
// follow the same layers.
#include <catch2/catch.hpp>

#include <set>

#include "tests/cli_scratch.hpp"
#include "tests/program_helpers.hpp"
#include "workloads/layer_params.hpp"
#include "workloads/program.hpp"

using namespace dtsim;

namespace {

// One dense layer, then MoE every second layer: layers 2 and 4 of 0..5 are MoE.
ModelShape alternating() {
  ModelShape m;
  m.layers = 6;
  m.hidden = 256;
  m.heads = 4;
  m.ffn = FfnKind::swiglu;
  m.ffn_hidden = 512;
  m.vocab = 1000;
  m.seq_len = 128;
  m.tied_embeddings = false;
  m.bias = false;
  m.experts = 8;
  m.active_experts = 2;
  m.shared_experts = 1;
  m.expert_ffn_hidden = 128;
  m.dense_layers = 1;
  m.moe_layer_step = 2;
  return m;
}

}  // namespace

TEST_CASE("every moe_layer_step-th layer after the dense ones is an MoE layer", "[moe][moe_layer_step]") {
  const ModelShape m = alternating();
  std::set<int> moe;
  for (int l = 0; l < m.layers; ++l)
    if (m.is_moe_layer(l)) moe.insert(l);
  CHECK(moe == std::set<int>{2, 4});
  CHECK(m.moe_layers() == 2);
  CHECK(m.transformer_params() == Approx(4 * m.params_per_layer() + 2 * m.moe_layer_params()));
  CHECK(m.total_params() - m.active_params() ==
        Approx(2 * (m.moe_layer_params() - m.moe_layer_active_params()) + (m.vocab - 1.0) * m.hidden));
}

TEST_CASE("only the MoE layers route tokens and hold experts", "[moe][moe_layer_step]") {
  const ModelShape m = alternating();
  ParallelPlan p = test::plan_of(1, 1, 4, 1, 4, Recompute::none, 0);
  p.ep = 2;
  validate_plan(p, m, 4);
  const Program prog = build_program(m, p);
  const StageProgram& s = prog.stages[0];
  std::set<int> routed;
  for (int i = 0; i < s.size(); ++i)
    if (s.kind[i] == OpKind::router) routed.insert(s.layer[i]);
  CHECK(routed == std::set<int>{2, 4});
  const double experts = 2 * m.experts * m.expert_params();
  CHECK(s.static_bytes[static_cast<int>(MemCategory::weights)] == Approx(2 * (m.total_params() - experts + experts / 2)));
  for (int l = 0; l < m.layers; ++l) {
    INFO("layer " << l);
    CHECK((layer_params(m, p, l).experts > 0) == m.is_moe_layer(l));
  }
}

TEST_CASE("model.moe_layer_step is checked with the key and what is valid", "[moe][moe_layer_step][cli]") {
  const std::string moe = "run " + std::string(DTSIM_SOURCE_DIR) +
                          "/scenarios/tests/tiny-pipeline.ini --model.experts=8 --model.active_experts=2 "
                          "--model.expert_ffn_hidden=512";
  const test::Outcome too_far = test::run_dtsim(moe + " --model.moe_layer_step=5");
  CHECK(too_far.status == 2);
  CHECK_THAT(too_far.err, Catch::Contains("model.moe_layer_step = 5: must be at most model.layers - "
                                          "model.dense_layers = 4"));
  CHECK_THAT(test::run_dtsim(moe + " --model.moe_layer_step=0").err, Catch::Contains("model.moe_layer_step = 0: must be >= 1"));
  const test::Outcome ok = test::run_dtsim(moe + " --model.moe_layer_step=2");
  CHECK(ok.status == 0);
  CHECK_THAT(ok.out, Catch::Contains("0 dense layers first, then MoE every 2 layers"));
}
