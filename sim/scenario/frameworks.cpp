// The framework profiles (see frameworks.hpp): each setting with the framework file or document
// it was read from, and the rules that map a published run's framework text to a profile.
#include "sim/scenario/frameworks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/any.hpp>
#include <cctype>
#include <charconv>

#include "sim/base/error.hpp"

namespace po = boost::program_options;

namespace dtsim {
namespace {

using PC = Condition;

// Megatron-LM's rule for the gradient reduction's precision (megatron/arguments.py, kept in
// megatron/training/arguments.py): bf16 forces --accumulate-allreduce-grads-in-fp32; fp16
// all-reduces the fp16 gradients.
constexpr const char* kMegatronGradFp32 =
    "Megatron-LM megatron/arguments.py: with --bf16, accumulate_allreduce_grads_in_fp32 = True; fp16 reduces fp16";

std::vector<FrameworkProfile> make_profiles() {
  std::vector<FrameworkProfile> p;
  p.push_back({"megatron-lm-2021", "Megatron-LM 2021 (v2.x; Narayanan et al. 2021, examples/sc21)",
               "unfused attention, dropout 0.1, local DDP reducing after the backward pass, no fusions of 2022",
               {
                   {"training.attention", "standard",
                    "megatron/model/transformer.py ParallelAttention: baddbmm, FusedScaleMaskSoftmax, dropout, bmm"},
                   {"training.dropout", "true", "megatron/arguments.py: --hidden-dropout 0.1, --attention-dropout 0.1"},
                   {"training.grad_accumulation", "separate",
                    "gradient-accumulation fusion (fused_weight_gradient_mlp_cuda) came with Megatron-LM v3 (2022)"},
                   {"training.fused_kernels", "true",
                    "megatron/model/fused_layer_norm.py, fused_bias_gelu.py, fused bias-dropout-add (apex and TorchScript kernels)"},
                   {"parallel.tp_overlap", "false",
                    "async tensor-model-parallel all-reduce came with Megatron-LM v3 (2022)"},
                   {"parallel.dp_overlap", "false",
                    "megatron/arguments.py: --DDP-impl defaults to local (one all-reduce after the backward pass)"},
                   {"parallel.grad_reduce_fp32", "true", kMegatronGradFp32, PC::not_fp16},
                   {"parallel.grad_reduce_fp32", "false", kMegatronGradFp32, PC::fp16},
                   {"parallel.sequence_parallel", "false", "sequence parallelism came with Megatron-LM v3 (2022)"},
                   {"parallel.zero_stage", "0", "no distributed optimizer before 2022: every DP rank keeps Adam state"},
                   {"training.moe_probs", "combine",
                    "no MoE layers in Megatron-LM v2; combine, as its first MoE layers (Megatron-Core moe_utils.unpermute with probs) ran"},
                   {"cluster.nccl_version", "2.8",
                    "NCCL of 2021: the NGC PyTorch 21.02-21.06 containers ship NCCL 2.8.4-2.9.9; the 2021-era 8 x A100 "
                    "sweep (shared/validation/collectives.csv c0001-c0020) is the one its profile reproduces"},
               }});
  p.push_back({"megatron-lm-2022", "Megatron-LM 2022 (v3.0; Korthikanti et al. 2022)",
               "gradient-accumulation fusion and asynchronous TP all-reduce; still unfused attention and local DDP",
               {
                   {"training.attention", "standard",
                    "megatron/model/transformer.py CoreAttention: baddbmm, FusedScaleMaskSoftmax, dropout, bmm"},
                   {"training.dropout", "true", "megatron/arguments.py: --hidden-dropout 0.1, --attention-dropout 0.1"},
                   {"training.grad_accumulation", "fused",
                    "megatron/arguments.py: --no-gradient-accumulation-fusion (fusion on by default)"},
                   {"training.fused_kernels", "true",
                    "megatron/model/fused_layer_norm.py, fused_bias_gelu.py, fused bias-dropout-add (apex and TorchScript kernels)"},
                   {"parallel.tp_overlap", "true",
                    "megatron/arguments.py: --no-async-tensor-model-parallel-allreduce (async on by default); "
                    "megatron/core/tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication"},
                   {"parallel.dp_overlap", "false", "megatron/arguments.py: --DDP-impl defaults to local"},
                   {"parallel.grad_reduce_fp32", "true", kMegatronGradFp32, PC::not_fp16},
                   {"parallel.grad_reduce_fp32", "false", kMegatronGradFp32, PC::fp16},
                   {"parallel.sequence_parallel", "false", "megatron/arguments.py: --sequence-parallel is opt-in"},
                   {"parallel.zero_stage", "0", "megatron/arguments.py: --use-distributed-optimizer is opt-in"},
                   {"training.moe_probs", "combine",
                    "no MoE layers in Megatron-LM v3; combine, as its first MoE layers (Megatron-Core moe_utils.unpermute with probs) ran"},
                   {"cluster.nccl_version", "2.12",
                    "the NGC PyTorch 22.04-22.09 containers ship NCCL 2.12"},
               }});
  p.push_back({"megatron-deepspeed", "Megatron-DeepSpeed, BigScience fork (2022; BLOOM's tr11-176B-ml)",
               "Megatron 2021 layers in DeepSpeed's pipeline engine: BF16 optimizer with fp32 gradient buffers, "
               "gradients reduced after the pipeline flush, unfused attention with dropout 0.1",
               {
                   {"training.attention", "standard",
                    "bigscience-workshop/Megatron-DeepSpeed megatron/model/transformer.py ParallelAttention "
                    "(FusedScaleMaskSoftmax; no flash attention in 2022)"},
                   {"training.dropout", "true",
                    "bigscience train/tr11-176B-ml: the slurm script sets no dropout, so Megatron's 0.1 defaults "
                    "(megatron/arguments.py) hold; its README: the default Megatron-LM dropout settings are inherited"},
                   {"training.grad_accumulation", "fp32_buffer",
                    "deepspeed/runtime/bf16_optimizer.py: each micro-batch's bf16 gradients added into fp32 buffers"},
                   {"training.fused_kernels", "true",
                    "Megatron-DeepSpeed megatron/model/fused_layer_norm.py (MixedFusedLayerNorm), fused bias-GeLU and bias-dropout-add"},
                   {"parallel.tp_overlap", "false", "the fork's Megatron layers predate Megatron-LM v3's async TP"},
                   {"parallel.dp_overlap", "false",
                    "deepspeed/runtime/pipe/schedule.py TrainSchedule: ReduceTiedGrads, ReduceGrads after the last "
                    "backward pass"},
                   {"parallel.grad_reduce_fp32", "true",
                    "deepspeed/runtime/pipe/engine.py _bf16_reduce_grads: the fp32 buffers all-reduced in bf16 "
                    "(communication_data_type), the same bytes as a reduce-scatter of fp32"},
                   {"parallel.sequence_parallel", "false", "no sequence parallelism in the 2022 fork"},
                   {"parallel.zero_stage", "1",
                    "tr11-176B-ml.slurm: --zero-stage 0, and deepspeed/runtime/bf16_optimizer.py shards the fp32 state "
                    "over DP and all-gathers the bf16 weights (a ZeRO-1 equivalent)"},
                   {"training.moe_probs", "combine",
                    "deepspeed/moe/sharded_moe.py MOELayer: the expert outputs are combined by an einsum with combine_weights, which autograd keeps with them"},
                   {"cluster.nccl_version", "2.10.3",
                    "BigScience's tr11 environment: PyTorch 1.11, whose wheels bundle NCCL 2.10.3"},
               }});
  p.push_back({"megatron-core", "Megatron-Core / NeMo / Megatron-Bridge (2024-2025; core_r0.8 to r0.13, NeMo 24.07+)",
               "Transformer Engine attention (cuDNN on Hopper and later), sequence parallelism, distributed optimizer, overlapped DP and TP "
               "communication, no dropout in the Llama/GPT recipes",
               {
                   {"training.attention", "cudnn",
                    "megatron/core/extensions/transformer_engine.py TEDotProductAttention; Transformer Engine "
                    "dot_product_attention/utils.py get_attention_backend: \"Disabling FlashAttention to give "
                    "FusedAttention preference on Hopper+\" (cuDNN; flash-attn before Hopper)"},
                   {"training.dropout", "false",
                    "NeMo nemo/collections/llm/gpt/model/llama.py: attention_dropout = hidden_dropout = 0.0"},
                   {"training.grad_accumulation", "fused",
                    "megatron/core/model_parallel_config.py: gradient_accumulation_fusion = True with TE"},
                   {"training.fused_kernels", "true",
                    "Transformer Engine fused RMSNorm/LayerNorm, fused RoPE (apply_rope_fusion) and fused SwiGLU (bias_swiglu_fusion)"},
                   {"parallel.tp_overlap", "userbuffers",
                    "NeMo and Megatron-Bridge performance recipes (llama3 70B, llama31 405B on H100): CommOverlapConfig / "
                    "MegatronCommOverlapCallback tp_comm_overlap = True with userbuffers_bf16_h100_* configs "
                    "(qkv/fc1 fprop and proj/fc2 dgrad ring exchange, proj/fc2 fprop overlapped reduce-scatter, "
                    "qkv/fc1 dgrad and wgrad bulk overlap)"},
                   {"parallel.dp_overlap", "true",
                    "megatron/core/distributed/distributed_data_parallel_config.py overlap_grad_reduce "
                    "(on in NeMo's recipes)"},
                   {"parallel.grad_reduce_fp32", "true",
                    "megatron/core/distributed/distributed_data_parallel_config.py grad_reduce_in_fp32 with bf16",
                    PC::not_fp16},
                   {"parallel.grad_reduce_fp32", "false", kMegatronGradFp32, PC::fp16},
                   {"parallel.sequence_parallel", "true",
                    "NeMo nemo/collections/llm/recipes/llama3_70b.py: sequence_parallel = True with TP > 1",
                    PC::tensor_parallel},
                   {"parallel.sequence_parallel", "false", "nothing to shard without TP", PC::no_tensor_parallel},
                   {"parallel.zero_stage", "1",
                    "NeMo recipes: use_distributed_optimizer = True (optimizer state sharded over DP)"},
                   {"training.moe_probs", "activation",
                    "megatron/core/transformer/moe/README.md, MCore v0.13 (2025/07): the probs multiplication moves from the un-permutation to the GroupedMLP activation (experts.py activation_func_with_probs; Transformer Engine moe_permute_with_probs, PR 1468), so the un-permutation keeps no input"},
                   {"cluster.nccl_version", "2.21.5",
                    "PyTorch 2.5 and 2.6 (2024-2025) require nvidia-nccl-cu12 2.21.5; NGC 24.xx containers ship "
                    "2.21-2.23, the same profile"},
               }});
  p.push_back({"deepspeed-zero3", "DeepSpeed ZeRO-3 (2021-2023; with Megatron-DeepSpeed layers)",
               "parameters, gradients and optimizer state sharded; gradients reduced in the training precision",
               {
                   {"training.attention", "standard", "Megatron-DeepSpeed megatron/model/transformer.py (unfused)"},
                   {"training.dropout", "true", "megatron/arguments.py: --hidden-dropout 0.1, --attention-dropout 0.1"},
                   {"training.grad_accumulation", "separate",
                    "deepspeed/runtime/zero/stage3.py: gradients accumulate through autograd into the partition"},
                   {"training.fused_kernels", "true",
                    "Megatron-DeepSpeed fused layer norm, bias-GeLU and bias-dropout-add kernels"},
                   {"parallel.tp_overlap", "false", "no asynchronous TP communication in the DeepSpeed layers"},
                   {"parallel.dp_overlap", "true", "deepspeed/runtime/zero/stage3.py: overlap_comm"},
                   {"parallel.grad_reduce_fp32", "false",
                    "deepspeed/runtime/zero/stage3.py: communication_data_type defaults to the model's dtype"},
                   {"parallel.sequence_parallel", "false", "no sequence parallelism"},
                   {"parallel.zero_stage", "3", "ZeRO stage 3"},
                   {"training.moe_probs", "combine",
                    "deepspeed/moe/sharded_moe.py MOELayer: combine_weights einsum over the expert outputs"},
                   {"cluster.nccl_version", "2.10.3",
                    "PyTorch 1.10-1.12 wheels bundle NCCL 2.10.3"},
               }});
  p.push_back({"torchtitan", "PyTorch FSDP2 / torchtitan (2024-2025, eager)",
               "FSDP2 sharding of every layer, SDPA flash attention, fp32 gradient reduction, no dropout",
               {
                   {"training.attention", "flash",
                    "torchtitan/models/llama/model.py: F.scaled_dot_product_attention (flash backend)"},
                   {"training.dropout", "false", "torchtitan/models/llama/model.py: no dropout layers"},
                   {"training.grad_accumulation", "separate",
                    "torch autograd accumulates each micro-batch's gradients in a kernel of its own"},
                   {"training.fused_kernels", "false",
                    "torchtitan/models/llama/model.py (2024): RMSNorm as x.float(), pow, mean, rsqrt, mul; apply_rotary_emb through view_as_complex; F.silu(w1(x)) * w3(x); torch.compile off by default (job config training.compile = false)"},
                   {"parallel.tp_overlap", "false",
                    "torchtitan/config_manager.py: enable_async_tensor_parallel defaults to False"},
                   {"parallel.dp_overlap", "true", "FSDP2 reduce-scatters each layer's gradients during backward"},
                   {"parallel.grad_reduce_fp32", "true",
                    "torchtitan/config_manager.py: mixed_precision_reduce = float32"},
                   {"parallel.sequence_parallel", "true",
                    "torchtitan/parallelisms/parallelize_llama.py: SequenceParallel on norms with TP",
                    PC::tensor_parallel},
                   {"parallel.sequence_parallel", "false", "nothing to shard without TP", PC::no_tensor_parallel},
                   {"parallel.zero_stage", "3",
                    "torchtitan/parallelisms/parallelize_llama.py: fully_shard, reshard_after_forward = True"},
                   {"training.moe_probs", "combine",
                    "torchtitan/models/moe.py: score_before_experts multiplies the routed inputs by the scores in fp32, and autograd keeps the unweighted copies (as many bytes as the combine keeps)"},
                   {"cluster.nccl_version", "2.21.5",
                    "PyTorch 2.5 and 2.6 (torchtitan 2024-2025) require nvidia-nccl-cu12 2.21.5"},
               }});
  p.push_back({"llm-foundry", "MosaicML Composer / llm-foundry (2023; scripts/train/benchmarking)",
               "FSDP FULL_SHARD, Triton flash attention, fp32 gradient reduction (mp_mode DEFAULT), no dropout",
               {
                   {"training.attention", "flash_triton",
                    "llmfoundry/models/mpt/configuration_mpt.py: attn_impl = triton (2023 benchmarks)"},
                   {"training.dropout", "false",
                    "scripts/train/yamls/pretrain/mpt-*.yaml: attn_pdrop = resid_pdrop = emb_pdrop = 0.0"},
                   {"training.grad_accumulation", "separate",
                    "torch autograd accumulates each micro-batch's gradients in a kernel of its own"},
                   {"training.fused_kernels", "true",
                    "llmfoundry/models/layers: LPLayerNorm (one F.layer_norm kernel), GeLU MLP without biases"},
                   {"parallel.tp_overlap", "false", "no tensor parallelism in the benchmarks"},
                   {"parallel.dp_overlap", "true", "torch FSDP reduce-scatters each block's gradients during backward"},
                   {"parallel.grad_reduce_fp32", "true",
                    "composer FSDP mixed_precision DEFAULT: reduce_dtype = float32 (PURE: the training dtype)"},
                   {"parallel.sequence_parallel", "false", "no tensor parallelism in the benchmarks"},
                   {"parallel.zero_stage", "3",
                    "scripts/train/benchmarking/README.md: fsdp_config sharding_strategy FULL_SHARD"},
                   {"training.moe_probs", "combine",
                    "llm-foundry MoE through MegaBlocks (megablocks/layers/moe.py: the scatter weights the expert outputs by the top-k scores and keeps them)"},
                   {"cluster.nccl_version", "2.14.3",
                    "llm-foundry 2023 ran PyTorch 1.13-2.0, whose wheels require nvidia-nccl-cu11 2.14.3"},
               }});
  return p;
}

bool contains(std::string_view text, std::string_view what) {
  const auto lower = [](unsigned char c) { return static_cast<char>(std::tolower(c)); };
  std::string t(text), w(what);
  std::transform(t.begin(), t.end(), t.begin(), lower);
  std::transform(w.begin(), w.end(), w.begin(), lower);
  return t.find(w) != std::string::npos;
}

// The first four-digit year 19xx or 20xx in `text`, or 0.
int year_in(std::string_view text) {
  for (std::size_t i = 0; i + 4 <= text.size(); ++i) {
    if (!(text.substr(i, 2) == "19" || text.substr(i, 2) == "20")) continue;
    if (i > 0 && std::isdigit(static_cast<unsigned char>(text[i - 1]))) continue;
    if (i + 4 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 4]))) continue;
    int year = 0;
    const auto [end, ec] = std::from_chars(text.data() + i, text.data() + i + 4, year);
    if (ec == std::errc() && end == text.data() + i + 4) return year;
  }
  return 0;
}

