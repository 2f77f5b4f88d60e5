// The scenario keys: each key's name, default (the built-in BLOOM-176B scenario) and help, in file
// order; the one table behind scenario parsing, `dtsim run --help` and docs/scenario-keys.md.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "sim/scenario/frameworks.hpp"
#include "sim/scenario/scenario.hpp"

namespace po = boost::program_options;

namespace dtsim {
namespace {

struct Key {
  const char* name;
  const char* default_value;
  const char* help;
};

// The keys in file order. Units are in the names or the help text.
constexpr Key kKeys[] = {
    {"model.name", "bloom-176b", "catalog model (see README), or 'custom' with the shape keys below"},
    {"model.layers", "", "transformer layers (default: from model.name)"},
    {"model.hidden", "", "hidden size"},
    {"model.heads", "", "attention heads"},
    {"model.kv_heads", "", "key/value heads (GQA/MQA); default = heads"},
    {"model.head_dim", "", "size of one attention head (Q, K and V per head); default = hidden / heads"},
    {"model.ffn_hidden", "", "MLP inner size; default 4 x hidden"},
    {"model.ffn", "", "gelu (2-matrix) | swiglu (3-matrix)"},
    {"model.vocab", "", "vocabulary size"},
    {"model.seq_len", "", "sequence length, tokens"},
    {"model.tied_embeddings", "", "true | false: LM head shares the word embedding"},
    {"model.position_embedding", "", "learned | none | alibi | rotary"},
    {"model.norm", "", "layernorm | rmsnorm (Llama, Qwen, DeepSeek)"},
    {"model.embedding_norm", "", "true | false: layer norm after the embedding (BLOOM)"},
    {"model.bias", "", "true | false: linear layers have biases"},
    {"model.parallel_block", "", "true | false: attention and MLP in parallel on the layer input (GPT-J/NeoX)"},
    {"model.experts", "", "routed experts per MoE layer; 0 = a dense model"},
    {"model.active_experts", "", "routed experts per token (top-k)"},
    {"model.shared_experts", "", "always-on experts per MoE layer"},
    {"model.expert_ffn_hidden", "", "inner size of one (SwiGLU) expert"},
    {"model.dense_layers", "", "leading layers with a dense MLP of ffn_hidden (MoE models)"},
    {"model.moe_layer_step", "",
     "after dense_layers, every moe_layer_step-th layer is MoE and the others dense (Llama 4 Maverick: 2); default 1"},
    {"model.moe_groups", "",
     "MoE: expert groups for node-limited routing (DeepSeek-V3's n_group, Megatron-Core's --moe-router-num-groups); divides experts; default 1"},
    {"model.moe_topk_groups", "",
     "MoE: groups each token picks its experts within (DeepSeek-V3's topk_group, Megatron-Core's --moe-router-group-topk), 1 ... moe_groups; default 1"},
    {"model.sliding_window", "",
     "sliding-window attention: keys each query of a sliding layer reaches (HF config's sliding_window); 0 = none"},
    {"model.sliding_window_pattern", "",
     "which layers slide: N >= 2, of every N layers the first N - 1 (Gemma 3's sliding_window_pattern; GPT-OSS: 2); "
     "0 = every layer"},
    {"model.mtp_layers", "",
     "multi-token-prediction modules after the main model (DeepSeek-V3's num_nextn_predict_layers: 1); 0 = none"},
    {"training.framework", "megatron-core",
     "how the step executes: a framework profile (dtsim catalog frameworks) setting the keys marked 'from the framework'"},
    {"training.global_batch", "2048", "sequences per step"},
    {"training.micro_batch", "2", "sequences per micro-batch"},
    {"training.precision", "bf16",
     "fp32 | tf32 | fp16 | bf16 | fp8 (= fp8_delayed) | fp8_delayed | fp8_current | fp8_blockwise | mxfp8 | nvfp4 "
     "(Transformer Engine's recipes: the linear layers' GEMMs in FP8 or FP4)"},
    {"training.recompute", "full",
     "activation recomputation: none | selective (attention core) | full | selective_op (torchtitan's op-level selective checkpointing, _apply_op_sac: each layer keeps its input, the fused attention's output and every second matmul's output, and reruns the rest of its forward, the other matmuls at half of their FLOPs, before its backward; needs fused attention)"},
    {"training.recompute_modules", "core_attn",
     "what training.recompute = selective reruns, comma-separated (Megatron-Core's --recompute-modules): core_attn (the unfused attention core), layernorm (the norms before the attention and the MLP: the GEMMs after them do not keep their inputs), mla_up_proj (MLA's up-projections: the attention does not keep Q, K, V), moe_act (the routed experts' activation: their second GEMM does not keep its input). DeepSeek-V3 recomputes layernorm and mla_up_proj. The modules other than core_attn rerun at the start of each layer's backward pass"},
    {"training.recompute_num_layers", "0",
     "with training.recompute = full, recompute only the first N layers of each stage's model chunk; the others keep their activations (Megatron-Core's --recompute-method block --recompute-num-layers N; torchtitan's layer-wise selective checkpointing of every second block recomputes as many). 0: every layer"},
    {"training.attention", "", "standard (separate QK^T, softmax, dropout, context kernels) | flash (fused, FlashAttention-2) | flash_triton (fused, Triton kernel) | cudnn (fused, Transformer Engine's choice: cuDNN on Hopper and later, FlashAttention-2 before)"},
    {"training.moe_load_imbalance", "1",
     "MoE: the most loaded EP rank's routed token copies over the mean, >= 1 (1 = force-balanced, as Megatron-Core's --moe-router-force-load-balancing and published benchmarks run); the EP group waits for that rank's grouped GEMMs and all-to-all traffic"},
    {"training.moe_capacity_factor", "0",
     "MoE: 0 = dropless; c > 0 caps each expert at c x its mean token count and drops the rest (Megatron-Core's --moe-expert-capacity-factor), so no rank exceeds c x the mean"},
    {"training.dropout", "",
     "true | false: dropout on attention probabilities and layer outputs (GPT-2/Megatron GPT: 0.1; BLOOM, Llama, MPT: none)"},
    {"training.grad_accumulation", "",
     "fused (weight-gradient GEMMs accumulate into the fp32 main gradient) | separate (a kernel adds each micro-batch's "
     "gradients in the training precision) | fp32_buffer (cast, then added into an fp32 buffer: DeepSpeed's BF16 optimizer)"},
    {"training.fused_kernels", "",
     "true (one kernel per norm, rotary embedding and SwiGLU) | false (PyTorch eager: one kernel per tensor op)"},
    {"training.optimizer_moments", "fp32",
     "fp32 | bf16: the precision of Adam's two moments (bf16: DeepSeek-V3 Sec. 3.3.3, Megatron-Core's --use-precision-aware-optimizer with --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16); the master weights stay fp32"},
    {"training.moe_probs", "",
     "MoE: combine (the un-permutation weights the expert outputs and keeps them, T x top_k x hidden a layer, for the weights' gradient: Megatron-Core before v0.13, DeepSpeed-MoE, MegaBlocks) | activation (the experts' activation applies the weights, and its kept input serves their gradient: Megatron-Core v0.13+)"},
    {"parallel.tp", "auto", "tensor-parallel size, or auto (chosen with pp and dp: the summary says 'chosen')"},
    {"parallel.pp", "auto", "pipeline-parallel stages, or auto"},
    {"parallel.dp", "auto", "data-parallel replicas, or auto"},
    {"parallel.cp", "1",
     "context-parallel size: every sequence split over cp ranks (load-balanced causal chunks); needs flash attention"},
    {"parallel.cp_comm", "p2p",
     "p2p (a ring of K/V sends overlapping the attention: Megatron-Core, Transformer Engine) | all_gather (K/V gathered "
     "before the attention: Llama 3)"},
    {"parallel.ep", "1", "expert-parallel size (MoE): experts sharded over ep consecutive DP ranks; divides dp and experts"},
    {"parallel.etp", "tp",
     "expert tensor-parallel size (MoE; Megatron-Core's --expert-tensor-parallel-size): tp (experts split over TP like "
     "the dense MLP) | 1 (parallel folding: experts whole, the EP group spanning TP x CP x DP ranks; needs sequence "
     "parallelism)"},
    {"parallel.zero_stage", "",
     "0 (DP all-reduce) | 1 (optimizer state sharded: distributed optimizer) | 2 (+ gradients) | 3 (+ parameters: FSDP)"},
    {"parallel.schedule", "1f1b",
     "pipeline schedule: 1f1b | gpipe | interleaved | dualpipe | dualpipev | zbh1. dualpipe: DeepSeek-V3's DualPipe (deepseek-ai/DualPipe): every rank holds its own stage and the mirror one (pp - 1 - s: two stages' weights, gradients and optimizer state, whose gradients the pair sums), half the micro-batches enter at each end, and a forward and a backward pass of the two directions run side by side, each one's all-to-alls and TP collectives beside the other's kernels; needs an even pp and an even count of at least 2 pp micro-batches. Its zero-bubble weight-gradient passes run inside their backward passes. dualpipev: its V-shaped variant (dualpipev.py): rank r holds model stages r and 2 pp - 1 - r of 2 pp (one copy of the weights, its stage_layers split in two), every micro-batch enters at rank 0, turns on the last rank and ends at the head on rank 0; needs at least 2 pp micro-batches. zbh1: the zero-bubble ZB-H1 schedule (Qi et al. 2024, Sec. 3.1): every backward pass runs as B (input gradients, sent on at once) and W (the weight-gradient GEMMs, their accumulation and reduction) later, stage i running F(x), B(x - pp + 1 + i), W(x - pp + 1) for x = 0, 1, ...; idles (pp - 1)(F + B - W) per stage where 1F1B idles (pp - 1)(F + B + W), at 1F1B's peak memory (the inputs of the weight GEMMs wait for W)"},
    {"parallel.virtual_stages", "1", "model chunks per pipeline stage (interleaved schedule)"},
    {"parallel.microbatch_group", "auto",
     "interleaved schedule: micro-batches each model chunk runs back to back before the next chunk (Megatron-Core's --microbatch-group-size-per-virtual-pipeline-stage), from pp to the micro-batches per step, the remainder 0 or >= pp; auto = pp. A step's micro-batches need not be a multiple of pp (Llama 3)"},
    {"parallel.sequence_parallel", "", "true | false: Megatron sequence parallelism over the TP group"},
    {"parallel.moe_dispatcher", "alltoall",
     "alltoall | deepep: MoE token dispatch over the EP group as Megatron-Core's alltoall dispatcher (NCCL all-to-all of every token copy) or its flex dispatcher with --moe-enable-deepep (DeepEP: once per node over the network, then NVLink)"},
    {"parallel.moe_shared_expert_overlap", "false",
     "true | false: MoE with shared experts and ep > 1: the dispatch all-to-all runs beside the shared experts' first GEMM and activation, the combine beside their second GEMM, forward and backward (Megatron-Core's --moe-shared-expert-overlap)"},
    {"parallel.moe_a2a_overlap", "false",
     "true | false: MoE with ep > 1: Megatron-Core's EP-overlapped 1F1B (--overlap-moe-expert-parallel-comm; Megatron-Bridge's moe_a2a_overlap): one more warm-up forward pass, then each forward pass runs beside the backward pass of an earlier micro-batch, one's all-to-alls beside the other's kernels. Needs pp = 1 or the interleaved schedule, and no full recomputation"},
    {"parallel.tp_overlap", "",
     "false | true | userbuffers: true overlaps the backward pass's TP communication with the weight- and input-gradient GEMMs (Megatron's async TP); userbuffers adds Transformer Engine's comm-GEMM overlap (Megatron-Core --tp-comm-overlap), with sequence parallelism each all-gather feeding the QKV or MLP-input GEMM and each reduce-scatter after the output-projection or MLP-output GEMM beside that GEMM, forward and backward"},
    {"parallel.dp_overlap", "", "true | false: reduce gradients in buckets during the last backward pass"},
    {"parallel.grad_reduce_fp32", "",
     "true | false: reduce the fp32 gradients over DP (Megatron and DeepSpeed with bf16, DDP with AMP, FSDP reduce_dtype fp32); false: in the training precision (Megatron fp16, FSDP with a bf16 reduce_dtype)"},
    {"parallel.dp_bucket_mb", "25", "gradient bucket size, MB (1e6 bytes), when dp_overlap = true"},
    {"parallel.stage_layers", "auto",
     "transformer layers per stage, comma-separated (e.g. 5,6,6,5), or auto (see README)"},
    {"parallel.rank_order", "tp,cp,dp,pp", "rank-to-GPU mapping, innermost dimension first (cp may be left out: it goes right outside tp)"},
    {"cluster.gpu", "A100-SXM4-80GB", "GPU catalog name (see README)"},
    {"cluster.nodes", "48", "nodes"},
    {"cluster.gpus_per_node", "8", "GPUs per node (one NVLink domain); nvl72: 72 unless given"},
    {"cluster.node_kind", "nvswitch",
     "nvswitch (HGX/DGX: 8 GPUs on NVSwitches) | pcie | nvlink_pairs | nvl72 (a rack: one NVLink 5 domain of 72 GPUs, a NIC per GPU)"},
    {"cluster.nvlink_GBps", "0", "NVLink GB/s per GPU per direction; 0 = from the GPU catalog"},
    {"cluster.pcie_gen", "4", "pcie boxes: PCIe generation 3..6 of the x16 links (NVSwitch nodes use the GPU's own)"},
    {"cluster.gpus_per_pcie_switch", "2", "pcie boxes: GPUs under one PCIe switch"},
    {"cluster.cpu_sockets", "1", "pcie boxes: CPU sockets, 1 or 2"},
    {"cluster.p2p", "true", "pcie boxes: true = GPU peer-to-peer through the switch"},
    {"cluster.nics_per_node", "4", "NICs per node (multi-node); nvl72: one per GPU unless given"},
    {"cluster.nic_gbps", "100", "Gbit/s per NIC; nvl72: 400 unless given"},
    {"cluster.nic_kind", "omnipath", "infiniband | omnipath | ethernet; nvl72: infiniband unless given"},
    {"cluster.oversubscription", "1", "leaf (or rail) to spine oversubscription ratio, >= 1"},
    {"cluster.spines", "0",
     "fat_tree, rail: 0 = one collapsed spine (ideal ECMP) | N explicit spine switches, routes spread by an ECMP hash"},
    {"cluster.fabric", "fat_tree", "fat_tree (32-port leaves, one spine) | rail (NIC k of every node on rail switch k) | clos3 (ToR, pod, core)"},
    {"cluster.nic", "", "named NIC, replacing nic_kind and nic_gbps: edr, hdr, ndr, xdr, opa100, roce100, roce200, roce400"},
    {"cluster.gpus_per_tor", "16", "clos3: GPUs whose NICs share a top-of-rack switch"},
    {"cluster.pod_gpus", "3072", "clos3: GPUs per pod (full bisection inside a pod)"},
    {"cluster.pod_oversubscription", "1", "clos3: pod-to-core oversubscription ratio, >= 1"},
    {"cluster.slow_gpus", "", "per-GPU compute speed factors GPU:FACTOR,... (0 < factor), e.g. 17:0.8,301:0.9"},
    {"cluster.degraded_links", "",
     "per-link bandwidth factors DEVICE--DEVICE:FACTOR,... (both directions), e.g. node3.nic0--tor1:0.5"},
    {"cluster.nccl_protocol", "auto", "auto (fastest per collective) | ll | ll128 | simple"},
    {"cluster.nccl_version", "",
     "the NCCL release the collectives follow, e.g. 2.18 or 2.27.7 (2.8 to 2.30): its protocol latencies and NVLS (dtsim catalog nccl)"},
    {"cluster.nccl_algorithm", "auto", "auto (fastest per collective) | ring | tree (all-reduce across nodes) | hierarchical (across nodes) | nvls (inside an NVLink domain of NVLink 4+ GPUs on NVLink switches) | nvls_tree (all-reduce: NVLS inside such domains, trees across them)"},
    {"cluster.topology_file", "", "GraphViz DOT file describing the machine (replaces the builder)"},
    {"output.trace", "", "HDF5 trace path; empty = none (--output overrides)"},
    {"output.trace_detail", "stages", "summary | stages (one rank per pipeline stage) | full (every rank; 'all' too)"},
    {"output.detail", "", "the same as output.trace_detail (which it overrides when given)"},
    {"inference.weights", "bf16",
     "dtsim serve: weight format of the linear layers, fp32 | fp16 | bf16 | fp8 (one fp32 scale per 128 x 128 block) | "
     "int8 | int4 (one fp16 scale per 128 weights) | q4_0 | q4_k_m (llama.cpp's GGUF), counted as dtsim fit counts them"},
    {"inference.kv_cache", "bf16", "dtsim serve: KV-cache precision, bf16 | fp16 | fp8"},
    {"inference.batch", "1", "dtsim serve: sequences decoded together"},
    {"inference.prompt_tokens", "1024", "dtsim serve: prompt tokens per sequence (prefill)"},
    {"inference.output_tokens", "256", "dtsim serve: generated tokens per sequence (decode)"},
    {"inference.cuda_graphs", "true",
     "dtsim serve: true = decode steps replayed as CUDA graphs (one launch per step, not per kernel)"},
    {"inference.speculative", "none",
     "dtsim serve: speculative decoding, none | mtp (the model's multi-token-prediction modules draft, run once per "
     "draft token, as vLLM's deepseek_mtp) | ngram (prompt lookup: drafts cost no GPU time)"},
    {"inference.speculative_tokens", "1",
     "dtsim serve: draft tokens proposed per step (1-8); each step verifies them in one pass of draft + 1 tokens per "
     "sequence"},
    {"inference.acceptance", "auto",
     "dtsim serve: probability that a draft token is accepted, each independently (0-1); auto: 0.85 with mtp "
     "(DeepSeek-V3 report Sec. 5.4.3: the second token's acceptance 85-90 %), required with ngram"},
};

}  // namespace

po::options_description scenario_options() {
  po::options_description desc("Scenario keys ([section] key = value in the file, or --section.key=value)");
  static const std::vector<std::string> help = [] {
    std::vector<std::string> out;
    for (const Key& k : kKeys) {
      const auto& fw = framework_keys();
      const bool from_framework = std::find(fw.begin(), fw.end(), k.name) != fw.end();
      out.push_back(from_framework ? fmt::format("{} (default: from training.framework)", k.help) : k.help);
    }
    return out;
  }();
  for (std::size_t i = 0; i < std::size(kKeys); ++i)
    desc.add_options()(kKeys[i].name, po::value<std::string>()->default_value(kKeys[i].default_value), help[i].c_str());
  return desc;
}

std::vector<std::string> scenario_key_names() {
  const po::options_description keys = scenario_options();  // alive while its options are read
  std::vector<std::string> names;
  for (const auto& option : keys.options()) names.push_back(option->long_name());
  return names;
}

}  // namespace dtsim
