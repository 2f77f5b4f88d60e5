// Framework profiles: every profile sets every profile key for every precision and TP, each with a
// source; a profile fills only the keys a scenario leaves out; the framework texts of published
// runs map to the profiles; and the profiles change the step as their settings say.
#include <catch2/catch.hpp>
#include <set>
#include <sstream>

#include "sim/base/error.hpp"
#include "sim/scenario/frameworks.hpp"
#include "sim/scenario/run.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/validation/validate.hpp"
#include "tests/cli_scratch.hpp"
#include "tests/scenario_helpers.hpp"

using namespace dtsim;

namespace {

const char* kTiny = "[model]\nname = custom\nlayers = 4\nhidden = 1024\nheads = 16\nvocab = 32000\nseq_len = 512\n"
                    "[training]\nglobal_batch = 16\nmicro_batch = 2\nrecompute = none\n"
                    "[parallel]\ntp = 2\npp = 2\ndp = 2\n"
                    "[cluster]\nnodes = 1\ngpus_per_node = 8\n";

}  // namespace

TEST_CASE("every profile sets every profile key for every precision and TP, with a source", "[frameworks]") {
  const std::vector<std::string>& keys = framework_keys();
  REQUIRE(keys.size() >= 8);
  for (const FrameworkProfile& p : framework_profiles()) {
    for (const char* precision : {"fp16", "bf16"}) {
      for (const bool tensor_parallel : {false, true}) {
        std::multiset<std::string> set;
        for (const FrameworkSetting& s : p.settings) {
          const bool fp16 = std::string(precision) == "fp16";
          const bool applies = s.when == Condition::any || (s.when == Condition::fp16 && fp16) ||
                               (s.when == Condition::not_fp16 && !fp16) ||
                               (s.when == Condition::tensor_parallel && tensor_parallel) ||
                               (s.when == Condition::no_tensor_parallel && !tensor_parallel);
          if (applies) set.insert(s.key);
          CHECK(std::string(s.source).size() > 10);
        }
        for (const std::string& k : keys) {
          INFO(p.name << " " << precision << " tp>1 " << tensor_parallel << " " << k);
          CHECK(set.count(k) == 1);
        }
      }
    }
  }
}

TEST_CASE("a profile fills the keys the scenario leaves out: given keys win", "[frameworks]") {
  const Scenario core = load_scenario_text(kTiny, "tiny", test::overrides({}));
  CHECK(core.framework == "megatron-core");  // the key's default
  CHECK(core.plan.attention == Attention::cudnn);  // Transformer Engine's
  CHECK(core.plan.sequence_parallel);  // tp = 2
  CHECK(core.plan.tp_overlap == TpOverlap::userbuffers);
  CHECK(core.plan.grad_accumulation == GradAccumulation::fused);
  CHECK(core.plan.zero_stage == 1);

  const Scenario ds = load_scenario_text(kTiny, "tiny", test::overrides({"--training.framework=megatron-deepspeed"}));
  CHECK(ds.plan.attention == Attention::standard);
  CHECK(ds.plan.dropout);
  CHECK(ds.plan.grad_accumulation == GradAccumulation::fp32_buffer);
  CHECK_FALSE(ds.plan.dp_overlap);

  // A key in the file, and one on the command line, win over the profile.
  const Scenario given = load_scenario_text(std::string(kTiny) + "[training]\nattention = standard\n", "tiny",
                                            test::overrides({"--training.framework=torchtitan", "--parallel.zero_stage=1"}));
  CHECK(given.plan.attention == Attention::standard);
  CHECK(given.plan.zero_stage == 1);
  CHECK(given.plan.grad_reduce_fp32);
  CHECK(given.resolved_text.find("framework = torchtitan") != std::string::npos);

  // Megatron reduces fp16 gradients in fp16 and bf16 ones in fp32.
  CHECK_FALSE(load_scenario_text(kTiny, "t", test::overrides({"--training.framework=megatron-lm-2021", "--training.precision=fp16"}))
                  .plan.grad_reduce_fp32);
  CHECK(load_scenario_text(kTiny, "t", test::overrides({"--training.framework=megatron-lm-2021"})).plan.grad_reduce_fp32);
  // No sequence parallelism without TP.
  CHECK_FALSE(load_scenario_text(kTiny, "t", test::overrides({"--parallel.tp=1", "--parallel.dp=4"})).plan.sequence_parallel);

  CHECK_THROWS_WITH(load_scenario_text(kTiny, "tiny", test::overrides({"--training.framework=megatron"})),
                    Catch::Contains("tiny: training.framework = 'megatron': valid profiles are megatron-lm-2021"));
}

