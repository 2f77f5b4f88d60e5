// Text and JSON renderings of a Summary.
#include "sim/scenario/summary_format.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "sim/base/json.hpp"
#include "sim/scenario/stage_balance.hpp"
#include "topologies/builders.hpp"
#include "topologies/gpu_catalog.hpp"

namespace dtsim {

// The network the step ran on, as the scenario gave it (the summary echoes what it used).
std::string network_text(const Scenario& sc) {
  const ClusterConfig& c = sc.cluster;
  if (!sc.topology_file.empty()) return fmt::format("as in the topology file {}", sc.topology_file);
  const double nvlink = c.nvlink_GBps > 0 ? c.nvlink_GBps : find_gpu(c.gpu).nvlink_bytes_per_s / 1e9;
  const bool rack = c.node_kind == NodeKind::nvl72;
  const std::string inside =
      c.node_kind == NodeKind::nvswitch
          ? fmt::format("NVSwitch in each node ({:.0f} GB/s per GPU per direction)", nvlink)
      : rack ? fmt::format("NVL72 racks: one NVLink domain of {} GPUs per rack ({:.0f} GB/s per GPU per direction)",
                           c.gpus_per_node, nvlink)
      : c.node_kind == NodeKind::nvlink_pairs
          ? fmt::format("NVLink bridges between GPU pairs ({:.0f} GB/s), PCIe gen {} otherwise", nvlink, c.pcie_gen)
          : fmt::format("PCIe gen {} in each node{}", c.pcie_gen, c.p2p ? "" : " (no peer-to-peer: through the CPU)");
  if (c.nodes == 1) return inside + (rack ? "; one rack, no NIC used" : "; one node, no NIC used");
  std::string fabric = fmt::format("{}; {} x {:g} Gb/s {} NICs per {}, {} fabric", inside, c.nics_per_node, c.nic_gbps,
                                   link_kind_name(c.nic_kind), rack ? "rack" : "node", fabric_name(c.fabric));
  if (c.oversubscription > 1) fabric += fmt::format(", {:g}:1 oversubscribed", c.oversubscription);
  return fabric;
}

namespace {

// Each stage's busy time (compute + memory-bound), the slowest named, and the split to try when
// the slowest is more than kStageImbalanceToReport above the median stage.
std::string stage_text(const ParallelPlan& p, const StageBalance& b) {
  const auto [low, high] = std::minmax_element(b.busy_s.begin(), b.busy_s.end());
  std::string out = fmt::format("  stages (busy)      {:.3g}-{:.3g} s; slowest stage {} of {} ({} layers), {:+.0f} % over "
                                "the median stage\n", *low, *high, b.slowest, p.pp, p.stage_layers[b.slowest],
                                100 * b.spread);
  if (!b.balanced.empty())
    out += fmt::format("  try                --parallel.stage_layers={} (the split with the shortest slowest stage, "
                       "estimated from these stage times)\n", fmt::join(b.balanced, ","));
  return out;
}

}  // namespace

const LinkRecord& most_loaded_link(const std::vector<LinkRecord>& links) {
  const LinkRecord* best = &links.front();
  for (const LinkRecord& l : links)
    if (l.bytes / l.bandwidth_bytes_per_s > best->bytes / best->bandwidth_bytes_per_s) best = &l;
  return *best;
}

namespace {

// What to try when a memory category is the largest at the OOM rank's peak.
std::string_view relief(MemCategory c) {
  switch (c) {
    case MemCategory::weights: return "more tp or pp, or parallel.zero_stage = 3";
    case MemCategory::gradients: return "parallel.zero_stage = 2 or 3, more tp or pp";
    case MemCategory::optimizer: return "parallel.zero_stage >= 1 over more DP ranks, more tp or pp";
    case MemCategory::activations:
      return "training.recompute = selective or full, a smaller training.micro_batch, more tp (with "
             "parallel.sequence_parallel), pp or parallel.cp";
    case MemCategory::buffers: return "more GPUs to shard over";
  }
  return "";
}

// The OOM rank's memory by category at its peak, which category went over, and what to try.
std::string oom_breakdown(const Summary& s) {
  std::vector<std::string> parts;
  int largest = 0;
  for (int c = 0; c < kNumMemCategories; ++c) {
    parts.push_back(fmt::format("{} {:.2f}", mem_category_name(static_cast<MemCategory>(c)), s.oom_peak_by_category_gib[c]));
    if (s.oom_peak_by_category_gib[c] > s.oom_peak_by_category_gib[largest]) largest = c;
  }
  return fmt::format("                     at its peak (GiB): {}; it went over as its {} grew; the largest is {}: try {}\n",
                     fmt::join(parts, ", "),
                     s.oom_category >= 0 ? mem_category_name(static_cast<MemCategory>(s.oom_category)) : "memory",
                     mem_category_name(static_cast<MemCategory>(largest)), relief(static_cast<MemCategory>(largest)));
}

}  // namespace

std::string format_summary_text(const Scenario& sc, const Summary& s, const std::vector<LinkRecord>& links,
                                const std::vector<RankRecord>& ranks) {
  std::string out;
  const auto& p = sc.plan;
  out += fmt::format("dtsim: {} on {} x {} ({} GPUs), TP {}{} PP {} DP {}{}, micro-batch {}, global batch {}\n",
                     sc.model.name, sc.cluster.nodes, sc.cluster.gpus_per_node, s.num_gpus, p.tp,
                     p.cp > 1 ? fmt::format(" CP {} ({})", p.cp, cp_comm_name(p.cp_comm)) : "", p.pp, p.dp,
                     p.ep > 1 ? fmt::format(" (EP {}{})", p.ep, p.expert_folding() ? " over TP x DP, ETP 1" : "") : "", p.micro_batch, p.global_batch);
  if (!sc.chosen.empty()) out += fmt::format("  chosen             {}\n", sc.chosen);
  const ModelShape& m = sc.model;
  if (m.is_moe())
    out += fmt::format("  experts            {} routed ({} per token) + {} shared of {}, {} dense layers first{}, "
                       "{:.2f} B active parameters{}{}\n", m.experts, m.active_experts, m.shared_experts,
                       m.expert_ffn_hidden, m.dense_layers,
                       m.moe_layer_step > 1 ? fmt::format(", then MoE every {} layers", m.moe_layer_step) : "",
                       m.active_params() / 1e9, m.is_mla() ? ", MLA attention" : "",
                       p.ep > 1 ? fmt::format("; {} dispatch{}", moe_dispatcher_name(p.moe_dispatcher),
                                              p.moe_a2a_overlap ? ", all-to-alls overlapped across micro-batches" : "")
                                : "");
  out += fmt::format("  model              {} layers, hidden {}, {} heads ({} kv{}), {} FFN {}, vocab {}, seq {}, "
                     "{} positions, {:.2f} B parameters\n",
                     m.layers, m.hidden, m.heads, m.kv_heads_or_heads(),
                     m.head_dim > 0 ? fmt::format(", head_dim {}", m.head_dim) : "", ffn_kind_name(m.ffn),
                     m.ffn_or_default(), m.vocab, m.seq_len, position_embedding_name(m.position), m.total_params() / 1e9);
  const std::string recompute = p.recompute_num_layers > 0
                                    ? fmt::format("full of the first {} layers per stage", p.recompute_num_layers)
                                    : std::string(recompute_name(p.recompute));
  out += fmt::format("  setup              {} profile, {}, recompute {}, {} schedule, ZeRO-{}, {} {} of {}\n",
                     sc.framework, p.recipe == Recipe::none ? precision_name(sc.precision) : recipe_spec(p.recipe).name,
                     recompute, schedule_name(p.schedule), p.zero_stage, node_kind_name(sc.cluster.node_kind),
                     sc.cluster.node_kind == NodeKind::nvl72 ? "racks" : "nodes", sc.cluster.gpu);
  out += fmt::format("  network            {}\n", network_text(sc));
  out += fmt::format("  step time          {:.3f} s\n", s.step_time_s);
  out += fmt::format("  throughput         {:.0f} tokens/s\n", s.tokens_per_s);
  out += fmt::format("  model TFLOP/s/GPU  {:.1f}   (MFU {:.1f} %)\n", s.model_tflops_per_gpu, 100 * s.mfu);
  out += fmt::format("  hw TFLOP/s/GPU     {:.1f}\n", s.hw_tflops_per_gpu);
  out += fmt::format("  peak memory        {:.2f} GiB (rank {}) of {:.1f} GiB\n", s.peak_memory_gib,
                     s.peak_memory_rank, s.oom_capacity_gib);
  if (s.oom) {
    out += fmt::format("  OUT OF MEMORY      rank {} exceeds the GPU at t = {:.3f} s and needs {:.2f} GiB at its peak; the GPU has {:.2f} GiB\n",
                       s.oom_rank, s.oom_time_s, s.oom_needed_gib, s.oom_capacity_gib);
    out += oom_breakdown(s);
  }
  out += fmt::format("  time breakdown     compute {:.1f} %, memory-bound {:.1f} %, exposed comm {:.1f} %, "
                     "bubble {:.1f} %, idle {:.1f} %\n",
                     100 * s.compute, 100 * s.memory_bound, 100 * s.exposed_comm, 100 * s.bubble, 100 * s.idle);
  if (p.pp > 1 && !ranks.empty()) out += stage_text(p, stage_balance(p, ranks));
  if (!links.empty()) {
    const LinkRecord& l = most_loaded_link(links);
    out += fmt::format("  most loaded link   {} -> {} ({}): {:.3f} GB, {:.1f} % of its wire rate over the step, "
                       "busy {:.3f} s\n", l.source, l.target, l.kind, l.bytes / 1e9,
                       100 * l.bytes / (l.bandwidth_bytes_per_s * std::max(s.step_time_s, 1e-12)), l.busy_s);
  }
  out += fmt::format("  events simulated   {}\n", s.events);
  return out;
}

std::string format_summary_json(const Scenario& sc, const Summary& s, const std::vector<LinkRecord>& links) {
  std::string loaded = "null";
  if (!links.empty()) {
    const LinkRecord& l = most_loaded_link(links);
    loaded = fmt::format("{{\"source\": {}, \"target\": {}, \"kind\": {}, \"busy_s\": {:.9g}, \"bytes\": {:.9g}}}",
                          json_string(l.source), json_string(l.target), json_string(l.kind), JsonNumber{l.busy_s},
                          JsonNumber{l.bytes});
  }
  return fmt::format(
      "{{\"step_time_s\": {:.9g}, \"tokens_per_s\": {:.9g}, \"model_tflops_per_gpu\": {:.9g}, "
      "\"hw_tflops_per_gpu\": {:.9g}, \"mfu\": {:.9g}, \"peak_memory_gib\": {:.9g}, \"peak_memory_rank\": {}, "
      "\"oom\": {}, \"oom_rank\": {}, \"oom_time_s\": {:.9g}, \"oom_needed_gib\": {:.9g}, "
      "\"memory_capacity_gib\": {:.9g}, \"num_gpus\": {}, \"events\": {}, \"compute\": {:.9g}, "
      "\"memory_bound\": {:.9g}, \"exposed_comm\": {:.9g}, \"bubble\": {:.9g}, \"idle\": {:.9g}, "
      "\"most_loaded_link\": {}, \"framework\": {}, \"tp\": {}, \"cp\": {}, \"pp\": {}, \"dp\": {}, \"chosen\": {}, \"oom_category\": {}}}",
      JsonNumber{s.step_time_s}, JsonNumber{s.tokens_per_s}, JsonNumber{s.model_tflops_per_gpu},
      JsonNumber{s.hw_tflops_per_gpu}, JsonNumber{s.mfu}, JsonNumber{s.peak_memory_gib}, s.peak_memory_rank,
      s.oom ? "true" : "false", s.oom_rank, JsonNumber{s.oom_time_s}, JsonNumber{s.oom_needed_gib},
      JsonNumber{s.oom_capacity_gib}, s.num_gpus, s.events, JsonNumber{s.compute}, JsonNumber{s.memory_bound},
      JsonNumber{s.exposed_comm}, JsonNumber{s.bubble}, JsonNumber{s.idle}, loaded, json_string(sc.framework),
      sc.plan.tp, sc.plan.cp, sc.plan.pp, sc.plan.dp, json_string(sc.chosen),
      s.oom_category >= 0 ? json_string(std::string(mem_category_name(static_cast<MemCategory>(s.oom_category)))) : "null");
}

}  // namespace dtsim
