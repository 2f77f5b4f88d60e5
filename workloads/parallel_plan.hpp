// The parallel layout and training setup of a job: TP x CP x PP x DP (and EP within DP), micro-batches, pipeline stage
// sizes and schedule, sequence parallelism, ZeRO stage / FSDP, DP overlap, recomputation,
// attention kernel, precision, and the mapping of ranks onto GPUs.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/model.hpp"
#include "workloads/moe_dispatch.hpp"
#include "workloads/precision_recipe.hpp"

namespace dtsim {

// selective: the attention core (scores, softmax, dropout, context) is recomputed in the
// backward pass instead of stored (Korthikanti et al. 2022); full: only each layer's input is kept;
// selective_op: torchtitan's op-level selective checkpointing (_apply_op_sac): each layer keeps its
// input, the fused attention's output and every second matmul's output, and reruns the rest of its
// forward (norms, rotary, activations, the other matmuls) before its backward.
enum class Recompute { none, selective, full, selective_op };
// What selective recomputation reruns (Megatron-Core's --recompute-modules): core_attn, the
// unfused attention core; layernorm, the norms before the attention and the MLP (their outputs,
// the GEMMs' inputs, are not kept); mla_up_proj, MLA's query and key/value up-projections (the
// attention's Q, K and V are not kept); moe_act, the routed experts' activation (the input of
// their second GEMM is not kept). DeepSeek-V3 recomputes RMSNorm and the MLA up-projections.
enum class RecomputeModule : std::uint8_t { none, core_attn, layernorm, mla_up_proj, moe_act };
// A set of modules as bits (1 << module); parses "core_attn,layernorm" and names it back.
unsigned parse_recompute_modules(std::string_view text, std::string_view key);
std::string recompute_modules_name(unsigned modules);
constexpr unsigned module_bit(RecomputeModule m) { return 1u << static_cast<unsigned>(m); }
// interleaved: Megatron's interleaved 1F1B with parallel.virtual_stages model chunks per stage.
// dualpipe: DeepSeek-V3's bidirectional schedule; every rank holds two model stages (its own and
// the mirror one, pp - 1 - stage), micro-batches enter from both ends, and a forward and a
// backward pass of the two directions run side by side, each one's communication beside the
// other's computation. dualpipev: its V-shaped variant (deepseek-ai/DualPipe, dualpipev.py): the
// model cut into 2 pp stages, rank r holding stage r (chunk 0) and 2 pp - 1 - r (chunk 1); every
// micro-batch enters at rank 0, runs down chunk 0, turns on the last rank and runs back up
// chunk 1 to the head on rank 0; one copy of the weights, the same overlapped pairs. zbh1: the
// zero-bubble ZB-H1 schedule (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", Sec. 3.1): each
// backward pass split into the input-gradient pass B and the weight-gradient pass W, the W passes
// deferred into the pipeline's idle time at 1F1B's peak memory.
enum class Schedule { one_f_one_b, gpipe, interleaved, dualpipe, dualpipev, zbh1 };
// standard: QK^T, softmax, dropout and the context GEMM as separate kernels (Megatron);
// flash: one fused kernel that keeps no score-sized activations (FlashAttention-2);
// flash_triton: the same algorithm in OpenAI Triton (flash_attn_triton), slower per FLOP;
// cudnn: Transformer Engine's DotProductAttention as it picks its backend: cuDNN's fused attention
// on Hopper and later, FlashAttention-2 before (the same activations as flash).
enum class Attention { standard, flash, flash_triton, cudnn };
bool fused_attention(Attention a);
// How each micro-batch's weight gradients reach the gradient buffer: fused into the
// weight-gradient GEMM, which accumulates into the fp32 main gradient (Megatron's
// --gradient-accumulation-fusion); separate, a kernel of its own adding them in the training
// precision (Megatron before 2022, PyTorch autograd, FSDP, DeepSpeed ZeRO); fp32_buffer, cast to
// fp32 and added into an fp32 buffer (DeepSpeed's BF16_Optimizer: hp_grad.add_(lp_grad.float())).
enum class GradAccumulation { fused, separate, fp32_buffer };
// How TP communication overlaps computation (parallel.tp_overlap). none: every TP collective
// blocks the layer. backward: Megatron's asynchronous TP communication of the backward pass, the
// input-gradient all-reduce (or, with SP, its reduce-scatter and the input's re-gather) beside the
// weight-gradient and input-gradient GEMMs (written `true`). userbuffers: Transformer Engine's
// comm-GEMM overlap (Megatron-Core --tp-comm-overlap) on top of that: with SP, each all-gather
// feeding a QKV or MLP-input GEMM and each reduce-scatter after an output-projection or
// MLP-output GEMM runs beside that GEMM (ring exchange / pipelined chunks), forward and backward.
enum class TpOverlap { none, backward, userbuffers };

Recompute parse_recompute(std::string_view text, std::string_view key);
Schedule parse_schedule(std::string_view text, std::string_view key);
Attention parse_attention(std::string_view text, std::string_view key);
GradAccumulation parse_grad_accumulation(std::string_view text, std::string_view key);
TpOverlap parse_tp_overlap(std::string_view text, std::string_view key);
std::string_view tp_overlap_name(TpOverlap t);
// Bytes per Adam moment that training.optimizer_moments names: fp32 (4) or bf16 (2).
double parse_optimizer_moments(std::string_view text, std::string_view key);
// How the context-parallel ranks exchange keys and values: p2p, a ring of sends overlapped with
// the attention of the chunk in hand (Megatron-Core / Transformer Engine's default cp_comm_type);
// all_gather, the whole K and V gathered before the attention (Llama 3's choice).
enum class CpComm { p2p, all_gather };
CpComm parse_cp_comm(std::string_view text, std::string_view key);
std::string_view cp_comm_name(CpComm c);
std::string_view recompute_name(Recompute r);
std::string_view schedule_name(Schedule s);
std::string_view attention_name(Attention a);
std::string_view grad_accumulation_name(GradAccumulation g);

struct RankCoords {
  int dp = 0, tp = 0, pp = 0, cp = 0;
};

struct ParallelPlan {
  int tp = 1, pp = 1, dp = 1;
  // Context parallelism: every sequence split over cp ranks, each holding two of its 2 cp chunks
  // (chunk i and 2 cp - 1 - i, so causal attention costs every rank the same); the ranks exchange
  // keys and values for attention (cp_comm) and reduce gradients together with the DP replicas.
  int cp = 1;
  CpComm cp_comm = CpComm::p2p;
  // Expert parallelism (mixture-of-experts models): the routed experts of a layer are sharded over
  // ep consecutive DP ranks (carved out of DP, as Megatron-LM and DeepSpeed do), which exchange
  // tokens by all-to-all; ep divides dp and the expert count.
  int ep = 1;
  // Expert tensor parallelism (Megatron-Core's --expert-tensor-parallel-size): 0 (= tp), the
  // experts split over TP like the dense MLP and each EP group ep DP ranks at one TP rank; or 1
  // with tp > 1, Megatron-Core's "parallel folding": the experts whole, each EP group ep
  // consecutive ranks of the stage's TP x CP x DP block (TP innermost, as Megatron-Core lays out
  // its expert ranks), every rank dispatching its own sequence-parallel share of the tokens.
  int etp = 0;
  int micro_batch = 1;               // sequences per micro-batch
  int global_batch = 1;              // sequences per step, = micro_batch x dp x micro-batches
  // 0: DP all-reduce; 1: optimizer state sharded (= Megatron's distributed optimizer);
  // 2: gradients too; 3: parameters too (FSDP: gathered per layer on the timeline).
  int zero_stage = 0;
  Recompute recompute = Recompute::none;
  unsigned recompute_modules = module_bit(RecomputeModule::core_attn);  // selective: what it reruns
  // Full recomputation of only the first N layers of each stage's model chunk, the others keeping
  // their activations (Megatron-Core's --recompute-method block --recompute-num-layers N); 0: all.
  int recompute_num_layers = 0;
  // What layer `layer` recomputes: recompute, but none for a layer past the first
  // recompute_num_layers of its chunk. stage_layers must be set (validate_plan).
  Recompute layer_recompute(int layer) const;
  bool recomputes(RecomputeModule m) const { return recompute == Recompute::selective && (recompute_modules & module_bit(m)); }
  Schedule schedule = Schedule::one_f_one_b;
  int virtual_stages = 1;            // model chunks per pipeline stage (interleaved schedule)
  // Interleaved schedule: micro-batches each model chunk runs back to back before the next chunk
  // (Megatron-Core's microbatch_group_size_per_vp_stage); 0 = pp, its default.
  int microbatch_group = 0;
  int microbatch_group_or_pp() const { return microbatch_group > 0 ? microbatch_group : pp; }
  bool sequence_parallel = false;    // Megatron SP: norms/dropout sharded, TP all-gather + reduce-scatter
  // TP communication overlapped with the GEMMs (TpOverlap); a GEMM beside a collective runs on
  // the SMs the NCCL kernel leaves it (ComputeModel::comm_overlap_slowdown).
  TpOverlap tp_overlap = TpOverlap::none;
  // MoE with shared experts (Megatron-Core's --moe-shared-expert-overlap): the dispatch all-to-all
  // runs beside the shared experts' first GEMM and activation, the combine beside their second
  // GEMM, in the forward pass and mirrored in the backward.
  bool moe_shared_expert_overlap = false;
  // Megatron-Core's --overlap-moe-expert-parallel-comm (Megatron-Bridge's moe_a2a_overlap): the
  // 1F1B steady state runs each forward pass beside the backward pass of an earlier micro-batch,
  // one's all-to-alls beside the other's kernels (pipeline_schedule.cpp).
  bool moe_a2a_overlap = false;
  // How the MoE tokens travel (workloads/moe_dispatch.hpp).
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  // Where the router's weights apply, and so what their gradient keeps (workloads/moe_dispatch.hpp).
  MoeProbs moe_probs = MoeProbs::combine;
  // GPUs per node, rank r running on GPU r: where the EP groups' ranks sit (0: unplaced, a
  // program built without a cluster, where only the alltoall dispatcher runs).
  int gpus_per_node = 0;
  // MoE expert load: the most loaded EP rank's routed token copies over the mean (1: balanced),
  // and the capacity factor that caps every expert at that multiple of its mean (0: dropless).
  // The EP group waits for its most loaded rank, whose share every rank's program carries.
  double moe_load_imbalance = 1;
  double moe_capacity_factor = 0;
  double moe_hot_load() const {
    return moe_capacity_factor > 0 ? std::min(moe_load_imbalance, moe_capacity_factor) : moe_load_imbalance;
  }
  bool dp_overlap = true;            // gradient reduction in buckets during the last backward pass
  double dp_bucket_bytes = 25e6;     // gradient bytes per DP bucket (PyTorch DDP's 25 MB)
  // Gradients reduced in fp32 (FSDP's reduce_dtype = fp32, Megatron's
  // --accumulate-allreduce-grads-in-fp32) instead of the training precision. This and `dropout`
  // default to the closed forms' setting (Megatron fp16 GPT, as in ZeRO's and Korthikanti's
  // formulas); the scenario keys default to how LLMs train today (sim/scenario/scenario.cpp).
  bool grad_reduce_fp32 = false;
  Attention attention = Attention::standard;
  bool dropout = true;               // dropout on attention probabilities and layer outputs
  double weight_bytes = 2;           // bytes per parameter/activation element (bf16/fp16: 2)
  Recipe recipe = Recipe::none;      // FP8/FP4 recipe of the linear layers' GEMMs (training.precision)
  bool loss_scaling = false;         // fp16: gradients are unscaled and checked for inf/NaN each step
  // Bytes of each of Adam's moments per parameter: 4 (fp32), or 2 with BF16 moments (DeepSeek-V3
  // Sec. 3.3.3; Megatron-Core's --use-precision-aware-optimizer with --exp-avg-dtype and
  // --exp-avg-sq-dtype bf16). The fp32 master weights stay.
  double moment_bytes = 4;
  GradAccumulation grad_accumulation = GradAccumulation::fused;
  // Elementwise kernels fused as Megatron, Transformer Engine and torch.compile run them (one
  // kernel per RMSNorm, rotary embedding and SwiGLU); false: PyTorch eager, one kernel per
  // tensor op with fp32 intermediates (torchtitan's RMSNorm and apply_rotary_emb).
  bool fused_kernels = true;
  std::vector<int> stage_layers;     // transformer layers per pipeline stage (size pp)
  // Dimension order from innermost to outermost; default Megatron-Core's tp, cp, dp, pp.
  std::array<char, 4> order = {'t', 'c', 'd', 'p'};