TEST_CASE("the built-in default is BLOOM as BigScience ran it", "[frameworks]") {
  Scenario builtin = load_scenario("", test::overrides({}));
  Scenario file = load_scenario(std::string(DTSIM_SOURCE_DIR) + "/scenarios/bloom-176b.ini", test::overrides({}));
  validate_scenario(builtin, 384);
  validate_scenario(file, 384);
  CHECK(builtin.framework == "megatron-deepspeed");
  CHECK(file.framework == "megatron-deepspeed");
  // One BLOOM: the file says no more than the built-in default (its stage_layers spells out the
  // split that auto makes), and dropout is the profile's (the run's script set none, so
  // Megatron's 0.1 held).
  CHECK(builtin.plan.stage_layers == file.plan.stage_layers);
  const auto without_split = [](std::string text) {
    const std::size_t at = text.find("stage_layers = ");
    return at == std::string::npos ? text : text.erase(at, text.find('\n', at) - at);
  };
  CHECK(without_split(builtin.resolved_text) == without_split(file.resolved_text));
  CHECK(file.plan.dropout);
}

TEST_CASE("published framework texts map to profiles", "[frameworks]") {
  const auto name = [](const char* text, int zero = 0) { return framework_for_text(text, zero).name; };
  CHECK(name("Megatron-LM (2021, DDP-impl torch)") == "megatron-lm-2021");
  CHECK(name("Megatron-LM (2019)") == "megatron-lm-2021");
  CHECK(name("Megatron-LM (2022)") == "megatron-lm-2022");
  CHECK(name("Megatron-LM (+DeepSpeed for ZeRO-3)") == "megatron-lm-2022");
  CHECK(name("Megatron-LM (+DeepSpeed for ZeRO-3)", 3) == "deepspeed-zero3");
  CHECK(name("NeMo 24.07 / Megatron-Core") == "megatron-core");
  CHECK(name("Megatron-Bridge 0.1") == "megatron-core");
  CHECK(name("Megatron-DeepSpeed (BigScience fork)") == "megatron-deepspeed");
  CHECK(name("torchtitan (torch 2024-12): FSDP2 + compile + Float8") == "torchtitan");
  CHECK(name("Composer/llm-foundry (FSDP mp_mode DEFAULT; flash-attn triton era)") == "llm-foundry");
  CHECK(name("JAX/MaxText") == "");
}

TEST_CASE("a profile's execution shows in the step: fused attention and fp32 accumulation buffers", "[frameworks]") {
  // Unfused attention and dropout cost memory-bound time that a fused kernel does not.
  Scenario standard = load_scenario_text(kTiny, "t", test::overrides({"--training.framework=megatron-lm-2022"}));
  Scenario flash = load_scenario_text(kTiny, "t", test::overrides({"--training.framework=megatron-lm-2022", "--training.attention=flash"}));
  const Summary a = run_scenario(standard, "", 1, false).summary;
  const Summary b = run_scenario(flash, "", 1, false).summary;
  CHECK(b.step_time_s < a.step_time_s);
  CHECK(b.memory_bound < a.memory_bound);
  // fp32 accumulation buffers: a cast (e + 4 bytes) and an fp32 add (12 bytes) per parameter and
  // micro-batch, against 3e for a separate add in bf16: more memory-bound time.
  Scenario separate = load_scenario_text(kTiny, "t", test::overrides({"--training.grad_accumulation=separate"}));
  Scenario fp32 = load_scenario_text(kTiny, "t", test::overrides({"--training.grad_accumulation=fp32_buffer"}));
  CHECK(run_scenario(fp32, "", 1, false).summary.step_time_s > run_scenario(separate, "", 1, false).summary.step_time_s);
}

TEST_CASE("dtsim catalog frameworks lists each profile with its settings and sources", "[frameworks][cli]") {
  const test::Outcome o = test::run_dtsim("catalog frameworks");
  REQUIRE(o.status == 0);
  for (const FrameworkProfile& p : framework_profiles()) CHECK(o.out.find(std::string(p.name) + ": ") != std::string::npos);
  CHECK(o.out.find("deepspeed/runtime/bf16_optimizer.py") != std::string::npos);
  const test::Outcome run = test::run_dtsim("run " + std::string(DTSIM_SOURCE_DIR) + "/scenarios/tests/tiny-pipeline.ini --json");
  CHECK(run.out.find("\"framework\": \"megatron-core\"") != std::string::npos);
}

