// A published run's row -> scenario overrides, assumptions and the quantity compared (see
// row_scenario.hpp).
#include "sim/validation/row_scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "sim/base/error.hpp"
#include "sim/base/limits.hpp"
#include "sim/scenario/frameworks.hpp"
#include "sim/validation/moe_row.hpp"
#include "workloads/parallel_plan.hpp"

namespace dtsim {
namespace {

bool contains(const std::string& text, const char* what) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return lower.find(what) != std::string::npos;
}

// The training.precision a row's precision text names. NeMo/Megatron-Bridge name their FP8
// recipes: FP8-CS (per-tensor current scaling), FP8-MX / MXFP8 (32-element blocks), FP8-SC or
// FP8-blockwise (128 x 128 weight and 1 x 128 activation sub-channel scales: DeepSeek-V3's). Any
// other FP8 (llm-foundry's amp_fp8) is Transformer Engine's delayed scaling.
std::string precision_of(const std::string& text) {
  if (contains(text, "nvfp4")) return "nvfp4";
  if (contains(text, "mxfp8") || contains(text, "fp8-mx") || contains(text, "fp8_mx")) return "mxfp8";
  if (contains(text, "fp8-sc") || contains(text, "fp8_sc") || contains(text, "blockwise") ||
      contains(text, "sub-channel") || contains(text, "subchannel"))
    return "fp8_blockwise";
  if (contains(text, "fp8-cs") || contains(text, "fp8_cs") || contains(text, "current scaling") ||
      contains(text, "current-scaling"))
    return "fp8_current";
  if (contains(text, "fp8")) return "fp8";
  if (contains(text, "bf16")) return "bf16";
  if (contains(text, "fp16")) return "fp16";
  if (contains(text, "fp32")) return "fp32";
  return "bf16";
}

int zero_stage_of(const std::string& text) {
  if (contains(text, "zero-3") || contains(text, "full_shard") || contains(text, "fsdp2")) return 3;
  if (contains(text, "zero-2") || contains(text, "shard_grad_op")) return 2;
  if (contains(text, "zero-1") || contains(text, "distributed optimizer")) return 1;
  return 0;
}

std::string recompute_of(const std::string& text) {
  if (contains(text, "selective op")) return "selective_op";  // torchtitan's op-level checkpointing
  if (contains(text, "selective")) return "selective";
  if (contains(text, "full")) return "full";
  return "none";
}

// The Megatron-Core recompute modules a selective row's recompute text names (its
// --recompute-modules: "selective (layernorm, moe_act)"), comma-separated; "" when it names none.
std::string recompute_modules_of(const std::string& text) {
  unsigned named = 0;
  for (RecomputeModule m : {RecomputeModule::core_attn, RecomputeModule::layernorm, RecomputeModule::mla_up_proj,
                            RecomputeModule::moe_act})
    if (contains(text, recompute_modules_name(module_bit(m)).c_str())) named |= module_bit(m);
  return named ? recompute_modules_name(named) : "";
}

// The architecture a model name implies: MLP kind, positions, biases, embeddings, from each
// family's reference implementation.
struct Family {
  const char* name;
  const char* ffn;
  const char* position;
  const char* norm;
  bool bias, tied, embedding_norm;
};
constexpr Family kFamilies[] = {
    // Llama 1-3 (meta-llama/llama model.py): SwiGLU, rotary, RMSNorm, no biases, untied head.
    {"llama", "swiglu", "rotary", "rmsnorm", false, false, false},
    // MPT (llm-foundry configuration_mpt.py): ALiBi, no_bias = True, tied embeddings, GeLU 4h.
    {"mpt", "gelu", "alibi", "layernorm", false, true, false},
    // BLOOM (Le Scao et al. 2022): ALiBi, embedding layer norm, biases, tied embeddings.
    {"bloom", "gelu", "alibi", "layernorm", true, true, true},
    // OPT (metaseq): learned positions, biases, tied embeddings, a 2-matrix ReLU MLP.
    {"opt", "gelu", "learned", "layernorm", true, true, false},
    // GPT-2/3 and Megatron's GPT (MT-NLG too): learned positions, biases, tied embeddings.
    {"gpt", "gelu", "learned", "layernorm", true, true, false},
    {"mt-nlg", "gelu", "learned", "layernorm", true, true, false},
};

const Family* family_of(const std::string& model) {
  for (const Family& f : kFamilies)
    if (contains(model, f.name)) return &f;
  return nullptr;
}

// Column `key` as an integer from 1 to the GPU limit.
long long count_of(const CsvRow& r, const char* key) {
  const std::string& text = r.at(key);
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > limits::kMaxGpus)
    throw InputError(fmt::format("column {} = '{}': must be an integer from 1 to {}", key, text, limits::kMaxGpus));
  return value;
}

