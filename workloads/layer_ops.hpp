// The kernels of a decoder layer, the embedding and the LM head on one TP rank, in forward order,
// with FLOPs, HBM bytes, GEMM shapes and the activations each keeps (Korthikanti et al. 2022,
// Sec. 4: s*b*h*(34 + 5*a*s/h) bytes per layer without parallelism or recomputation), and the
// Megatron tensor-parallel collectives between them (all-reduce, or all-gather/reduce-scatter
// with sequence parallelism). backward_of() turns a forward list into its backward list.
// Multi-head latent attention (mla_ops.cpp) and mixture-of-experts MLPs (moe_ops.cpp) replace
// the QKV projection and the MLP of the layers that have them.
#pragma once
#include <vector>

#include "workloads/model.hpp"
#include "workloads/op_spec.hpp"
#include "workloads/parallel_plan.hpp"

namespace dtsim {

class LayerOps {
 public:
  LayerOps(const ModelShape& model, const ParallelPlan& plan)
      : model_(model),
        plan_(plan),
        ep_per_node_(plan.moe_dispatcher == MoeDispatcher::deepep && plan.ep > 1 ? ep_ranks_per_node(plan) : 0) {}

  // Transformer layer `layer` (global index: dense or MoE as ModelShape::is_moe_layer says; from
  // model.layers on, the block of multi-token-prediction module layer - model.layers); with
  // selective recomputation the attention core keeps nothing of its own, with full recomputation
  // only the layer input is kept. materialized: what the layer keeps when it is (re)computed for
  // its backward pass, as without recomputation.
  std::vector<OpSpec> layer_forward(int layer, bool materialized = false) const;
  std::vector<OpSpec> embedding_forward() const;
  std::vector<OpSpec> head_forward() const;
  // A multi-token-prediction module's input (mtp_ops.cpp): embedding of the next tokens, the two
  // norms and the projection of their concatenation, with what they keep. The module's block is
  // layer_forward(model.layers + k), shaped as the last layer; its head is head_forward().
  std::vector<OpSpec> mtp_input() const;
  // The ops that selective recomputation reruns before the backward pass of the layer, from the
  // materialized layer (with what they keep).
  std::vector<OpSpec> attention_core(const std::vector<OpSpec>& layer) const;
  // The ops of the other modules selective recomputation reruns (parallel plan's
  // recompute_modules: layernorm, mla_up_proj, moe_act) at the start of the layer's backward
  // pass, from the materialized layer; the first keeps what they give back until the backward
  // kernels that read it are done.
  std::vector<OpSpec> module_reruns(const std::vector<OpSpec>& layer) const;
  // torchtitan's op-level selective checkpointing: what the layer reruns before its backward pass,
  // from the materialized layer: every compute op but the fused attention, each weight GEMM at half
  // its width (every second matmul: half of their FLOPs). The first keeps what the backward needs
  // beyond `kept` (what the forward kept) until the layer's backward is done.
  std::vector<OpSpec> op_checkpoint_reruns(const std::vector<OpSpec>& layer, double kept) const;
  // Reversed, with backward kernels (GEMMs: input and weight gradients, twice the FLOPs), the
  // conjugate TP collectives and the MoE all-to-alls again. With parallel.tp_overlap a
  // column-parallel GEMM's backward is its two GEMMs with the TP communication overlapping them.
  std::vector<OpSpec> backward_of(const std::vector<OpSpec>& forward) const;
  // A backward pass split in two (ZB-H1): `input` keeps every op but the weight-gradient GEMMs (a
  // whole GEMM's input-gradient half stays), `weight` has those, in order.
  struct WeightSplit {
    std::vector<OpSpec> input, weight;
  };
  static WeightSplit split_weight_gradients(const std::vector<OpSpec>& backward);
  // Activation bytes the weight-gradient GEMMs of these forward ops read: what their weight GEMMs
  // keep (their inputs).
  static double weight_gradient_inputs(const std::vector<OpSpec>& forward);

  // Activation bytes a full-recompute checkpoint keeps: the layer input.
  double checkpoint_bytes() const;
  // Tokens of a micro-batch on one rank: with context parallelism its share of each sequence.
  double tokens() const { return static_cast<double>(plan_.micro_batch) * model_.seq_len / plan_.cp; }
  // Tokens of the sequence-parallel region on one rank (all tokens without SP).
  double sharded_tokens() const { return plan_.sequence_parallel ? tokens() / plan_.tp : tokens(); }

 private:
  double e() const { return plan_.weight_bytes; }
  int t() const { return plan_.tp; }
  OpSpec gemm(OpKind kind, double m, double n, double k, double batch = 1) const;
  void column_parallel_backward(const OpSpec& forward, std::vector<OpSpec>& ops) const;
  void overlap_tp_with_gemms(std::vector<OpSpec>& ops) const;
  OpSpec elementwise(OpKind kind, double bytes, double backward_bytes, double flops) const;
  static OpSpec collective(OpKind kind, Stream stream, Group group, CommKind comm, double bytes);
  OpSpec tp_collective(OpKind kind, CommKind comm, double bytes) const;
  OpSpec layernorm(OpKind kind) const;
  // The collective entering a column-parallel region (SP all-gather) or leaving a row-parallel
  // one (all-reduce, or SP reduce-scatter); none when tp = 1.
  void enter_tp_region(std::vector<OpSpec>& ops) const;
  void leave_tp_region(std::vector<OpSpec>& ops) const;
  // MLA's low-rank query and key/value projections with what they keep (mla_ops.cpp).
  std::vector<OpSpec> mla_projections() const;
  // An MoE layer's MLP inside the TP region: router, gating, dispatch, local experts, combine,
  // shared experts, with what they keep (moe_ops.cpp).
  std::vector<OpSpec> moe_mlp() const;
  OpSpec ep_all_to_all(OpKind kind, double bytes, CommKind comm = CommKind::all_to_all) const;
  // Fused attention with context parallelism (cp_attention.cpp): `whole`, this rank's attention
  // over every key, with the exchange of the other ranks' keys and values (forward) or the
  // backward kernels with the keys and values exchanged again and their gradients reduced.
  std::vector<OpSpec> cp_attention_forward(const OpSpec& whole, double kv_bytes) const;
  void cp_attention_backward(const OpSpec& end, std::vector<OpSpec>& ops) const;
  static OpSpec cp_exchange(OpKind kind, CommKind comm, double bytes, bool async);

  const ModelShape& model_;
  const ParallelPlan& plan_;
  int ep_per_node_;  // DeepEP: ranks of an EP group on each node (ep_ranks_per_node, once per plan)
};

}  // namespace dtsim
