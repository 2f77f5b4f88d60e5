// The layout search, simulation and ranking of `dtsim advise` (see advise.hpp).
#include "sim/advisor/advise.hpp"

#include <fmt/format.h>
#include <tbb/info.h>

#include <algorithm>
#include <boost/any.hpp>
#include <boost/program_options/variables_map.hpp>
#include <cmath>
#include <set>

#include "sim/base/error.hpp"
#include "sim/base/limits.hpp"
#include "sim/base/units.hpp"
#include "sim/compute/compute_model.hpp"
#include "sim/scenario/frameworks.hpp"
#include "sim/scenario/run.hpp"
#include "topologies/builders.hpp"
#include "topologies/gpu_catalog.hpp"
#include "topologies/link_catalog.hpp"
#include "workloads/layer_ops.hpp"
#include "workloads/layer_params.hpp"
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

// The rates the estimate runs kernels at: GEMMs at the GPU's sustained (else best measured)
// matmul rate, fused attention at its published cuDNN (with Transformer Engine's attention) or
// FlashAttention fraction of the peak, the rest at
// the measured HBM bandwidth; each kernel pays a launch. A kernel that runs beside a collective
// runs `overlap_slowdown` times slower (the simulator's: NCCL holds SMs).
struct Rates {
  double gemm, flash, hbm, overlap_slowdown;
};
constexpr double kDefaultHbmEfficiency = 0.8;
constexpr double kLaunchS = 2e-6;
Rates rates_of(const GpuSpec& g, Attention attention) {
  Rates r;
  r.gemm = g.sustained_matmul_bf16_flops > 0   ? g.sustained_matmul_bf16_flops
           : g.measured_matmul_bf16_flops > 0 ? g.measured_matmul_bf16_flops
                                              : kDefaultGemmEfficiency * g.bf16_flops;
  const double fraction = attention == Attention::cudnn && g.cudnn_attention_fraction > 0 ? g.cudnn_attention_fraction
                                                                                           : g.flash_attention_fraction;
  r.flash = fraction > 0 ? fraction * g.bf16_flops : 0.8 * r.gemm;
  r.hbm = g.measured_hbm_bytes_per_s > 0 ? g.measured_hbm_bytes_per_s : kDefaultHbmEfficiency * g.hbm_bytes_per_s;
  r.overlap_slowdown = ComputeModel(g, Precision::bf16, Attention::flash).comm_overlap_slowdown();
  return r;
}

// What the estimate of one layout knows: its plan as the program builder would run it, the
// roofline and the bandwidths of its groups.
struct EstimateContext {
  const ModelShape& m;
  ParallelPlan plan;
  Rates rates;
  double tp_bw, ep_bw, dp_bw, pp_bw;  // bytes/s per GPU of each group's ring
};

// What `comm_s` of communication hidden behind kernels costs them: the work they do not do while
// it runs at 1 / overlap_slowdown of their speed.
double overlap_cost(const EstimateContext& c, double comm_s) { return comm_s * (1 - 1 / c.rates.overlap_slowdown); }

// Seconds of the ops of one pass (layer_ops' kernels and collectives) on one GPU: a kernel at the
// roofline (fused attention on the causal half of its FLOPs, its backward recomputing QK^T:
// 2.5 GEMMs' work instead of 2), a ring collective at its group's bandwidth; an asynchronous
// collective hides behind the GEMM it overlaps.
double pass_s(const EstimateContext& c, const std::vector<OpSpec>& ops, bool backward) {
  const auto kernel_s = [&](const OpSpec& op) {
    double compute = 0;
    if (op.kind == OpKind::flash_attention) compute = 0.5 * op.flops * (backward ? 1.25 : 1) / c.rates.flash;
    else if (op.m > 0) compute = op.flops / c.rates.gemm;
    // The routed experts run the most loaded rank's tokens (their FLOPs count the mean).
    if (op.kind == OpKind::expert_fc1 || op.kind == OpKind::expert_fc2) compute *= c.plan.moe_hot_load();
    return std::max(compute, op.bytes / c.rates.hbm) + kLaunchS;
  };
  double sum = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const OpSpec& op = ops[i];
    if (op.comm == CommKind::none) {
      sum += kernel_s(op);
      continue;
    }
    const bool tp = op.group == Group::tp;
    const double n = tp ? c.plan.tp : c.plan.ep, bw = tp ? c.tp_bw : c.ep_bw;
    const double comm = n > 1 ? (op.comm == CommKind::all_reduce ? 2 : 1) * (n - 1) / n * op.bytes / bw : 0;
    if (!op.async) {
      sum += comm;
      continue;
    }
    // Hidden behind the compute ops it runs beside, as far as they last.
    double beside = 0;
    for (std::size_t j = i + 1, left = op.overlaps; j < ops.size() && left > 0; ++j)
      if (ops[j].comm == CommKind::none) beside += kernel_s(ops[j]), --left;
    const double hidden = std::min(comm, beside);
    sum += comm - hidden + (op.sm_free ? 0 : overlap_cost(c, hidden));
  }
  return sum;
}