// Column `key` as a finite number > 0 (`what` says what it measures).
double positive_of(const CsvRow& r, const char* key, const char* what) {
  const std::string& text = r.at(key);
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || value <= 0)
    throw InputError(fmt::format("column {} = '{}': must be {} > 0", key, text, what));
  return value;
}

// The NICs a node of this GPU usually has, when the row does not say: one per GPU (DGX/HGX A100,
// H100; DGX-2: 8 for 16 GPUs) at the InfiniBand generation of the GPU's systems.
std::pair<long long, int> usual_nics(const std::string& gpu, long long per_node) {
  if (contains(gpu, "v100")) return {std::min(per_node, 8LL), 100};
  if (contains(gpu, "h100") || contains(gpu, "h200") || contains(gpu, "h800")) return {per_node, 400};
  if (contains(gpu, "b200") || contains(gpu, "b300") || contains(gpu, "gb200")) return {per_node, 400};
  return {per_node, 200};
}

// The step time a published FLOP rate implies, by the row's FLOP-counting rule; 0 when the rule
// is not one dtsim knows.
double seconds_from_tflops(const CsvRow& r, double tflops, long long gpus) {
  const std::string& rule = r.at("flops_counting");
  const double B = count_of(r, "global_batch_seqs"), s = count_of(r, "seq_len"), l = count_of(r, "layers");
  const double h = count_of(r, "hidden"), V = count_of(r, "vocab");
  double flops = 0;
  if (contains(rule, "96*b*s*l*h^2") || contains(rule, "eq.3"))
    flops = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));  // Narayanan et al. 2021, Eq. 3
  else if (contains(rule, "72*b*s*l*h^2") || contains(rule, "model flops"))
    flops = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * h * l));  // Korthikanti et al. 2022
  return flops > 0 ? flops / (gpus * tflops * 1e12) : 0;
}

