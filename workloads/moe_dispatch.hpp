// How an MoE layer's tokens reach their experts: the dispatcher (Megatron-Core's all-to-all, or
// DeepEP's two-hop dispatch), and what node-limited routing leaves each token to reach. The
// expected count of distinct nodes (or ranks) a token's top-k experts lie on gives the bytes of
// each hop of the two-hop dispatch (docs/model.md, "Mixture of experts").
#pragma once
#include <string_view>

#include "workloads/model.hpp"

namespace dtsim {

// alltoall: Megatron-Core's --moe-token-dispatcher-type alltoall, one NCCL all-to-all of the
// token copies over the EP group. deepep: --moe-token-dispatcher-type flex with
// --moe-enable-deepep, DeepEP's normal (high-throughput) kernels: each token crosses the
// scale-out network once per destination node, to the rank with the same in-node index, which
// forwards it over NVLink once per destination rank (deepseek-ai/DeepEP csrc/kernels/internode.cu).
enum class MoeDispatcher { alltoall, deepep };
MoeDispatcher parse_moe_dispatcher(std::string_view text, std::string_view key);
std::string_view moe_dispatcher_name(MoeDispatcher d);

// Where the router's weights multiply a token's expert path, which decides what the gradient of
// the weights keeps. combine: the un-permutation sums the expert outputs weighted, and keeps the
// outputs (T x top_k x hidden) for the weights' gradient (Megatron-Core's moe_utils.unpermute with
// probs, DeepSpeed-MoE, MegaBlocks; torchtitan weights the inputs instead and keeps as much).
// activation: the weights multiply the experts' activation (Megatron-Core's
// activation_func_with_probs with Transformer Engine's moe_permute_with_probs, 2025), whose
// input the experts keep anyway, and the un-permutation is a plain sum that keeps nothing.
enum class MoeProbs { combine, activation };
MoeProbs parse_moe_probs(std::string_view text, std::string_view key);
std::string_view moe_probs_name(MoeProbs p);

// Expected number of distinct bins a token's active_experts experts fall in, when the experts
// are cut into `bins` equal contiguous shards (EP ranks, or the nodes they sit on) and the token
// picks moe_topk_groups of the moe_groups expert groups, then active_experts distinct experts
// uniformly among those groups' (balanced routing). The groups must lie whole in a bin, or a
// bin whole in a group (moe_groups a multiple or a divisor of bins). One group: unlimited
// routing, bins x (1 - C(E - E/bins, k) / C(E, k)), about bins x (1 - (1 - 1/bins)^k).
double expected_bins_reached(const ModelShape& model, int bins);

// Bytes one rank sends in each hop of DeepEP's dispatch of `tokens` tokens of `token_bytes`
// each, over an EP group of `ep` ranks, `per_node` of them on each node: across the network, a
// token to each other node it reaches (once, whatever its experts there); over NVLink, from the
// rank that received it to each other rank of its node it reaches. The combine sends as much
// back.
struct TwoHopBytes {
  double scale_out = 0;  // over the network, to the same-index ranks of the other nodes
  double scale_up = 0;   // over NVLink, to the other ranks of the node
};
TwoHopBytes two_hop_bytes(const ModelShape& model, double tokens, double token_bytes, int ep, int per_node);

}  // namespace dtsim