// A ring reduce-scatter or all-gather of `bytes` over `n` ranks.
double ring(double n, double bytes, double bw) { return n > 1 ? (n - 1) / n * bytes / bw : 0; }

// Forward, then recomputation and backward, of layer `l` for one micro-batch, with the gradient
// accumulation kernels of frameworks that do not fuse it into the weight-gradient GEMM. ZeRO-3
// gathers the layer's parameters before each pass (the next layer's while this one runs) and
// reduce-scatters its gradients after the backward, on the DP stream: a pass takes the longer.
double layer_s(const EstimateContext& c, const LayerOps& ops, int l) {
  const ParallelPlan& p = c.plan;
  const std::vector<OpSpec> materialized = ops.layer_forward(l, true);
  const double forward = pass_s(c, ops.layer_forward(l), false);
  double backward = pass_s(c, ops.backward_of(materialized), true);
  if (p.recompute == Recompute::full) backward += pass_s(c, materialized, false);
  else if (p.recompute == Recompute::selective && p.attention == Attention::standard)
    backward += pass_s(c, ops.attention_core(materialized), false);
  const LayerParams params = layer_params(c.m, p, l);
  const double local = (params.replicated + params.experts) / p.tp / (p.zero_stage >= 2 ? p.dp : 1);
  if (p.grad_accumulation == GradAccumulation::separate) backward += 3 * p.weight_bytes * local / c.rates.hbm;
  if (p.grad_accumulation == GradAccumulation::fp32_buffer) backward += (p.weight_bytes + 16) * local / c.rates.hbm;
  if (p.zero_stage < 3) return forward + backward;
  const double gather = ring(p.dp, p.weight_bytes * params.replicated / p.tp, c.dp_bw);
  const double reduce = ring(p.dp, (p.grad_reduce_fp32 ? 4 : p.weight_bytes) * params.replicated / p.tp, c.dp_bw);
  return std::max(forward + overlap_cost(c, gather), gather) +
         std::max(backward + overlap_cost(c, gather + reduce), gather + reduce);
}

// A step of the layout: 1F1B runs each stage's micro-batches back to back after the pipeline
// fills, (micro-batches - 1) x the slowest stage + every stage once; then the gradient reduction
// the last backward pass does not hide (ZeRO-2: the reductions of every backward pass, ZeRO-3:
// in layer_s), the optimizer (an HBM pass over the Adam shard) and the ZeRO-1/2 parameter
// all-gather.
double estimate_step_s(const EstimateContext& c) {
  const ModelShape& m = c.m;
  const ParallelPlan& p = c.plan;
  const LayerOps ops(m, p);
  const int mb = p.micro_batches();
  // One dense and one MoE layer stand for all of their kind (the first of each).
  const double dense = layer_s(c, ops, 0);
  const double moe = m.is_moe() ? layer_s(c, ops, m.dense_layers + m.moe_layer_step - 1) : dense;
  const double hop = p.pp > 1 ? p.weight_bytes * ops.tokens() * m.hidden / p.tp / c.pp_bw : 0;
  double slowest = 0, all = 0;
  for (int s = 0; s < p.pp; ++s) {
    const int first = p.first_layer(s), n = p.stage_layers[s];
    int moe_n = 0;
    for (int l = first; l < first + n; ++l) moe_n += m.is_moe_layer(l);
    double t = (n - moe_n) * dense + moe_n * moe + 2 * hop;
    if (s == 0) t += pass_s(c, ops.embedding_forward(), false) + pass_s(c, ops.backward_of(ops.embedding_forward()), true);
    if (s == p.pp - 1) t += pass_s(c, ops.head_forward(), false) + pass_s(c, ops.backward_of(ops.head_forward()), true);
    slowest = std::max(slowest, t);
    all += t;
  }
  double step = (mb - 1) * slowest + all;
  // Per-GPU parameters of a stage, routed experts over the expert-DP group.
  const double routed = static_cast<double>(m.moe_layers()) * m.experts * m.expert_params();
  const double params = (m.total_params() - routed) / (p.tp * p.pp), experts = routed / (p.tp * p.pp * p.ep);
  const double dp = p.dp, edp = p.expert_dp(), grad_e = p.grad_reduce_fp32 ? 4 : p.weight_bytes;
  const double reduce = (p.zero_stage == 0 ? 2 : 1) * (ring(dp, grad_e * params, c.dp_bw) + ring(edp, grad_e * experts, c.dp_bw));
  if (p.zero_stage == 2) step = std::max(step, mb * reduce);
  else if (p.zero_stage < 2)
    // With DP overlap the buckets of the last backward pass reduce behind it; else all after it.
    step += p.dp_overlap ? std::max(reduce * std::min(1.0, p.dp_bucket_bytes / (grad_e * params)), reduce - slowest)
                         : reduce;
  if (p.zero_stage == 1 || p.zero_stage == 2)
    step += ring(dp, p.weight_bytes * params, c.dp_bw) + ring(edp, p.weight_bytes * experts, c.dp_bw);
  const double shard = p.zero_stage >= 1 ? params / dp + experts / edp : params + experts;
  const double grad_copy = p.grad_accumulation == GradAccumulation::separate ? p.weight_bytes + 4 : 0;
  return step + shard * (grad_copy + 4 + 28 + 4 + p.weight_bytes) / c.rates.hbm;
}

