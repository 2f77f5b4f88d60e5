// The layout search, simulation and ranking of `dtsim advise` (see advise.hpp).
#include "sim/advisor/advise.hpp"

#include <fmt/format.h>
#include <tbb/info.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "sim/base/error.hpp"
#include "sim/base/units.hpp"
#include "sim/scenario/run.hpp"
#include "topologies/gpu_catalog.hpp"
#include "topologies/link_catalog.hpp"
#include "workloads/memory_fit.hpp"

namespace dtsim {
namespace {

constexpr int kMicroBatches[] = {1, 2, 4};
constexpr Recompute kRecomputes[] = {Recompute::none, Recompute::selective, Recompute::full};
constexpr int kZeroStages[] = {0, 1, 3};
// The static memory model leaves out communication buffers, ZeRO-3 gather buffers and allocator
// fragmentation: a layout must fit in this fraction of the GPU's memory.
constexpr double kMemoryHeadroom = 0.9;
// The estimate's GEMM efficiency when the GPU has no measured matmul rate.
constexpr double kDefaultGemmEfficiency = 0.8;

std::string base_node_kind(const GpuSpec& g, int gpus_per_node) {
  if (gpus_per_node < 2) return "pcie";
  if (g.nvlink_gen > 0 && !g.nvlink_bridge_only) return "nvswitch";
  return g.nvlink_gen > 0 ? "nvlink_pairs" : "pcie";
}

// Per-direction bytes/s a TP ring gets inside a node of this kind.
double intra_node_bytes_per_s(const GpuSpec& g, const std::string& kind) {
  if (kind == "nvswitch") return 0.78 * g.nvlink_bytes_per_s;
  return 0.8 * pcie_bytes_per_s(std::min(g.pcie_gen, 5));
}

// A rough step time: GEMM FLOPs (of the active parameters) at the GPU's matmul rate stretched by
// the 1F1B bubble, plus the TP all-reduces (4 per layer and micro-batch, 6 with full recompute),
// the MoE all-to-alls (as many, of tokens x top-k hidden states), the DP gradient ring (experts
// over dp / ep) and, with ZeRO-3, the parameter all-gathers of every layer in every pass.
double estimate_step_s(const ModelShape& m, const GpuSpec& g, const AdviseRow& r, int global_batch,
                       const AdviseRequest& q) {
  const double tokens = static_cast<double>(global_batch) * m.seq_len;
  const double routed = static_cast<double>(m.moe_layers()) * m.experts * m.expert_params();
  const double passes = r.recompute == Recompute::full ? 8 : 6;
  const double rate = g.measured_matmul_bf16_flops > 0 ? g.measured_matmul_bf16_flops
                                                       : kDefaultGemmEfficiency * g.bf16_flops;
  const double m_batches = static_cast<double>(global_batch) / (r.micro_batch * r.dp);
  const double bubble = (m_batches + r.pp - 1) / m_batches;
  const double compute = passes * (m.is_moe() ? m.active_params() : m.total_params()) * tokens / (r.num_gpus() * rate);
  const double network_per_gpu = 0.9 * q.nics_per_node * q.nic_gbps / 8 * 1e9 / r.gpus_per_node;
  double tp = 0;
  if (r.tp > 1) {
    const double bytes = 2.0 * m.seq_len * r.micro_batch * m.hidden * 2 * (r.tp - 1) / r.tp;
    tp = (r.recompute == Recompute::full ? 6 : 4) * bytes / intra_node_bytes_per_s(g, r.node_kind) *
         (static_cast<double>(m.layers) / r.pp) * m_batches;
  }
  if (r.ep > 1) {
    const double bytes = 2.0 * m.seq_len * r.micro_batch * m.active_experts * m.hidden * (r.ep - 1) / r.ep;
    const double rate_a2a = r.ep * r.tp > r.gpus_per_node ? network_per_gpu : intra_node_bytes_per_s(g, r.node_kind);
    tp += (r.recompute == Recompute::full ? 6 : 4) * bytes / rate_a2a * (static_cast<double>(m.moe_layers()) / r.pp) *
          m_batches;
  }
  double dp = 0;
  if (r.dp > 1) {
    const double per_gpu = r.nodes > 1 ? network_per_gpu : intra_node_bytes_per_s(g, r.node_kind);
    const double edp = static_cast<double>(r.dp) / r.ep;
    const double ring = 2 * ((m.total_params() - routed) * (r.dp - 1) / r.dp + routed / r.ep * (edp - 1) / edp) /
                        (r.tp * r.pp) / per_gpu;
    dp = 2 * ring;
    if (r.zero_stage >= 3) dp += (r.recompute == Recompute::full ? 3 : 2) * ring * m_batches;
  }
  return (compute + tp) * bubble + dp;
}

// Layers per stage when validate_plan's even splits do not apply (DeepSeek-R1's 61 layers on a
// power of two): layers + 2 as evenly as possible, the extra layers to the middle stages first,
// one fewer on the first and the last (the embedding and the head count as one layer each).
std::vector<int> uneven_stages(const ModelShape& m, int pp) {
  if (pp == 1 || m.layers % pp == 0 || (m.layers + 2) % pp == 0 || m.layers + 2 < 2 * pp) return {};
  std::vector<int> stages(pp, (m.layers + 2) / pp);
  int extra = (m.layers + 2) % pp;
  for (int i = 1; i < pp - 1 && extra > 0; ++i, --extra) ++stages[i];
  if (extra > 0) ++stages.back();
  --stages.front();
  --stages.back();
  return stages;
}

std::string stage_layers_text(const ModelShape& m, int pp) {
  std::string out;
  for (int n : uneven_stages(m, pp)) out += fmt::format("{}{}", out.empty() ? "" : ",", n);
  return out.empty() ? "auto" : out;
}

bool valid_layout(const ModelShape& m, const AdviseRow& r, int global_batch) {
  ParallelPlan p;
  p.stage_layers = uneven_stages(m, r.pp);
  p.tp = r.tp, p.pp = r.pp, p.dp = r.dp, p.ep = r.ep, p.micro_batch = r.micro_batch, p.global_batch = global_batch;
  p.zero_stage = r.zero_stage, p.recompute = r.recompute;
  try {
    validate_plan(p, m, r.num_gpus());
  } catch (const InputError&) {
    return false;
  }
  return true;
}

// Expert-parallel sizes to try with `dp` replicas: 1 for a dense model, else the powers of two
// that divide dp and the expert count.
std::vector<int> expert_parallel_sizes(const ModelShape& m, int dp) {
  std::vector<int> out{1};
  if (!m.is_moe()) return out;
  for (int ep = 2; ep <= dp; ep *= 2)
    if (dp % ep == 0 && m.experts % ep == 0) out.push_back(ep);
  return out;
}

// Every layout of `g` that fits, with its estimate, best first.
std::vector<AdviseRow> layouts(const ModelShape& m, const GpuSpec& g, int global_batch, const AdviseRequest& q,
                               std::size_t& built) {
  std::vector<AdviseRow> out;
  for (int n = 1; n <= q.max_gpus; n *= 2) {
    for (int tp = 1; tp <= std::min(n, 8); tp *= 2) {
      for (int pp = 1; pp <= n / tp; ++pp) {
        if ((n / tp) % pp != 0) continue;
        for (int ep : expert_parallel_sizes(m, n / (tp * pp)))
          for (int mb : kMicroBatches)
            for (Recompute rc : kRecomputes)
              for (int zero : kZeroStages) {
                AdviseRow r;
                r.gpu = g.name, r.role = "layout";
                r.gpus_per_node = std::min(n, 8), r.nodes = n / r.gpus_per_node;
                r.tp = tp, r.pp = pp, r.dp = n / (tp * pp), r.ep = ep, r.micro_batch = mb, r.recompute = rc;
                r.zero_stage = zero;
                if (zero > 0 && r.dp == 1) continue;  // nothing to shard
                r.stage_layers = stage_layers_text(m, pp);
                r.node_kind = base_node_kind(g, r.gpus_per_node);
                r.nics_per_node = q.nics_per_node, r.nic_gbps = q.nic_gbps;
                ++built;
                if (!valid_layout(m, r, global_batch)) continue;
                TrainingSetup s{m.seq_len, mb, rc, zero, false, global_batch / (mb * r.dp)};
                s.ep = ep;
                const double need = training_memory(m, s, tp, pp, r.dp).total();
                if (need > kMemoryHeadroom * g.memory_bytes) continue;
                r.fit_gib = need / kGiB;
                r.estimate_s = estimate_step_s(m, g, r, global_batch, q);
                out.push_back(r);
              }
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const AdviseRow& a, const AdviseRow& b) { return a.estimate_s < b.estimate_s; });
  return out;
}

// The best layout at each of the kCounts largest GPU counts that fit (a step of a large model takes
// seconds to simulate), and the next `top` at the count of the best one.
constexpr std::size_t kCounts = 3;
std::vector<AdviseRow> promising(const std::vector<AdviseRow>& fitting, int top) {
  std::vector<AdviseRow> out;
  std::set<int> all;
  for (const AdviseRow& r : fitting) all.insert(r.num_gpus());
  std::set<int> counts;
  for (auto it = all.rbegin(); it != all.rend() && counts.size() < kCounts; ++it) counts.insert(*it);
  std::set<int> taken;
  for (const AdviseRow& r : fitting)
    if (counts.count(r.num_gpus()) && taken.insert(r.num_gpus()).second) out.push_back(r);
  int extra = 0;
  for (std::size_t i = 1; i < fitting.size() && extra < top; ++i)
    if (fitting[i].num_gpus() == fitting.front().num_gpus()) out.push_back(fitting[i]), ++extra;
  return out;
}

// Simulates the rows (their status, message and summary filled in) on the sweep runner.
void simulate(std::vector<AdviseRow>& rows, const AdviseRequest& q, int global_batch) {
  if (rows.empty()) return;
  SweepPlan plan;
  plan.fixed = {{"model.name", q.model}, {"training.global_batch", std::to_string(global_batch)},
                {"cluster.nic_kind", "infiniband"}, {"output.trace_detail", "summary"}};
  plan.spec.mode = SweepMode::zip;
  plan.fold_tp = true;  // only summaries are kept
  const auto axis = [&](const char* key, auto value_of) {
    SweepAxis a{key, {}};
    for (const AdviseRow& r : rows) a.values.push_back(value_of(r));
    plan.spec.axes.push_back(std::move(a));
  };
  axis("cluster.gpu", [](const AdviseRow& r) { return r.gpu; });
  axis("cluster.nodes", [](const AdviseRow& r) { return std::to_string(r.nodes); });
  axis("cluster.gpus_per_node", [](const AdviseRow& r) { return std::to_string(r.gpus_per_node); });
  axis("cluster.node_kind", [](const AdviseRow& r) { return r.node_kind; });
  axis("cluster.nics_per_node", [](const AdviseRow& r) { return std::to_string(r.nics_per_node); });
  axis("cluster.nic_gbps", [](const AdviseRow& r) { return fmt::format("{}", r.nic_gbps); });
  axis("parallel.tp", [](const AdviseRow& r) { return std::to_string(r.tp); });
  axis("parallel.pp", [](const AdviseRow& r) { return std::to_string(r.pp); });
  axis("parallel.dp", [](const AdviseRow& r) { return std::to_string(r.dp); });
  axis("parallel.ep", [](const AdviseRow& r) { return std::to_string(r.ep); });
  axis("parallel.stage_layers", [](const AdviseRow& r) { return r.stage_layers; });
  axis("training.micro_batch", [](const AdviseRow& r) { return std::to_string(r.micro_batch); });
  axis("training.recompute", [](const AdviseRow& r) { return std::string(recompute_name(r.recompute)); });
  axis("parallel.zero_stage", [](const AdviseRow& r) { return std::to_string(r.zero_stage); });
  std::vector<std::int64_t> points(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) points[i] = static_cast<std::int64_t>(i);
  const int jobs = q.jobs > 0 ? q.jobs : tbb::info::default_concurrency();
  const std::vector<PointResult> results = run_points(plan, points, jobs, [](const PointResult&) {});
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].status = results[i].status;
    rows[i].message = results[i].message;
    rows[i].summary = results[i].summary;
  }
}

// The best layout again with the other node kinds the GPU can have and slower/faster NICs.
std::vector<AdviseRow> variants(const AdviseRow& best, const GpuSpec& g) {
  std::vector<AdviseRow> out;
  const auto add = [&](const std::string& kind, int nics, double gbps) {
    AdviseRow v = best;
    v.role = "variant", v.node_kind = kind, v.nics_per_node = nics, v.nic_gbps = gbps, v.rank = -1;
    out.push_back(v);
  };
  if (best.gpus_per_node > 1) {
    std::vector<std::string> kinds = {"pcie"};
    if (g.nvlink_gen > 0) kinds.push_back(g.nvlink_bridge_only ? "nvlink_pairs" : "nvswitch");
    for (const std::string& k : kinds)
      if (k != best.node_kind) add(k, best.nics_per_node, best.nic_gbps);
  }
  if (best.nodes > 1)
    for (const auto& [nics, gbps] : {std::pair{1, 100.0}, std::pair{8, 400.0}})
      if (nics != best.nics_per_node || gbps != best.nic_gbps) add(best.node_kind, nics, gbps);
  return out;
}

}  // namespace