// The model keys of a row: a catalog MoE model by name, the shape columns given on top (each
// that differs from the catalog listed); else a custom model of the shape columns with its
// family's architecture. Then the expert columns.
void add_model(const CsvRow& r, const MoeRow& moe, RowScenario& out) {
  const auto& get = [&](const char* k) -> const std::string& { return r.at(k); };
  std::vector<std::string>& a = out.overrides;
  const std::string modules = recompute_of(get("recompute")) == "selective" ? recompute_modules_of(get("recompute")) : "";
  if (moe.catalog) {
    const ModelShape& m = *moe.catalog;
    a.push_back("--model.name=" + m.name);
    out.assumptions.push_back(fmt::format("model '{}' is the catalog's {} (its shape, attention and experts)",
                                          get("model"), m.name));
    struct Column {
      const char* key;
      int catalog;
      bool shape;  // a shape column, passed on as its model key (the expert columns are moe's)
    };
    const Column columns[] = {{"layers", m.layers, true},
                              {"hidden", m.hidden, true},
                              {"heads", m.heads, true},
                              {"kv_heads", m.kv_heads_or_heads(), true},
                              {"ffn_hidden", m.ffn_or_default(), true},
                              {"vocab", m.vocab, true},
                              {"experts", m.experts, false},
                              {"active_experts", m.active_experts, false},
                              {"shared_experts", m.shared_experts, false},
                              {"expert_ffn_hidden", m.expert_ffn_hidden, false},
                              {"dense_layers", m.dense_layers, false}};
    for (const Column& c : columns) {
      if (get(c.key).empty()) continue;
      if (get(c.key) != std::to_string(c.catalog))
        out.assumptions.push_back(fmt::format("column {} = {} replaces the catalog's {}", c.key, get(c.key), c.catalog));
      if (c.shape) a.push_back(fmt::format("--model.{}={}", c.key, get(c.key)));
    }
  } else {
    a.insert(a.end(), {"--model.name=custom", "--model.layers=" + get("layers"), "--model.hidden=" + get("hidden"),
                       "--model.heads=" + get("heads"), "--model.vocab=" + get("vocab")});
    const Family* family = family_of(get("model"));
    if (family == nullptr) {
      family = &kFamilies[4];
      out.assumptions.push_back(fmt::format("model '{}' names no known family: a GPT architecture assumed", get("model")));
    }
    a.push_back(std::string("--model.ffn=") + family->ffn);
    a.push_back(std::string("--model.position_embedding=") + family->position);
    a.push_back(std::string("--model.norm=") + family->norm);
    a.push_back(std::string("--model.bias=") + (family->bias ? "true" : "false"));
    a.push_back(std::string("--model.tied_embeddings=") + (family->tied ? "true" : "false"));
    a.push_back(std::string("--model.embedding_norm=") + (family->embedding_norm ? "true" : "false"));
    if (std::string(family->ffn) == "swiglu" && get("ffn_hidden").empty())
      throw InputError(fmt::format("column ffn_hidden is empty: a {} model's SwiGLU size must be given", family->name));
    if (!get("ffn_hidden").empty()) a.push_back("--model.ffn_hidden=" + get("ffn_hidden"));
    if (!get("kv_heads").empty()) a.push_back("--model.kv_heads=" + get("kv_heads"));
  }
  a.insert(a.end(), moe.overrides.begin(), moe.overrides.end());
}

}  // namespace

std::string row_unsupported(const CsvRow& r) {
  const auto& get = [&](const char* k) { return r.at(k); };
  if (get("iter_time_s").empty() && get("tokens_per_s_per_gpu").empty() && get("tflops_per_gpu").empty())
    return "no iteration time, tokens/s or TFLOP/s per GPU";
  if (contains(get("model"), "one transformer layer")) return "single-layer measurement, not a step";
  const MoeRow moe = moe_row(r);
  if (!moe.unsupported.empty()) return moe.unsupported;
  if (!moe.catalog)  // a catalog MoE model brings its own shape
    for (const char* k : {"layers", "hidden", "heads", "vocab"})
      if (get(k).empty()) return fmt::format("column {} is empty", k);
  for (const char* k : {"seq_len", "global_batch_seqs", "num_gpus", "tp", "pp"})
    if (get(k).empty()) return fmt::format("column {} is empty", k);
  return "";
}