// The training setup of layout `r` under framework `fw`.
TrainingSetup setup_of(const ModelShape& m, const AdviseRow& r, const FrameworkSetup& fw, int global_batch) {
  TrainingSetup s = fw.training;
  s.seq_len = m.seq_len, s.micro_batch = r.micro_batch, s.recompute = r.recompute, s.zero_stage = r.zero_stage;
  s.micro_batches = global_batch / (r.micro_batch * r.dp), s.ep = r.ep;
  return s;
}

// The estimate of layout `r` (its node kind and NICs) as framework `fw` runs it.
double estimate_layout_s(const ModelShape& m, const GpuSpec& g, const AdviseRow& r, const FrameworkSetup& fw,
                         int global_batch) {
  ParallelPlan plan = training_plan(m, setup_of(m, r, fw, global_batch), r.tp, r.pp, r.dp);
  const Rates rates = rates_of(g, plan.attention);
  EstimateContext c{m, std::move(plan), rates, 0, 0, 0, 0};
  c.plan.tp_overlap = fw.tp_overlap, c.plan.dp_overlap = fw.dp_overlap;
  const double intra = intra_node_bytes_per_s(g, r.node_kind);
  const double network = 0.9 * r.nics_per_node * r.nic_gbps / 8 * 1e9 / r.gpus_per_node;
  c.tp_bw = intra;
  c.ep_bw = r.ep * r.tp > r.gpus_per_node ? network : intra;
  c.dp_bw = r.dp * r.tp > r.gpus_per_node ? network : intra;
  c.pp_bw = r.num_gpus() > r.gpus_per_node ? network : intra;
  return estimate_step_s(c);
}

// parallel.stage_layers of a layout: auto where `dtsim run` splits the layers itself, else the
// uneven split of memory_fit's stage_split.
std::string stage_layers_text(const ModelShape& m, int pp) {
  const StageSplit split = stage_split(m, pp);
  if (!split.uneven) return "auto";
  std::string out;
  for (int n : split.layers) out += fmt::format("{}{}", out.empty() ? "" : ",", n);
  return out;
}

bool valid_layout(const ModelShape& m, const AdviseRow& r, int global_batch) {
  ParallelPlan p;
  p.stage_layers = stage_split(m, r.pp).layers;
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
                               const FrameworkSetup& fw, std::size_t& built) {
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
                const double need = training_memory(m, setup_of(m, r, fw, global_batch), tp, pp, r.dp).total();
                if (need > kMemoryHeadroom * g.memory_bytes) continue;
                r.fit_gib = need / kGiB;
                r.estimate_s = estimate_layout_s(m, g, r, fw, global_batch);
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
  plan.fixed = {{"model.name", q.model}, {"training.framework", q.framework},
                {"training.global_batch", std::to_string(global_batch)},
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

// The best layout again with the other node kinds the GPU can have and slower/faster NICs; on
// NVLink 5 GPUs also in NVL72 racks (as many GPUs per rack as the layout has, up to 64: its
// power of two of the rack's 72, each with its own NIC at the rack's 400 Gb/s).
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
  if (g.nvlink_gen >= 5 && !g.nvlink_bridge_only && best.num_gpus() % Nvl72Rack::kGpusPerTray == 0) {
    const int rack = std::min(best.num_gpus(), 64);
    add(std::string(node_kind_name(NodeKind::nvl72)), rack, Nvl72Rack::kNicGbps);
    out.back().gpus_per_node = rack, out.back().nodes = best.num_gpus() / rack;
  }
  if (best.nodes > 1)
    for (const auto& [nics, gbps] : {std::pair{1, 100.0}, std::pair{8, 400.0}})
      if (nics != best.nics_per_node || gbps != best.nic_gbps) add(best.node_kind, nics, gbps);
  return out;
}

}  // namespace

