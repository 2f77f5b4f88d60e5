// Selective recomputation of Megatron-Core's --recompute-modules (layernorm, mla_up_proj,
// moe_act): what each module's consumers stop keeping, the reruns before the layer's backward
// pass, fit's memory against the simulated peak (with DualPipe), and the keys refused. Full
// recomputation of the first N layers of each stage (--recompute-num-layers, block method).
#include <catch2/catch.hpp>
#include <string>

#include "sim/base/units.hpp"
#include "sim/scenario/run.hpp"
#include "sim/scenario/scenario.hpp"
#include "tests/program_helpers.hpp"
#include "workloads/layer_ops.hpp"
#include "workloads/memory_fit.hpp"
#include "tests/scenario_helpers.hpp"

using namespace dtsim;
using dtsim::test::plan_of;

namespace {

double kept(const std::vector<OpSpec>& ops) {
  double sum = 0;
  for (const OpSpec& op : ops) sum += op.saved;
  return sum;
}

// DeepSeek-R1's shapes (MLA, 256 experts) on 2 layers, the second an MoE layer.
ModelShape small_deepseek() {
  ModelShape m = find_model("deepseek-r1");
  m.layers = 2;
  m.dense_layers = 1;
  m.seq_len = 1024;
  return m;
}

}  // namespace

TEST_CASE("each recomputed module's consumers stop keeping its output, and the module reruns", "[recompute]") {
  const ModelShape m = small_deepseek();
  ParallelPlan none = plan_of(1, 1, 8, 1, 8, Recompute::none);
  none.ep = 8;
  none.attention = Attention::flash;
  ParallelPlan sel = none;
  sel.recompute = Recompute::selective;
  const double T = 1024, e = 2, h = m.hidden;
  const double heads = m.heads, qk = m.nope_head_dim + m.rope_head_dim, v = m.v_head_dim;
  const double copies = T * m.active_experts, f = m.expert_ffn_hidden;
  const LayerOps full_ops(m, none);
  for (const auto& [modules, layer, dropped] : std::vector<std::tuple<unsigned, int, double>>{
           // The norms' outputs: the MLA down-projection's input, and the dense MLP's (layer 0) or the router's.
           {module_bit(RecomputeModule::layernorm), 0, 2 * e * T * h},
           {module_bit(RecomputeModule::layernorm), 1, 2 * e * T * h},
           // MLA's up-projected Q, K and V, which the flash attention would keep.
           {module_bit(RecomputeModule::mla_up_proj), 1, e * T * heads * (2 * qk + v)},
           // The routed experts' activation output, the input of their second GEMM.
           {module_bit(RecomputeModule::moe_act), 1, e * copies * f},
       }) {
    sel.recompute_modules = modules;
    const LayerOps ops(m, sel);
    INFO(recompute_modules_name(modules) << " layer " << layer);
    CHECK(kept(full_ops.layer_forward(layer)) - kept(ops.layer_forward(layer)) == Approx(dropped));
    // The reruns give it back for the backward pass: what they keep is what was dropped.
    const std::vector<OpSpec> reruns = ops.module_reruns(ops.layer_forward(layer, true));
    REQUIRE_FALSE(reruns.empty());
    CHECK(kept(reruns) == Approx(dropped));
  }
  // moe_act reruns nothing on a dense layer; core_attn alone reruns no module.
  sel.recompute_modules = module_bit(RecomputeModule::moe_act);
  CHECK(LayerOps(m, sel).module_reruns(LayerOps(m, sel).layer_forward(0, true)).empty());
  sel.recompute_modules = module_bit(RecomputeModule::core_attn);
  CHECK(LayerOps(m, sel).module_reruns(LayerOps(m, sel).layer_forward(1, true)).empty());

  // In the program the reruns come first in each layer's backward pass, as recompute ops.
  sel.recompute_modules = module_bit(RecomputeModule::layernorm) | module_bit(RecomputeModule::mla_up_proj);
  validate_plan(sel, m, 8);
  const Program prog = build_program(m, sel);
  const StageProgram& st = prog.stages[0];
  int reruns = 0;
  for (int i = 0; i < st.size(); ++i)
    if (st.phase[i] == Phase::recompute) {
      ++reruns;
      CHECK((st.kind[i] == OpKind::layernorm || st.kind[i] == OpKind::mla_q_up || st.kind[i] == OpKind::mla_kv_up));
    }
  CHECK(reruns == 2 * 4);  // 2 layers x (two norms, two up-projections), one micro-batch
}