AdviseResult advise(const AdviseRequest& q) {
  const ModelShape& m = find_model(q.model);
  if (q.gpus.empty()) throw InputError("dtsim advise: --gpus needs at least one GPU, e.g. A100-80GB,H100-80GB,RTX4090");
  if (q.max_gpus < 1) throw InputError(fmt::format("--max-gpus = {}: must be >= 1", q.max_gpus));
  std::vector<const GpuSpec*> gpus;
  for (const std::string& name : q.gpus) gpus.push_back(&find_gpu(name));
  for (const auto& [name, price] : q.prices) {
    const GpuSpec& g = find_gpu(name);
    if (std::none_of(gpus.begin(), gpus.end(), [&](const GpuSpec* s) { return s->name == g.name; }))
      throw InputError(fmt::format("--price {}={}: {} is not one of --gpus", name, price, g.name));
    if (!(price > 0)) throw InputError(fmt::format("--price {}={}: must be a positive USD per GPU-hour", name, price));
  }
  std::map<std::string, double> prices;
  for (const auto& [name, price] : q.prices) prices[find_gpu(name).name] = price;

  AdviseResult res;
  res.model = m.name;
  res.seq_len = m.seq_len;
  res.global_batch = q.global_batch > 0 ? q.global_batch : std::max(1, (1 << 22) / m.seq_len);
  res.tokens = q.tokens > 0 ? q.tokens : 20 * m.total_params();
  std::vector<AdviseRow> rows;
  for (const GpuSpec* g : gpus) {
    const std::vector<AdviseRow> fitting = layouts(m, *g, res.global_batch, q, res.candidates);
    res.fitting += fitting.size();
    for (const AdviseRow& r : promising(fitting, q.top)) rows.push_back(r);
  }
  simulate(rows, q, res.global_batch);
  const bool all_priced = std::all_of(gpus.begin(), gpus.end(), [&](const GpuSpec* g) { return prices.count(g->name) > 0; });
  res.ranked_by = all_priced ? "cost" : "time to train";
  const auto finish = [&](AdviseRow& r) {
    const bool ran = r.status == PointStatus::ok;
    r.train_s = ran ? res.tokens / r.summary.tokens_per_s : std::nan("");
    r.gpu_hours = r.num_gpus() * r.train_s / 3600;
    r.cost_usd = prices.count(r.gpu) ? prices.at(r.gpu) * r.gpu_hours : std::nan("");
  };
  for (AdviseRow& r : rows) finish(r);
  const auto key = [&](const AdviseRow& r) { return all_priced ? r.cost_usd : r.train_s; };
  std::stable_sort(rows.begin(), rows.end(), [&](const AdviseRow& a, const AdviseRow& b) {
    const bool ao = a.status == PointStatus::ok, bo = b.status == PointStatus::ok;
    return ao != bo ? ao : ao && key(a) < key(b);
  });
  int rank = 0;
  for (AdviseRow& r : rows)
    if (r.status == PointStatus::ok) r.rank = ++rank;
  std::vector<AdviseRow> extra;
  for (const GpuSpec* g : gpus) {
    const auto best = std::find_if(rows.begin(), rows.end(), [&](const AdviseRow& r) { return r.rank > 0 && r.gpu == g->name; });
    if (best == rows.end()) continue;
    for (const AdviseRow& v : variants(*best, *g)) extra.push_back(v);
  }
  simulate(extra, q, res.global_batch);
  for (AdviseRow& v : extra) finish(v);
  rows.insert(rows.end(), extra.begin(), extra.end());
  res.rows = std::move(rows);
  return res;
}

}  // namespace dtsim