FrameworkSetup framework_setup(const std::string& name, const std::string& precision) {
  find_framework(name);  // an unknown name: the error `dtsim run` gives
  namespace po = boost::program_options;
  po::variables_map vm;
  const auto set = [&](const char* key, const std::string& value) {
    vm.insert({key, po::variable_value(boost::any(value), false)});
  };
  set("training.framework", name);
  set("training.precision", precision);
  set("parallel.tp", "2");  // the settings of a split with tensor parallelism
  apply_framework(vm, "--framework");
  const auto text = [&](const char* key) { return vm[key].as<std::string>(); };
  FrameworkSetup f;
  f.training.attention = parse_attention(text("training.attention"), "training.attention");
  f.training.dropout = text("training.dropout") == "true";
  f.training.fused_kernels = text("training.fused_kernels") == "true";
  f.training.moe_probs = parse_moe_probs(text("training.moe_probs"), "training.moe_probs");
  f.training.sequence_parallel = text("parallel.sequence_parallel") == "true";
  f.training.zero_stage = std::stoi(text("parallel.zero_stage"));
  f.training.grad_accumulation = parse_grad_accumulation(text("training.grad_accumulation"), "training.grad_accumulation");
  f.tp_overlap = parse_tp_overlap(text("parallel.tp_overlap"), "parallel.tp_overlap");
  f.dp_overlap = text("parallel.dp_overlap") == "true";
  f.training.grad_reduce_fp32 = text("parallel.grad_reduce_fp32") == "true";
  return f;
}

// What would fit `g` when no layout up to `max_gpus` does: the smallest tensor x pipeline split
// that fit finds with full recompute (the least memory), in words with the --max-gpus it needs.
std::string what_would_fit(const ModelShape& m, const GpuSpec& g, const FrameworkSetup& fw, int max_gpus) {
  TrainingSetup least = fw.training;
  least.recompute = Recompute::full;
  least.micro_batch = 1;
  const FitResult f = smallest_training_split(m, least, kMemoryHeadroom * g.memory_bytes, 1, 8);
  if (!f.fits)
    return fmt::format("{}: no tensor x pipeline split of {} fits its {:.0f} GiB, even with full recompute and "
                       "micro-batch 1", g.name, m.name, g.memory_bytes / kGiB);
  int needed = 1;
  while (needed < f.split.gpus()) needed *= 2;
  return fmt::format("{}: nothing fits on up to {} GPUs; with full recompute and micro-batch 1, {} needs tp {} x pp {} "
                     "= {} GPUs ({:.1f} GiB each of {:.0f}): try --max-gpus {}",
                     g.name, max_gpus, m.name, f.split.tp, f.split.pp, f.split.gpus(), f.split.need.total() / kGiB,
                     g.memory_bytes / kGiB, std::max(needed, 2 * max_gpus));
}

AdviseResult advise(const AdviseRequest& q) {
  const ModelShape& m = find_model(q.model);
  const FrameworkSetup fw = framework_setup(q.framework);
  if (q.gpus.empty()) throw InputError("dtsim advise: --gpus needs at least one GPU, e.g. A100-80GB,H100-80GB,RTX4090");
  if (q.max_gpus < 1 || q.max_gpus > limits::kMaxGpus)
    throw InputError(fmt::format("--max-gpus = {}: must be from 1 to {}", q.max_gpus, limits::kMaxGpus));
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
  res.framework = q.framework;
  res.seq_len = m.seq_len;
  res.global_batch = q.global_batch > 0 ? q.global_batch : std::max(1, (1 << 22) / m.seq_len);
  res.tokens = q.tokens > 0 ? q.tokens : 20 * m.total_params();
  std::vector<AdviseRow> rows;
  for (const GpuSpec* g : gpus) {
    const std::vector<AdviseRow> fitting = layouts(m, *g, res.global_batch, q, fw, res.candidates);
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
    for (AdviseRow& v : variants(*best, *g)) {
      v.estimate_s = estimate_layout_s(m, *g, v, fw, res.global_batch);
      extra.push_back(v);
    }
  }
  simulate(extra, q, res.global_batch);
  for (AdviseRow& v : extra) finish(v);
  rows.insert(rows.end(), extra.begin(), extra.end());
  res.rows = std::move(rows);
  if (res.fitting == 0)
    for (const GpuSpec* g : gpus) res.what_would_fit.push_back(what_would_fit(m, *g, fw, q.max_gpus));
  return res;
}

}  // namespace dtsim