  int num_ranks() const { return tp * cp * pp * dp; }
  // Ranks that hold the same weights and reduce their gradients together: DP x CP (Megatron's
  // data-parallel group with context parallelism); ZeRO shards over them.
  int grad_ranks() const { return dp * cp; }
  // The experts' TP size, and whether the MoE layers fold TP into their EP groups (etp = 1 < tp).
  int expert_tp() const { return etp > 0 ? etp : tp; }
  bool expert_folding() const { return expert_tp() < tp; }
  // DP ranks holding the same experts (without folding): the group that reduces their gradients.
  int expert_dp() const { return dp / ep; }
  // Ranks reducing the same experts' gradients: the expert-DP ranks of every CP rank; with
  // folding, every rank of the stage's TP x CP x DP block holding the same experts.
  int expert_grad_ranks() const { return tp * cp * dp / (expert_tp() * ep); }
  int micro_batches() const { return global_batch / (micro_batch * dp); }
  RankCoords coords(int rank) const;
  int rank_of(RankCoords c) const;
  int first_layer(int stage) const;  // global index of the stage's first transformer layer
  // Layers of model chunk `chunk` of `stage` as [first, first + count): with interleaving the
  // chunks of all stages take turns (chunk c of stage s is the (c x pp + s)-th block of layers).
  // A stage whose layers do not divide by virtual_stages gives its extra layers to the chunks
  // away from the embedding and the head: the last chunks of the first stage, the first chunks
  // of the others (Llama 3's 405B run: one layer fewer on the first and the last stage).
  // DualPipe: chunk 0 is the stage's own layers, run from the first stage to the last; chunk 1 the
  // mirror stage's (pp - 1 - stage), run from the last stage to the first. DualPipeV: the rank's
  // stage_layers split in two (chunk 0 the larger half), chunk 0 the model's stage `stage` of 2 pp
  // and chunk 1 its stage 2 pp - 1 - stage.
  int chunk_first_layer(int stage, int chunk) const;
  int chunk_layers(int stage, int chunk) const;
  // DualPipe or its V: two chunks per rank, chunk 1 run from the last rank to the first.
  bool dualpipe_family() const { return schedule == Schedule::dualpipe || schedule == Schedule::dualpipev; }
  // The backward pass runs as an input-gradient pass and a separate weight-gradient pass (ZB-H1).
  bool splits_weight_gradients() const { return schedule == Schedule::zbh1; }
  // Model chunks per stage: virtual_stages, two under DualPipe and DualPipeV.
  int chunks() const { return dualpipe_family() ? 2 : virtual_stages; }
  // The model stage whose layers chunk `chunk` of `stage` runs (DualPipe's chunk 1: the mirror).
  int chunk_stage(int stage, int chunk) const { return schedule == Schedule::dualpipe && chunk == 1 ? pp - 1 - stage : stage; }
  // Whether the chunk's passes flow from the last stage to the first (chunk 1 of DualPipe and V).
  bool chunk_reversed(int chunk) const { return dualpipe_family() && chunk == 1; }
  // DualPipeV's turn: the last rank hands chunk 0's output to its own chunk 1 (and the gradient
  // back), with no pipeline message.
  bool turns_locally(int stage) const { return schedule == Schedule::dualpipev && stage == pp - 1; }
  // Whether the chunk holds the embedding (its passes start the model) or the LM head (they end it).
  bool holds_embedding(int stage, int chunk) const {
    if (schedule == Schedule::dualpipev) return stage == 0 && chunk == 0;
    return chunk_stage(stage, chunk) == 0 && (chunk == 0 || chunk_reversed(chunk));
  }
  bool holds_head(int stage, int chunk) const {
    if (schedule == Schedule::dualpipev) return stage == 0 && chunk == 1;
    return chunk_stage(stage, chunk) == pp - 1 && (chunk == chunks() - 1 || schedule == Schedule::dualpipe);
  }
  // Whether the embedding and the head sit on different ranks (a tied embedding is then copied).
  bool head_apart_from_embedding() const { return pp > 1 && schedule != Schedule::dualpipev; }
  // DualPipe: micro-batches [0, m/2) enter at the first stage, [m/2, m) at the last; the last
  // micro-batch of the chunk's direction is the one whose backward pass ends its gradients.
  int last_micro_batch(int chunk) const {
    return schedule == Schedule::dualpipe && chunk == 0 ? micro_batches() / 2 - 1 : micro_batches() - 1;
  }
};

// Parses a rank order, innermost first: "tp,cp,dp,pp", or three of them ("tp,dp,pp"), cp then
// going right outside tp; throws InputError naming the key.
std::array<char, 4> parse_rank_order(std::string_view text, std::string_view key);

// The members of the EP group (expert_dp false) or of the expert-DP group (true) of the rank at
// c, first the group's first rank: ParallelPlan::ep's layout, with folding over the stage's
// TP x CP x DP block.
std::vector<RankCoords> expert_group(const ParallelPlan& plan, RankCoords c, bool expert_dp);
RankCoords expert_group_first(const ParallelPlan& plan, RankCoords c, bool expert_dp);

// Ranks of each EP group on one node (plan.gpus_per_node GPUs, rank r on GPU r), or 0 when the
// plan is unplaced or the groups do not hold the same number on every node they touch.
int ep_ranks_per_node(const ParallelPlan& plan);

// Checks parallel.cp (given as `key`) against the sequence length and the attention kernel.
void validate_context_parallel(const ParallelPlan& plan, const ModelShape& model, std::string_view key);

// Checks the plan against the model and GPU count; throws InputError naming the key, the value
// and what would be valid. Fills stage_layers with an even split when it is empty.
void validate_plan(ParallelPlan& plan, const ModelShape& model, int num_gpus);

// Ops of the whole program the builder makes for the plan: a step is simulated op by op, about 45
// per layer and micro-batch, the embedding and the head counted as a layer on each stage.
double estimated_program_ops(const ParallelPlan& plan, const ModelShape& model);

}  // namespace dtsim