TEST_CASE("fit's memory with recomputed modules under DualPipe is the simulated peak", "[recompute][fit][dualpipe]") {
  const std::string text =
      "[model]\nname = deepseek-r1\nlayers = 8\ndense_layers = 1\nseq_len = 1024\n"
      "[training]\nframework = megatron-core\nglobal_batch = 16\nmicro_batch = 1\nrecompute = selective\n"
      "recompute_modules = layernorm,mla_up_proj,moe_act\n"
      "[parallel]\ntp = 1\npp = 4\ndp = 2\nep = 2\nzero_stage = 1\nschedule = dualpipe\n"
      "[cluster]\ngpu = H100-SXM5-80GB\nnodes = 1\ngpus_per_node = 8\n[output]\ntrace_detail = summary\n";
  const auto vm = test::overrides();
  Scenario sc = load_scenario_text(text, "dualpipe", vm);
  const double simulated = run_scenario(sc, "", 1, true).summary.peak_memory_gib;
  const TrainingSetup s = training_setup(sc.plan, sc.model.seq_len);
  CHECK(s.recompute_modules == sc.plan.recompute_modules);
  CHECK(s.schedule == Schedule::dualpipe);
  const double fit = (training_memory(sc.model, s, 1, 4, 2).total() - kRuntimeOverheadBytes) / kGiB;
  CHECK(fit == Approx(simulated).epsilon(0.01));
}

TEST_CASE("recompute modules are refused where they cannot apply", "[recompute]") {
  const auto refused = [](const ModelShape& m, Recompute r, const char* modules, const char* says) {
    ParallelPlan p = plan_of(1, 1, 1, 1, 1, r);
    p.recompute_modules = parse_recompute_modules(modules, "training.recompute_modules");
    CHECK_THROWS_WITH(validate_plan(p, m, 1), Catch::Contains("training.recompute_modules") && Catch::Contains(says));
  };
  refused(small_deepseek(), Recompute::full, "layernorm", "set training.recompute = selective");
  refused(find_model("llama3-8b"), Recompute::selective, "mla_up_proj", "multi-head latent attention");
  refused(find_model("llama3-8b"), Recompute::selective, "layernorm,moe_act", "has no");
  CHECK_THROWS_WITH(parse_recompute_modules("layernorm,mlp", "training.recompute_modules"),
                    Catch::Contains("'mlp'") && Catch::Contains("valid: core_attn, layernorm, mla_up_proj, moe_act"));
  CHECK(recompute_modules_name(parse_recompute_modules("moe_act,layernorm", "k")) == "layernorm,moe_act");
}