TEST_CASE("validate maps a row's framework and model to a profile and a family, and lists what it assumed",
          "[frameworks][validate]") {
  // A NeMo Llama row that publishes tokens/s and leaves GPUs per node, the micro-batch and the
  // fabric empty.
  const std::string header =
      "run_id,source_id,model,layers,hidden,heads,kv_heads,ffn_hidden,vocab,seq_len,global_batch_seqs,micro_batch,"
      "num_gpus,gpu_type,nic_gbps,nics_per_node,gpus_per_node,precision,tp,pp,cp,vpp_chunks,sequence_parallel,"
      "recompute,zero_or_sharding,framework,iter_time_s,tokens_per_s_per_gpu,tflops_per_gpu,flops_counting\n";
  std::istringstream csv(header +
                         "nemo_llama,X,Llama 3 8B,32,4096,32,8,14336,128256,8192,128,,64,H100-SXM5-80GB,,,,bf16,1,1,1,1,"
                         "no,none,,NeMo 24.07 / Megatron-Core,,4000,,\n"
                         "mt19,Y,GPT-2 1.2B,40,1536,16,,6144,51200,1024,8,,1,V100-SXM2-32GB,,,16,fp16,1,1,1,1,no,,,"
                         "Megatron-LM (2019),,,39.0,\n");
  const std::vector<ValidationCase> cases = read_validation_cases(csv, "rows.csv", {});
  REQUIRE(cases.size() == 2);
  const ValidationCase& nemo = cases[0];
  REQUIRE(nemo.row.skip_reason.empty());
  CHECK(nemo.row.framework == "megatron-core");
  CHECK(nemo.row.compared_on == "tokens_per_s_per_gpu");
  // 128 x 8192 tokens over 64 GPUs at 4000 tokens/s each.
  CHECK(nemo.row.measured_s == Approx(128.0 * 8192 / (4000.0 * 64)));
  const auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  CHECK(has(nemo.overrides, "--training.framework=megatron-core"));
  CHECK(has(nemo.overrides, "--model.ffn=swiglu"));
  CHECK(has(nemo.overrides, "--model.position_embedding=rotary"));
  CHECK(has(nemo.overrides, "--model.bias=false"));
  CHECK(has(nemo.overrides, "--training.micro_batch=2"));  // 128 sequences over 64 DP ranks, no pipeline
  CHECK(has(nemo.overrides, "--cluster.nic_gbps=400"));
  CHECK(nemo.row.assumptions.size() == 4);  // GPUs per node, micro-batch, NICs, NIC rate
  const Scenario sc = validation_scenario(nemo, "rows.csv");
  CHECK(sc.plan.attention == Attention::cudnn);  // Transformer Engine's choice on Hopper
  CHECK(sc.model.ffn == FfnKind::swiglu);
  // A FLOP rate without the rule that counted it is skipped, with the reason.
  CHECK_THAT(cases[1].row.skip_reason, Catch::Contains("tflops_per_gpu without a FLOP-counting rule"));
}

TEST_CASE("PyTorch eager runs a Llama layer's RMSNorm, rotary embedding and SwiGLU as separate kernels",
          "[frameworks]") {
  const std::string llama = std::string(kTiny) + "[model]\nffn = swiglu\nffn_hidden = 2816\nposition_embedding = rotary\n"
                                                 "norm = rmsnorm\nbias = false\n";
  Scenario fused = load_scenario_text(llama, "t", test::overrides({"--training.framework=torchtitan", "--training.fused_kernels=true"}));
  Scenario eager = load_scenario_text(llama, "t", test::overrides({"--training.framework=torchtitan"}));
  CHECK_FALSE(eager.plan.fused_kernels);
  CHECK(eager.model.position == PositionEmbedding::rotary);
  const Summary f = run_scenario(fused, "", 1, false).summary, e = run_scenario(eager, "", 1, false).summary;
  CHECK(e.memory_bound > f.memory_bound);
  CHECK(e.step_time_s > f.step_time_s);
  // The rotary kernel runs for rotary models only.
  const auto has_rotary = [](Scenario sc) {
    validate_scenario(sc, 8);  // fills the stage split
    const Program p = build_program(sc.model, sc.plan);
    for (const StageProgram& s : p.stages)
      for (OpKind k : s.kind)
        if (k == OpKind::rotary) return true;
    return false;
  };
  CHECK(has_rotary(fused));
  CHECK_FALSE(has_rotary(load_scenario_text(kTiny, "t", test::overrides({"--model.position_embedding=alibi"}))));
}