bool applies(Condition when, const std::string& precision, bool tensor_parallel) {
  switch (when) {
    case PC::any: return true;
    case PC::fp16: return precision == "fp16";
    case PC::not_fp16: return precision != "fp16";
    case PC::tensor_parallel: return tensor_parallel;
    case PC::no_tensor_parallel: return !tensor_parallel;
  }
  return false;
}

}  // namespace

const std::vector<FrameworkProfile>& framework_profiles() {
  static const std::vector<FrameworkProfile> profiles = make_profiles();
  return profiles;
}

const FrameworkProfile& find_framework(std::string_view name) {
  for (const FrameworkProfile& p : framework_profiles())
    if (name == p.name) return p;
  std::string valid;
  for (const FrameworkProfile& p : framework_profiles()) valid += fmt::format("{}{}", valid.empty() ? "" : ", ", p.name);
  throw InputError(fmt::format("training.framework = '{}': valid profiles are {} (dtsim catalog frameworks)", name, valid));
}

std::string_view unconditional_setting(std::string_view profile, std::string_view key) {
  for (const FrameworkSetting& s : find_framework(profile).settings)
    if (key == s.key && s.when == Condition::any) return s.value;
  throw InputError(fmt::format("profile {} sets {} only under conditions", profile, key));
}

const std::vector<std::string>& framework_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const FrameworkSetting& s : framework_profiles().front().settings)
      if (std::find(out.begin(), out.end(), s.key) == out.end()) out.emplace_back(s.key);
    return out;
  }();
  return keys;
}