TEST_CASE("full recomputation of the first N layers of each stage reruns those layers only", "[recompute][fit]") {
  // Llama 3 8B on 8 layers over two stages: recompute_num_layers = 2 reruns layers 0-1 and 4-5,
  // the others keep their activations (Megatron-Core's --recompute-method block).
  const std::string text =
      "[model]\nname = llama3-8b\nlayers = 8\nseq_len = 2048\n"
      "[training]\nframework = megatron-core\nglobal_batch = 16\nmicro_batch = 1\nrecompute = full\n"
      "[parallel]\ntp = 1\npp = 2\ndp = 4\nzero_stage = 1\n"
      "[cluster]\ngpu = H100-SXM5-80GB\nnodes = 1\ngpus_per_node = 8\n[output]\ntrace_detail = summary\n";
  const auto run = [&](const char* layers) {
    Scenario sc = load_scenario_text(text, "block", test::overrides({std::string("--training.recompute_num_layers=") + layers}));
    return std::pair(sc, run_scenario(sc, "", 1, true));
  };
  const auto [all_sc, all] = run("0");
  const auto [half_sc, half] = run("2");
  const auto [four_sc, four] = run("4");  // every layer of a 4-layer stage
  for (int l = 0; l < 8; ++l) CHECK((half_sc.plan.layer_recompute(l) == Recompute::full) == (l % 4 < 2));
  // The recomputed FLOPs: half of full recomputation's; every layer of a stage: all of it.
  const auto recomputed = [](const EngineResult& r) {
    return (r.summary.hw_tflops_per_gpu - r.summary.model_tflops_per_gpu) * r.summary.step_time_s;
  };
  CHECK(recomputed(half) == Approx(0.5 * recomputed(all)).epsilon(1e-6));
  CHECK(recomputed(four) == Approx(recomputed(all)).epsilon(1e-6));
  CHECK(all.summary.step_time_s > half.summary.step_time_s);
  CHECK(all.summary.peak_memory_gib < half.summary.peak_memory_gib);
  // fit keeps what the same layers keep.
  const TrainingSetup s = training_setup(half_sc.plan, half_sc.model.seq_len);
  CHECK(s.recompute_num_layers == 2);
  const double fit = (training_memory(half_sc.model, s, 1, 2, 4).total() - kRuntimeOverheadBytes) / kGiB;
  CHECK(fit == Approx(half.summary.peak_memory_gib).epsilon(0.01));
  ParallelPlan selective = half_sc.plan;
  selective.recompute = Recompute::selective;
  CHECK_THROWS_WITH(validate_plan(selective, half_sc.model, 8), Catch::Contains("set training.recompute = full"));
}

TEST_CASE("torchtitan's op-level checkpointing reruns the layer but its attention, half of the matmul FLOPs",
          "[recompute][fit]") {
  // Llama 3 8B on 4 layers, eager torchtitan: the layer keeps its input, the attention's output and
  // half of the matmul outputs; before its backward it reruns the rest of its forward. FSDP (the
  // profile's ZeRO-3): fit counts the gathered layers as the run holds them, none at the head.
  const std::string text =
      "[model]\nname = llama3-8b\nlayers = 4\nseq_len = 4096\n"
      "[training]\nframework = torchtitan\nglobal_batch = 8\nmicro_batch = 1\n"
      "[parallel]\ntp = 1\npp = 1\ndp = 8\n"
      "[cluster]\ngpu = A100-SXM4-80GB\nnodes = 1\ngpus_per_node = 8\n[output]\ntrace_detail = summary\n";
  const auto run = [&](const char* recompute) {
    Scenario sc = load_scenario_text(text, "op", test::overrides({std::string("--training.recompute=") + recompute}));
    return std::pair(sc, run_scenario(sc, "", 1, true));
  };
  const auto [none_sc, none] = run("none");
  const auto [op_sc, op] = run("selective_op");
  const auto [full_sc, full] = run("full");
  // The recomputed FLOPs: half of the layers' weight GEMMs' forward FLOPs (the attention is kept).
  const Program program = build_program(op_sc.model, op_sc.plan);
  double linear = 0;
  const StageProgram& s = program.stages[0];
  for (int i = 0; i < s.size(); ++i)
    if (s.phase[i] == Phase::forward && s.layer[i] >= 0 && s.gemm_m[i] > 0 && weight_gemm(s.kind[i])) linear += s.flops[i];
  const double recomputed = (op.summary.hw_tflops_per_gpu - op.summary.model_tflops_per_gpu) * 1e12 * op.summary.step_time_s;
  CHECK(recomputed == Approx(0.5 * linear).epsilon(1e-3));
  CHECK(none.summary.step_time_s < op.summary.step_time_s);
  CHECK(op.summary.step_time_s < full.summary.step_time_s);
  CHECK(full.summary.peak_memory_gib < op.summary.peak_memory_gib);
  CHECK(op.summary.peak_memory_gib < none.summary.peak_memory_gib);
  const double fit =
      (training_memory(op_sc.model, training_setup(op_sc.plan, op_sc.model.seq_len), 1, 1, 8).total() -
       kRuntimeOverheadBytes) / kGiB;
  CHECK(fit == Approx(op.summary.peak_memory_gib).epsilon(0.01));
  ParallelPlan unfused = op_sc.plan;
  unfused.attention = Attention::standard;
  CHECK_THROWS_WITH(validate_plan(unfused, op_sc.model, 8), Catch::Contains("set training.attention = flash"));
}