RowScenario row_scenario(const CsvRow& r) {
  const auto& get = [&](const char* k) -> const std::string& { return r.at(k); };
  RowScenario out;
  const long long gpus = count_of(r, "num_gpus"), tp = count_of(r, "tp"), pp = count_of(r, "pp");
  const long long cp = get("cp").empty() ? 1 : count_of(r, "cp");
  if (gpus % (tp * pp * cp) != 0)
    throw InputError(fmt::format("columns num_gpus = {}, tp = {}, pp = {}, cp = {}: tp x pp x cp must divide the GPUs",
                                 gpus, tp, pp, cp));
  const long long dp = gpus / (tp * pp * cp);
  const std::string gpu = get("gpu_type").substr(0, get("gpu_type").find(' '));
  const std::string precision = precision_of(get("precision"));
  const int zero_stage = zero_stage_of(get("zero_or_sharding"));
  const std::string framework_text = get("framework");

  const FrameworkMatch match = framework_for_text(framework_text, zero_stage);
  out.framework = match.name.empty() ? "megatron-core" : match.name;
  out.framework_rule = match.name.empty() ? "not recognised: the default profile" : match.rule;
  if (match.name.empty())
    out.assumptions.push_back(fmt::format("framework '{}' names no known framework: megatron-core assumed", framework_text));

  long long per_node = 0;
  if (get("gpus_per_node").empty()) {
    per_node = 8;
    out.assumptions.push_back("gpus_per_node = 8 (an HGX/DGX node)");
  } else {
    per_node = count_of(r, "gpus_per_node");
  }
  const long long global_batch = count_of(r, "global_batch_seqs");
  std::string micro_batch = get("micro_batch");
  if (micro_batch.empty()) {
    // Without a pipeline the frameworks run each DP rank's share at once; with one, Megatron's
    // scripts default to micro-batches of 1.
    const long long mb = pp == 1 && global_batch % dp == 0 ? global_batch / dp : 1;
    micro_batch = std::to_string(mb);
    out.assumptions.push_back(fmt::format("micro_batch = {} ({})", mb,
                                          pp == 1 ? "each DP rank's share of the batch: no accumulation"
                                                  : "Megatron's default with a pipeline"));
  }

  std::vector<std::string>& a = out.overrides;
  const std::string modules = recompute_of(get("recompute")) == "selective" ? recompute_modules_of(get("recompute")) : "";
  a = {"--training.framework=" + out.framework, "--model.seq_len=" + get("seq_len"),
       "--training.global_batch=" + get("global_batch_seqs"),
       "--training.micro_batch=" + micro_batch, "--training.precision=" + precision,
       "--training.recompute=" + recompute_of(get("recompute")), fmt::format("--parallel.tp={}", tp),
       fmt::format("--parallel.pp={}", pp), fmt::format("--parallel.dp={}", dp),
       fmt::format("--parallel.zero_stage={}", zero_stage),
       std::string("--parallel.sequence_parallel=") + (get("sequence_parallel") == "yes" ? "true" : "false"),
       "--parallel.stage_layers=auto", "--cluster.gpu=" + gpu,
       fmt::format("--cluster.nodes={}", std::max(gpus / per_node, 1LL)),
       fmt::format("--cluster.gpus_per_node={}", std::min(per_node, gpus)), "--output.trace_detail=summary"};
  if (!modules.empty()) a.push_back("--training.recompute_modules=" + modules);
  // torchtitan's layer-wise selective checkpointing (activation_checkpoint.selective_ac_option, a
  // layer frequency, "2" by default) wraps every second block in full checkpointing (its
  // _apply_layer_sac counts the blocks and checkpoints those whose count divides by 2): full
  // recomputation of half of each stage's layers.
  if (contains(get("recompute"), "selective layer") && !get("layers").empty()) {
    const long long per_stage = count_of(r, "layers") / pp, recomputed = per_stage / 2;
    std::replace(a.begin(), a.end(), std::string("--training.recompute=selective"), std::string("--training.recompute=full"));
    a.push_back(fmt::format("--training.recompute_num_layers={}", std::max(recomputed, 1LL)));
    out.assumptions.push_back(fmt::format(
        "recompute 'selective layer': torchtitan's layer-wise checkpointing of every second block "
        "(selective_ac_option = 2): full recomputation of {} of each stage's {} layers", std::max(recomputed, 1LL), per_stage));
  }

  // Context parallelism: Megatron-Core's ring of K/V sends unless the row says the keys and values
  // are all-gathered (Llama 3); it runs on fused attention: the profile's when it is fused (Transformer
  // Engine's), else FlashAttention-2.
  if (cp > 1) {
    const bool gather = contains(framework_text, "all-gather") || contains(framework_text, "all_gather");
    a.push_back(fmt::format("--parallel.cp={}", cp));
    a.push_back(std::string("--parallel.cp_comm=") + (gather ? "all_gather" : "p2p"));
    if (!fused_attention(parse_attention(unconditional_setting(out.framework, "training.attention"), "training.attention")))
      a.push_back("--training.attention=flash");
    if (!gather) out.assumptions.push_back("cp_comm = p2p (Megatron-Core's ring of K/V sends)");
  }

  // What the framework column says beyond the profile: the DDP implementation of Megatron-LM
  // 2021 runs, llm-foundry's mixed-precision mode.
  if (contains(framework_text, "ddp-impl torch")) a.push_back("--parallel.dp_overlap=true");
  if (contains(framework_text, "ddp-impl local")) a.push_back("--parallel.dp_overlap=false");
  if (contains(framework_text, "mp_mode pure")) a.push_back("--parallel.grad_reduce_fp32=false");

  const MoeRow moe = moe_row(r);
  add_model(r, moe, out);
  // An EP size that does not divide DP but divides TP x CP x DP is Megatron-Core's parallel
  // folding (expert TP 1), which a row may also state in its etp column.
  if (moe.moe && !get("ep").empty() && get("etp").empty()) {
    const long long ep = count_of(r, "ep");
    if (dp % ep != 0 && (tp * cp * dp) % ep == 0) {
      a.push_back("--parallel.etp=1");
      out.assumptions.push_back(fmt::format("etp = 1 (EP {} spans TP x CP x DP = {} x {} x {}: parallel folding)", ep,
                                            tp, cp, dp));
    }
  }

  const long long vpp = get("vpp_chunks").empty() ? 1 : count_of(r, "vpp_chunks");
  if (vpp > 1) {
    a.push_back("--parallel.schedule=interleaved");
    a.push_back(fmt::format("--parallel.virtual_stages={}", vpp));
  }
  const auto [usual_count, usual_gbps] = usual_nics(gpu, per_node);
  if (get("nics_per_node").empty()) {
    a.push_back(fmt::format("--cluster.nics_per_node={}", usual_count));
    out.assumptions.push_back(fmt::format("nics_per_node = {} (usual for {} nodes)", usual_count, gpu));
  } else {
    a.push_back("--cluster.nics_per_node=" + get("nics_per_node"));
  }
  if (get("nic_gbps").empty()) {
    a.push_back(fmt::format("--cluster.nic_gbps={}", usual_gbps));
    out.assumptions.push_back(fmt::format("nic_gbps = {} (InfiniBand of {} systems)", usual_gbps, gpu));
  } else {
    a.push_back("--cluster.nic_gbps=" + get("nic_gbps"));
  }
  a.push_back(contains(get("notes") + framework_text, "roce") ? "--cluster.nic_kind=ethernet"
                                                              : "--cluster.nic_kind=infiniband");

  const double tokens = static_cast<double>(global_batch) * count_of(r, "seq_len");
  if (!get("iter_time_s").empty()) {
    out.compared_on = "iter_time_s";
    out.measured_s = positive_of(r, "iter_time_s", "a number of seconds");
  } else if (!get("tokens_per_s_per_gpu").empty()) {
    out.compared_on = "tokens_per_s_per_gpu";
    out.measured_s = tokens / (positive_of(r, "tokens_per_s_per_gpu", "a rate") * gpus);
  } else {
    out.compared_on = "tflops_per_gpu";
    out.measured_s = seconds_from_tflops(r, positive_of(r, "tflops_per_gpu", "a rate"), gpus);
    if (out.measured_s == 0)
      throw InputError(fmt::format("tflops_per_gpu without a FLOP-counting rule dtsim knows (flops_counting = '{}'; "
                                   "known: Eq. 3 96*B*s*l*h^2..., model FLOPs 72*B*s*l*h^2...)",
                                   get("flops_counting")));
  }
  if (!std::isfinite(out.measured_s) || out.measured_s <= 0)
    throw InputError(fmt::format("the measured step time of row {} is not a finite time > 0", get("run_id")));
  return out;
}

}  // namespace dtsim
