// Splitting a layer's parameters into the DP-replicated part and the EP shard of its experts.
#include "workloads/layer_params.hpp"

namespace dtsim {

LayerParams layer_params(const ModelShape& m, const ParallelPlan& p, int layer) {
  if (layer >= m.layers) {  // an MTP module: its block as the last layer, plus its norms and projection
    LayerParams module = layer_params(m, p, m.layers - 1);
    module.replicated += m.mtp_module_params() - (m.is_moe_layer(m.layers - 1) ? m.moe_layer_params() : m.params_per_layer());
    return module;
  }
  if (!m.is_moe_layer(layer)) return LayerParams{m.params_per_layer(), 0};
  const double routed = m.experts * m.expert_params();
  return LayerParams{m.moe_layer_params() - routed, routed / p.ep};
}

LayerParams layers_params(const ModelShape& m, const ParallelPlan& p, int first, int count) {
  LayerParams sum;
  for (int l = first; l < first + count; ++l) {
    const LayerParams one = layer_params(m, p, l);
    sum.replicated += one.replicated;
    sum.experts += one.experts;
  }
  return sum;
}

}  // namespace dtsim
