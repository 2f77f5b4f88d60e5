// Multi-token prediction (DeepSeek-V3 report Sec. 2.2): a module's parameters against the
// checkpoint's 685B, its ops and static memory on the stage that holds the head (1F1B and
// DualPipe), fit's memory against the simulated peak, and the key refused.
#include <catch2/catch.hpp>
#include <string>

#include "sim/base/units.hpp"
#include "sim/scenario/run.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/memory_fit.hpp"
#include "workloads/program.hpp"
#include "tests/scenario_helpers.hpp"

using namespace dtsim;

namespace {

// DeepSeek-R1's shapes on 8 layers of 1024 tokens (one dense), with `mtp` modules.
Scenario deepseek(int mtp, const std::string& parallel, int gpus = 8) {
  const std::string text =
      "[model]\nname = deepseek-r1\nlayers = 8\ndense_layers = 1\nseq_len = 1024\nmtp_layers = " + std::to_string(mtp) +
      "\n[training]\nframework = megatron-core\nglobal_batch = 16\nmicro_batch = 1\nrecompute = selective\n"
      "[parallel]\ntp = 1\nzero_stage = 1\n" + parallel +
      "[cluster]\ngpu = H100-SXM5-80GB\nnodes = 1\ngpus_per_node = " + std::to_string(gpus) +
      "\n[output]\ntrace_detail = summary\n";
  const auto vm = test::overrides();
  Scenario sc = load_scenario_text(text, "mtp", vm);
  validate_scenario(sc, gpus);
  return sc;
}

int count(const StageProgram& s, OpKind kind, Phase phase, int layer) {
  int n = 0;
  for (int i = 0; i < s.size(); ++i) n += s.kind[i] == kind && s.phase[i] == phase && s.layer[i] == layer;
  return n;
}

}  // namespace

TEST_CASE("DeepSeek-V3's MTP module and its shared embedding and head are the checkpoint's 14B", "[mtp]") {
  // HF deepseek-ai/DeepSeek-V3: 685B = 671B of the main model + 14B of the MTP module, whose
  // checkpoint stores copies of the embedding and the output head it shares.
  const ModelShape v3 = find_model("deepseek-v3");
  CHECK(v3.mtp_layers == 1);
  CHECK(find_model("deepseek-r1").mtp_layers == 0);
  const double module = v3.mtp_module_params();
  // Its block is layer 60's (MoE), plus two input norms, a final norm and the 2h x h projection.
  CHECK(module == Approx(v3.moe_layer_params() + 2.0 * 7168 * 7168 + 3 * 2 * 7168).epsilon(1e-12));
  CHECK((module + v3.embedding_params() + v3.head_params()) / 1e9 == Approx(14).epsilon(0.05));
  CHECK((v3.total_params() + module + v3.embedding_params() + v3.head_params()) / 1e9 == Approx(685).epsilon(0.01));
}

TEST_CASE("an MTP module runs after the head on the last stage, with its parameters there", "[mtp]") {
  Scenario with = deepseek(1, "pp = 2\ndp = 4\nep = 4\n");
  Scenario without = deepseek(0, "pp = 2\ndp = 4\nep = 4\n");
  const Program prog = build_program(with.model, with.plan), base = build_program(without.model, without.plan);
  const int mtp = 8, micro_batches = 4;  // the module's layer tag; 16 sequences over 4 DP ranks
  const StageProgram& last = prog.stages[1];
  CHECK(count(last, OpKind::mtp_proj, Phase::forward, mtp) == micro_batches);
  CHECK(count(last, OpKind::mtp_proj, Phase::backward, mtp) == micro_batches);
  CHECK(count(last, OpKind::lm_head, Phase::forward, mtp) == micro_batches);  // the shared head again
  CHECK(count(last, OpKind::lm_head, Phase::forward, -1) == micro_batches);
  CHECK(count(last, OpKind::expert_fc1, Phase::forward, mtp) == micro_batches);  // an MoE block
  CHECK(count(prog.stages[0], OpKind::mtp_proj, Phase::forward, mtp) == 0);
  for (int i = 0; i < last.size(); ++i)
    if (last.kind[i] == OpKind::mtp_proj && last.phase[i] == Phase::forward)
      CHECK(last.flops[i] == 2.0 * 1024 * 7168 * 2 * 7168);
  // Static memory: bf16 weights of the module's replicated part and its EP shard of 256 experts.
  const ModelShape& m = with.model;
  const double routed = 256 * m.expert_params();
  const double replicated = m.mtp_module_params() - routed;
  const auto weights = [](const Program& p, int s) { return p.stages[s].static_bytes[static_cast<int>(MemCategory::weights)]; };
  CHECK(weights(prog, 1) - weights(base, 1) == Approx(2 * (replicated + routed / 4)).epsilon(1e-9));
  CHECK(weights(prog, 0) == weights(base, 0));
  CHECK(prog.model_flops_per_step > base.model_flops_per_step);
}

TEST_CASE("fit's memory with an MTP module is the simulated peak", "[mtp][fit]") {
  for (const std::string parallel : {"pp = 2\ndp = 4\nep = 4\n", "pp = 4\ndp = 2\nep = 2\nschedule = dualpipe\n"}) {
    INFO(parallel);
    Scenario sc = deepseek(1, parallel);
    const double simulated = run_scenario(sc, "", 1, true).summary.peak_memory_gib;
    const TrainingSetup s = training_setup(sc.plan, sc.model.seq_len);
    const double fit = (training_memory(sc.model, s, 1, sc.plan.pp, sc.plan.dp).total() - kRuntimeOverheadBytes) / kGiB;
    CHECK(fit == Approx(simulated).epsilon(0.01));
  }
}

TEST_CASE("under DualPipe the MTP module runs where the head is", "[mtp][dualpipe]") {
  Scenario sc = deepseek(1, "pp = 4\ndp = 2\nep = 2\nschedule = dualpipe\n");
  const Program prog = build_program(sc.model, sc.plan);
  for (int s = 0; s < 4; ++s) {
    const bool head = sc.plan.holds_head(s, 0) || sc.plan.holds_head(s, 1);
    CHECK((count(prog.stages[s], OpKind::mtp_proj, Phase::forward, 8) > 0) == head);
    CHECK((count(prog.stages[s], OpKind::lm_head, Phase::forward, -1) > 0) == head);
  }
}

TEST_CASE("model.mtp_layers is refused outside 0 ... layers", "[mtp]") {
  CHECK_THROWS_WITH(deepseek(-1, "pp = 2\ndp = 4\nep = 4\n"), Catch::Contains("model.mtp_layers = -1: must be >= 0"));
  CHECK_THROWS_WITH(deepseek(9, "pp = 2\ndp = 4\nep = 4\n"), Catch::Contains("model.mtp_layers = 9: must be <= 8"));
}
