// The MoE dispatcher's and routing weights' names, and the expected reach of a token under node-limited routing.
#include "workloads/moe_dispatch.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/base/error.hpp"

namespace dtsim {

MoeDispatcher parse_moe_dispatcher(std::string_view text, std::string_view key) {
  if (text == "alltoall") return MoeDispatcher::alltoall;
  if (text == "deepep") return MoeDispatcher::deepep;
  throw InputError(fmt::format("{} = '{}': valid values are alltoall (Megatron-Core's alltoall dispatcher, NCCL) and "
                               "deepep (its flex dispatcher with --moe-enable-deepep)", key, text));
}

std::string_view moe_dispatcher_name(MoeDispatcher d) { return d == MoeDispatcher::deepep ? "deepep" : "alltoall"; }

MoeProbs parse_moe_probs(std::string_view text, std::string_view key) {
  if (text == "combine") return MoeProbs::combine;
  if (text == "activation") return MoeProbs::activation;
  throw InputError(fmt::format("{} = '{}': valid values are combine (the un-permutation weights the expert outputs "
                               "and keeps them) and activation (the experts' activation applies the weights)",
                               key, text));
}

std::string_view moe_probs_name(MoeProbs p) { return p == MoeProbs::activation ? "activation" : "combine"; }

namespace {

// C(a - b, k) / C(a, k): the chance that k distinct picks among a items miss b given ones.
double all_miss(double a, double b, int k) {
  double p = 1;
  for (int i = 0; i < k; ++i) p *= std::max(0.0, a - b - i) / (a - i);
  return p;
}

// C(n, r) as a double (small n: groups).
double choose(int n, int r) {
  if (r < 0 || r > n) return 0;
  double c = 1;
  for (int i = 1; i <= r; ++i) c = c * (n - r + i) / i;
  return c;
}

}  // namespace

double expected_bins_reached(const ModelShape& model, int bins) {
  const int G = model.moe_groups, K = model.moe_topk_groups, k = model.active_experts;
  const double E = model.experts, per_group = E / G, allowed = K * per_group;
  double miss = 0;  // the chance that one given bin gets none of the token's experts
  if (G % bins == 0) {
    // Each bin holds g whole groups; x of them chosen (hypergeometric over the K chosen of G).
    const int g = G / bins;
    for (int x = 0; x <= std::min(g, K); ++x)
      miss += choose(g, x) * choose(G - g, K - x) / choose(G, K) * all_miss(allowed, x * per_group, k);
  } else if (bins % G == 0) {
    // Each group spans bins / G bins: the bin's group is chosen with K / G.
    const double chosen = static_cast<double>(K) / G;
    miss = (1 - chosen) + chosen * all_miss(allowed, E / bins, k);
  } else {
    throw std::logic_error("expected_bins_reached: groups straddle bins (validate_plan refuses this)");
  }
  return bins * (1 - miss);
}

TwoHopBytes two_hop_bytes(const ModelShape& model, double tokens, double token_bytes, int ep, int per_node) {
  const int nodes = ep / per_node;
  TwoHopBytes b;
  // Of the nodes a token reaches, its own is as likely as any other (symmetry): (nodes - 1) / nodes leave.
  if (nodes > 1) b.scale_out = tokens * token_bytes * expected_bins_reached(model, nodes) * (nodes - 1) / nodes;
  // Each rank forwards, over its node's NVLink, as many (token, destination rank) pairs as its
  // own tokens make (symmetry), all but the 1 / per_node that stay on it.
  if (per_node > 1) b.scale_up = tokens * token_bytes * expected_bins_reached(model, ep) * (per_node - 1) / per_node;
  return b;
}

}  // namespace dtsim
