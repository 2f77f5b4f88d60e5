// A Program says what every rank computes, stores and sends: for each pipeline stage one op list
// (structure of arrays) shared by all ranks of that stage, since their TP and DP peers run the
// same ops. Ops on one stream run in list order; cross-stream order is given by explicit
// dependencies on earlier ops. Communication ops name their group (TP, DP, or the neighbouring
// pipeline stage); the engine resolves groups to ranks with the plan's coordinates.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/model.hpp"
#include "workloads/parallel_plan.hpp"

namespace dtsim {

// cp: the context-parallel exchange of keys and values, beside the attention it feeds.
enum class Stream : std::uint8_t { compute, tp, pp_send, pp_recv, dp, cp };
constexpr int kNumStreams = 6;
enum class Phase : std::uint8_t { forward, backward, recompute, optimizer };
// two_hop: DeepEP's dispatch (or combine) over an EP group (workloads/moe_dispatch.hpp): each rank
// sends `bytes` in equal parts to the group's ranks with its in-node index on the other nodes
// (the network) and, at the same time, `forward_bytes` in equal parts to the group's other ranks
// in its node (NVLink: what it forwards), as DeepEP pipelines the two hops.
enum class CommKind : std::uint8_t { none, all_reduce, reduce_scatter, all_gather, send, recv, broadcast, all_to_all, two_hop };
// The MoE token exchanges: all-to-all, or the two-hop dispatch.
constexpr bool is_all_to_all(CommKind k) { return k == CommKind::all_to_all || k == CommKind::two_hop; }
// embedding: the first and last pipeline stages, which both hold the tied word embedding.
// ep: the expert-parallel group (parallel.ep consecutive DP ranks) of the MoE all-to-alls;
// expert_dp: the DP ranks holding the same experts (dp / ep of them), which reduce their gradients.
// dp and expert_dp span the context-parallel ranks too (they reduce the same gradients); cp: the
// ranks sharing one sequence; pp_mirror (DualPipe): the rank that holds the same two model stages
// the other way round (stage pp - 1 - s), whose gradients of them it sums.
enum class Group : std::uint8_t { none, tp, dp, pp_next, pp_prev, embedding, ep, expert_dp, cp, pp_mirror };
enum class MemCategory : std::uint8_t { weights, gradients, optimizer, activations, buffers };
constexpr int kNumMemCategories = 5;

enum class OpKind : std::int16_t {
  embedding, embedding_norm, layernorm, qkv_proj, attn_scores, softmax, attn_dropout, attn_context,
  flash_attention, out_proj, dropout_residual, fc1, activation, fc2, final_norm, lm_head, loss,
  tp_all_reduce, tp_all_gather, tp_reduce_scatter, pp_send, pp_recv, pp_all_gather, dp_all_reduce, dp_reduce_scatter,
  dp_all_gather, param_all_gather, optimizer_step, embedding_all_reduce, grad_accumulate,
  // Multi-head latent attention (mla_ops) and mixture-of-experts layers (moe_ops).
  mla_down_proj, latent_norm, mla_q_up, mla_kv_up, router, gating, moe_permute, moe_dispatch, expert_fc1,
  expert_activation, expert_fc2, moe_combine, moe_unpermute, shared_fc1, shared_activation, shared_fc2,
  expert_dp_all_reduce, expert_dp_reduce_scatter, expert_dp_all_gather,
  rotary,  // rotary position embedding of the queries and keys
  // Context parallelism: the keys and values of the other CP ranks' chunks gathered (forward, and
  // again for the backward pass), their gradients reduced back to their owners.
  cp_kv_all_gather, cp_dkv_reduce_scatter,
  // DualPipe: the gradients of the two stages a rank shares with its mirror rank, summed.
  mirror_all_reduce,
  // Multi-token prediction: the projection of a module's concatenated norms (mtp_ops).
  mtp_proj
};
constexpr int kNumOpKinds = static_cast<int>(OpKind::mtp_proj) + 1;

// The linear layers' GEMMs (QKV, output projection, MLP, MLA projections, routed and shared
// experts): what a low-precision recipe runs in FP8 or FP4; attention, the router and the LM head
// stay in BF16 (Transformer Engine's te.Linear / LayerNormLinear / LayerNormMLP scope).
constexpr bool linear_layer_gemm(OpKind kind) {
  switch (kind) {
    case OpKind::qkv_proj: case OpKind::out_proj: case OpKind::fc1: case OpKind::fc2:
    case OpKind::mla_down_proj: case OpKind::mla_q_up: case OpKind::mla_kv_up:
    case OpKind::expert_fc1: case OpKind::expert_fc2: case OpKind::shared_fc1: case OpKind::shared_fc2:
    case OpKind::mtp_proj:
      return true;
    default:
      return false;
  }
}

// The GEMMs with a weight operand: the linear layers', the router's and the LM head's (what a
// decode step reads from HBM, and what a weight-gradient pass computes).
constexpr bool weight_gemm(OpKind kind) {
  return linear_layer_gemm(kind) || kind == OpKind::router || kind == OpKind::lm_head;
}

// A memory change of an op, when it starts or when it ends (bytes; negative frees).
struct MemChange {
  MemCategory category = MemCategory::activations;
  bool at_end = false;
  double bytes = 0;
};

std::string_view op_kind_name(OpKind k);
std::string_view stream_name(Stream s);
std::string_view phase_name(Phase p);
std::string_view mem_category_name(MemCategory c);
// Comma-separated names in enum order (position = value), for trace attributes.
std::string op_kind_names();
std::string stream_names();
std::string phase_names();

// A backward GEMM is its input-gradient and weight-gradient GEMMs; `whole` times both in one op.
enum class GemmPart : std::uint8_t { whole, input_grad, weight_grad };

struct StageProgram {
  // One entry per op, in program order.
  std::vector<OpKind> kind;
  std::vector<Stream> stream;
  std::vector<Phase> phase;
  std::vector<std::int32_t> layer;        // global transformer layer, -1 when none
  std::vector<std::int32_t> micro_batch;  // -1 when none
  std::vector<double> flops;              // per rank
  std::vector<double> bytes;              // HBM bytes (compute) or message bytes (communication)
  std::vector<double> forward_bytes;      // CommKind::two_hop: the NVLink bytes (bytes: the network's); else 0
  std::vector<std::int32_t> gemm_m, gemm_n, gemm_k, gemm_batch;  // 0 for non-GEMM ops
  std::vector<GemmPart> gemm_part;
  std::vector<CommKind> comm;
  std::vector<Group> group;
  std::vector<char> sm_free;              // a collective that leaves every SM to the kernels beside it
  // Memory changes (CSR): op i changes mem_changes[mem_begin[i] .. mem_begin[i+1]).
  std::vector<std::int32_t> mem_begin{0};
  std::vector<MemChange> mem_changes;
  // Dependencies (CSR): op i waits for deps[dep_begin[i] .. dep_begin[i+1]).
  std::vector<std::int32_t> dep_begin{0};
  std::vector<std::int32_t> deps;
  // Ops of each stream in execution order (pp_recv ops are not here: a receive completes when
  // its message arrives, so it never waits for a stream). Receives in arrival order per peer:
  std::vector<std::int32_t> stream_ops[kNumStreams];
  std::vector<std::int32_t> recv_from_prev, recv_from_next;

  // Static memory of every rank of the stage (allocated before the step), bytes per category.
  double static_bytes[kNumMemCategories] = {};

  int size() const { return static_cast<int>(kind.size()); }
};

struct Program {
  ParallelPlan plan;
  ModelShape model;
  std::vector<StageProgram> stages;  // size plan.pp
  double model_flops_per_step = 0;   // FLOPs of forward + backward (no recompute), whole job
};

// Builds the program of one training step. plan must have passed validate_plan.
Program build_program(const ModelShape& model, const ParallelPlan& plan);

}  // namespace dtsim