FrameworkMatch framework_for_text(std::string_view text, int zero_stage) {
  if (contains(text, "llm-foundry") || contains(text, "composer")) return {"llm-foundry", "names llm-foundry/Composer"};
  if (contains(text, "torchtitan")) return {"torchtitan", "names torchtitan"};
  if (contains(text, "fsdp")) return {"torchtitan", "names PyTorch FSDP"};
  if (contains(text, "nemo") || contains(text, "megatron-core") || contains(text, "mcore") ||
      contains(text, "megatron-bridge"))
    return {"megatron-core", "names NeMo/Megatron-Core/Megatron-Bridge"};
  if (contains(text, "megatron-deepspeed") || contains(text, "bigscience"))
    return {"megatron-deepspeed", "names Megatron-DeepSpeed"};
  if (contains(text, "deepspeed") && zero_stage == 3) return {"deepspeed-zero3", "names DeepSpeed, run with ZeRO-3"};
  if (contains(text, "megatron")) {
    const int year = year_in(text);
    if (year >= 2024) return {"megatron-core", fmt::format("Megatron-LM dated {}: Megatron-Core", year)};
    if (year > 0 && year < 2022) return {"megatron-lm-2021", fmt::format("Megatron-LM dated {}", year)};
    if (year > 0) return {"megatron-lm-2022", fmt::format("Megatron-LM dated {}", year)};
    return {"megatron-lm-2022", "Megatron-LM, undated"};
  }
  if (contains(text, "deepspeed")) return {"megatron-deepspeed", "names DeepSpeed"};
  return {"", ""};
}

void apply_framework(po::variables_map& vm, const std::string& source) {
  const std::string name = vm["training.framework"].as<std::string>();
  const FrameworkProfile* profile = nullptr;
  try {
    profile = &find_framework(name);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", source, e.what()));
  }
  const std::string precision = vm["training.precision"].as<std::string>();
  // A malformed parallel.tp is reported when the scenario reads it; here it only picks a setting.
  const std::string tp = vm["parallel.tp"].as<std::string>();
  const bool tensor_parallel = !tp.empty() && tp != "1";
  for (const FrameworkSetting& s : profile->settings) {
    if (!applies(s.when, precision, tensor_parallel)) continue;
    auto it = vm.find(s.key);
    if (it != vm.end() && !it->second.defaulted()) continue;  // the file or the command line said
    vm.erase(s.key);
    vm.insert({s.key, po::variable_value(boost::any(std::string(s.value)), true)});
  }
}

}  // namespace dtsim
