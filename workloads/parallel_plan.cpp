// Rank <-> (tp, cp, dp, pp) coordinates and the consistency checks of a parallel layout (its keys' text: plan_keys.cpp).
#include "workloads/parallel_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <numeric>
#include <utility>

#include "sim/base/error.hpp"
#include "sim/base/limits.hpp"

namespace dtsim {

Recompute ParallelPlan::layer_recompute(int layer) const {
  if (recompute != Recompute::full || recompute_num_layers == 0) return recompute;
  for (int s = 0; s < pp; ++s)
    for (int c = 0; c < chunks(); ++c) {
      const int first = chunk_first_layer(s, c);
      if (layer >= first && layer < first + chunk_layers(s, c))
        return layer - first < recompute_num_layers ? Recompute::full : Recompute::none;
    }
  return recompute;  // a multi-token-prediction module's block, beside the head
}

namespace {
int size_of(const ParallelPlan& p, char dim) { return dim == 't' ? p.tp : dim == 'c' ? p.cp : dim == 'd' ? p.dp : p.pp; }
int& coord_of(RankCoords& c, char dim) { return dim == 't' ? c.tp : dim == 'c' ? c.cp : dim == 'd' ? c.dp : c.pp; }
}  // namespace

RankCoords ParallelPlan::coords(int rank) const {
  RankCoords c;
  for (char dim : order) {
    const int size = size_of(*this, dim);
    coord_of(c, dim) = rank % size;
    rank /= size;
  }
  return c;
}

int ParallelPlan::rank_of(RankCoords c) const {
  int rank = 0;
  for (int i = 3; i >= 0; --i) rank = rank * size_of(*this, order[i]) + coord_of(c, order[i]);
  return rank;
}

namespace {
// A rank's index in its stage's TP x CP x DP block, TP innermost, and back.
int block_index(const ParallelPlan& p, RankCoords c) { return c.tp + p.tp * (c.cp + p.cp * c.dp); }
RankCoords at_block_index(const ParallelPlan& p, RankCoords c, int j) {
  c.tp = j % p.tp, c.cp = j / p.tp % p.cp, c.dp = j / (p.tp * p.cp);
  return c;
}
}  // namespace

RankCoords expert_group_first(const ParallelPlan& plan, RankCoords c, bool expert_dp) {
  if (plan.expert_folding()) {
    const int j = block_index(plan, c);
    return at_block_index(plan, c, expert_dp ? j % plan.ep : j / plan.ep * plan.ep);
  }
  if (expert_dp) c.dp %= plan.ep, c.cp = 0;
  else c.dp = c.dp / plan.ep * plan.ep;
  return c;
}

std::vector<RankCoords> expert_group(const ParallelPlan& plan, RankCoords c, bool expert_dp) {
  const RankCoords first = expert_group_first(plan, c, expert_dp);
  std::vector<RankCoords> out;
  if (plan.expert_folding()) {  // ep consecutive block indices, or every ep-th
    const int j = block_index(plan, first), stride = expert_dp ? plan.ep : 1;
    const int count = expert_dp ? plan.expert_grad_ranks() : plan.ep;
    for (int i = 0; i < count; ++i) out.push_back(at_block_index(plan, first, j + i * stride));
  } else if (!expert_dp) {  // ep consecutive DP ranks
    for (int d = 0; d < plan.ep; ++d) out.push_back(RankCoords{first.dp + d, first.tp, first.pp, first.cp});
  } else {  // the same position in every EP block, with every CP rank
    for (int d = 0; d < plan.expert_dp(); ++d)
      for (int k = 0; k < plan.cp; ++k) out.push_back(RankCoords{first.dp + d * plan.ep, first.tp, first.pp, k});
  }
  return out;
}

int ep_ranks_per_node(const ParallelPlan& plan) {
  if (plan.gpus_per_node < 1) return 0;
  int per_node = -1;
  for (int r = 0; r < plan.num_ranks(); ++r) {
    const RankCoords c = plan.coords(r);
    if (plan.rank_of(expert_group_first(plan, c, false)) != r) continue;  // not the first rank of its EP group
    std::vector<int> nodes;
    for (const RankCoords& m : expert_group(plan, c, false)) nodes.push_back(plan.rank_of(m) / plan.gpus_per_node);
    std::sort(nodes.begin(), nodes.end());
    for (std::size_t a = 0, b = 0; a < nodes.size(); a = b) {
      while (b < nodes.size() && nodes[b] == nodes[a]) ++b;
      const int count = static_cast<int>(b - a);
      if (per_node >= 0 && count != per_node) return 0;
      per_node = count;
    }
  }
  return std::max(per_node, 0);
}

int ParallelPlan::first_layer(int stage) const {
  return std::accumulate(stage_layers.begin(), stage_layers.begin() + stage, 0);
}

int ParallelPlan::chunk_layers(int stage, int chunk) const {
  if (schedule == Schedule::dualpipe) return stage_layers[chunk_stage(stage, chunk)];
  if (schedule == Schedule::dualpipev) return chunk == 0 ? (stage_layers[stage] + 1) / 2 : stage_layers[stage] / 2;
  const int n = stage_layers[stage], v = virtual_stages;
  const int extra = n % v;
  const bool gets_extra = stage == 0 ? chunk >= v - extra : chunk < extra;
  return n / v + (gets_extra ? 1 : 0);
}

int ParallelPlan::chunk_first_layer(int stage, int chunk) const {
  if (schedule == Schedule::dualpipe) return first_layer(chunk_stage(stage, chunk));
  if (schedule == Schedule::dualpipev) {  // the V's stages before: chunk 0 of every rank, then chunk 1 back up
    int first = 0;
    for (int s = 0; s < (chunk == 0 ? stage : pp); ++s) first += chunk_layers(s, 0);
    if (chunk == 1)
      for (int s = pp - 1; s > stage; --s) first += chunk_layers(s, 1);
    return first;
  }
  if (virtual_stages == 1) return first_layer(stage);
  int first = 0;  // the blocks before: all stages' earlier chunks, then this chunk's earlier stages
  for (int c = 0; c <= chunk; ++c)
    for (int s = 0; s < (c < chunk ? pp : stage); ++s) first += chunk_layers(s, c);
  return first;
}

namespace {

// model.moe_groups and model.moe_topk_groups against the experts.
void validate_moe_routing(const ModelShape& m) {
  if (m.moe_groups < 1 || m.experts % m.moe_groups != 0)
    throw InputError(fmt::format("model.moe_groups = {}: must be >= 1 and divide model.experts = {} (the experts form "
                                 "equal groups)", m.moe_groups, m.experts));
  if (m.moe_topk_groups < 1 || m.moe_topk_groups > m.moe_groups)
    throw InputError(fmt::format("model.moe_topk_groups = {}: must be between 1 and model.moe_groups = {}",
                                 m.moe_topk_groups, m.moe_groups));
  if (m.moe_topk_groups * (m.experts / m.moe_groups) < m.active_experts)
    throw InputError(fmt::format("model.moe_topk_groups = {}: its groups hold {} experts, fewer than "
                                 "model.active_experts = {} each token picks among them", m.moe_topk_groups,
                                 m.moe_topk_groups * (m.experts / m.moe_groups), m.active_experts));
}

// parallel.moe_dispatcher = deepep against the EP groups' placement and the expert groups.
void validate_deepep(const ParallelPlan& plan, const ModelShape& m) {
  if (plan.ep == 1) return;  // nothing to exchange
  const int per_node = ep_ranks_per_node(plan);
  if (per_node == 0)
    throw InputError(fmt::format("parallel.moe_dispatcher = deepep: the ranks of each EP group (parallel.ep = {}) must "
                                 "be spread evenly over the nodes they touch (the same count on each, as DeepEP's "
                                 "forwarding assumes); change parallel.rank_order or parallel.ep, or use alltoall",
                                 plan.ep));
  const int nodes = plan.ep / per_node;
  for (int bins : {nodes, plan.ep})
    if (m.moe_groups % bins != 0 && bins % m.moe_groups != 0)
      throw InputError(fmt::format("model.moe_groups = {}: with parallel.moe_dispatcher = deepep each expert group must "
                                   "lie within one node (and one rank) or span whole ones: the groups must be a "
                                   "multiple or a divisor of the EP group's {} nodes and of its {} ranks",
                                   m.moe_groups, nodes, plan.ep));
}

// parallel.ep against the model's experts and the DP size.
void validate_expert_parallel(const ParallelPlan& plan, const ModelShape& model) {
  if (plan.ep < 1) throw InputError(fmt::format("parallel.ep = {}: must be >= 1", plan.ep));
  if (!model.is_moe()) {
    if (plan.ep != 1)
      throw InputError(fmt::format("parallel.ep = {}: model {} has no experts (model.experts = 0); expert parallelism "
                                   "needs a mixture-of-experts model, so set parallel.ep = 1", plan.ep, model.name));
    if (plan.moe_load_imbalance != 1 || plan.moe_capacity_factor != 0)
      throw InputError(fmt::format("training.moe_load_imbalance = {} / training.moe_capacity_factor = {}: model {} has "
                                   "no experts; leave them at 1 and 0", plan.moe_load_imbalance, plan.moe_capacity_factor,
                                   model.name));
    if (plan.moe_dispatcher != MoeDispatcher::alltoall)
      throw InputError(fmt::format("parallel.moe_dispatcher = {}: model {} has no experts; leave it at alltoall",
                                   moe_dispatcher_name(plan.moe_dispatcher), model.name));
    if (plan.etp != 0 && plan.etp != plan.tp)
      throw InputError(fmt::format("parallel.etp = {}: model {} has no experts; leave it at tp", plan.etp, model.name));
    if (plan.moe_a2a_overlap)
      throw InputError(fmt::format("parallel.moe_a2a_overlap = true: model {} has no experts; leave it false",
                                   model.name));
    return;
  }
  if (plan.etp != 0 && plan.etp != 1 && plan.etp != plan.tp)
    throw InputError(fmt::format("parallel.etp = {}: must be parallel.tp = {} (the experts split over TP like the "
                                 "dense MLP) or 1 (parallel folding: whole experts, the EP group spanning TP)",
                                 plan.etp, plan.tp));
  if (plan.expert_folding()) {
    if (!plan.sequence_parallel)
      throw InputError(fmt::format("parallel.etp = 1 with parallel.tp = {}: needs parallel.sequence_parallel = true "
                                   "(each rank routes its own share of the tokens, as Megatron-Core requires with "
                                   "expert and tensor parallelism)", plan.tp));
    if (model.shared_experts > 0)
      throw InputError(fmt::format("parallel.etp = 1 with parallel.tp = {}: model {} has shared experts, which dtsim "
                                   "runs inside the TP region of the routed ones; folding is simulated only for "
                                   "models without them (set parallel.etp = {})", plan.tp, model.name, plan.tp));
    const int block = plan.tp * plan.cp * plan.dp;
    if (block % plan.ep != 0)
      throw InputError(fmt::format("parallel.ep = {}: with parallel.etp = 1 it must divide parallel.tp x cp x dp = {} "
                                   "(the EP groups are folded over the tensor-, context- and data-parallel ranks)",
                                   plan.ep, block));
  } else if (plan.dp % plan.ep != 0) {
    throw InputError(fmt::format("parallel.ep = {}: must divide parallel.dp = {} (the expert-parallel ranks are carved "
                                 "out of the data-parallel replicas; with parallel.etp = 1 they span TP too)",
                                 plan.ep, plan.dp));
  }
  if (model.experts % plan.ep != 0)
    throw InputError(fmt::format("parallel.ep = {}: model.experts = {} is not divisible by it (every expert-parallel "
                                 "rank holds experts / ep of them)", plan.ep, model.experts));
  if (model.expert_ffn_hidden % plan.expert_tp() != 0)
    throw InputError(fmt::format("parallel.tp = {}: model.expert_ffn_hidden = {} is not divisible by it (experts are "
                                 "split over TP like the dense MLP; parallel.etp = 1 keeps them whole)", plan.tp,
                                 model.expert_ffn_hidden));
  if (plan.zero_stage == 3)
    throw InputError(fmt::format("parallel.zero_stage = {}: ZeRO-3 (FSDP) of a mixture-of-experts model is not "
                                 "simulated (its per-layer gathers would need the expert shards); use 0, 1 or 2",
                                 plan.zero_stage));
  validate_moe_routing(model);
  if (plan.moe_dispatcher == MoeDispatcher::deepep) validate_deepep(plan, model);
  // Megatron-Core's checks of --overlap-moe-expert-parallel-comm (arguments.py, transformer_config.py).
  if (plan.moe_a2a_overlap) {
    const char* why = plan.ep == 1 ? "needs expert parallelism (parallel.ep > 1): there is no all-to-all to hide"
                      : plan.recompute == Recompute::full ? "does not run with full recomputation (training.recompute = full)"
                      : plan.dualpipe_family() ? "is DualPipe's own overlap already; leave it false with it"
                      : plan.splits_weight_gradients()
                          ? "pairs whole forward and backward passes; ZB-H1 (parallel.schedule = zbh1) splits the "
                            "backward pass"
                      : plan.pp > 1 && plan.schedule != Schedule::interleaved
                          ? "needs the interleaved schedule when parallel.pp > 1 (Megatron-Core overlaps the passes of "
                            "its virtual stages)"
                          : nullptr;
    if (why) throw InputError(fmt::format("parallel.moe_a2a_overlap = true: {}", why));
  }
}

}  // namespace

// parallel.cp against the sequence and the attention kernel.
void validate_context_parallel(const ParallelPlan& plan, const ModelShape& model, std::string_view key) {
  if (plan.cp == 1) return;
  if (model.seq_len % (2 * plan.cp) != 0)
    throw InputError(fmt::format("{} = {}: the sequence length {} must be a multiple of 2 x cp = {} (every "
                                 "context-parallel rank holds two of the sequence's 2 cp equal chunks)",
                                 key, plan.cp, model.seq_len, 2 * plan.cp));
  if (!fused_attention(plan.attention))
    throw InputError(fmt::format("{} = {} needs flash attention (training.attention = flash): context parallelism "
                                 "runs on fused attention kernels (Megatron-Core and Transformer Engine require them)",
                                 key, plan.cp));
  if (model.sliding_window > 0)
    throw InputError(fmt::format("{} = {} with model.sliding_window = {}: context parallelism over sliding-window "
                                 "attention is not modelled; use cp = 1 or model.sliding_window = 0",
                                 key, plan.cp, model.sliding_window));
}

void validate_plan(ParallelPlan& plan, const ModelShape& model, int num_gpus) {
  auto positive = [](int v, const char* key) {
    if (v < 1) throw InputError(fmt::format("{} = {}: must be >= 1", key, v));
  };
  positive(plan.tp, "parallel.tp");
  positive(plan.pp, "parallel.pp");
  positive(plan.dp, "parallel.dp");
  positive(plan.cp, "parallel.cp");
  positive(plan.micro_batch, "training.micro_batch");
  positive(plan.global_batch, "training.global_batch");
  // Products in 64 bits: each size may be up to the GPU limit, their product far beyond int.
  const std::int64_t ranks = std::int64_t{plan.tp} * plan.cp * plan.pp * plan.dp;
  const std::string product =
      plan.cp == 1 ? fmt::format("parallel.tp x parallel.pp x parallel.dp = {} x {} x {} = {}", plan.tp, plan.pp, plan.dp, ranks)
                   : fmt::format("parallel.tp x parallel.cp x parallel.pp x parallel.dp = {} x {} x {} x {} = {}", plan.tp,
                                 plan.cp, plan.pp, plan.dp, ranks);
  if (ranks > limits::kMaxGpus)
    throw InputError(fmt::format("{}: at most {} GPUs can be simulated", product, limits::kMaxGpus));
  if (ranks != num_gpus)
    throw InputError(fmt::format("{}, but the cluster has {} GPUs; the product must equal the number of GPUs", product,
                                 num_gpus));
  validate_context_parallel(plan, model, "parallel.cp");
  if (model.heads % plan.tp != 0)
    throw InputError(fmt::format("parallel.tp = {}: model.heads = {} is not divisible by it", plan.tp, model.heads));
  if (model.kv_heads_or_heads() % plan.tp != 0 && plan.tp % model.kv_heads_or_heads() != 0)
    throw InputError(fmt::format("parallel.tp = {}: model.kv_heads = {} must divide or be divisible by it",
                                 plan.tp, model.kv_heads_or_heads()));
  if (model.ffn_or_default() % plan.tp != 0)
    throw InputError(fmt::format("parallel.tp = {}: model.ffn_hidden = {} is not divisible by it", plan.tp,
                                 model.ffn_or_default()));
  // The embedding table and the LM head are split by vocabulary rows over TP (Megatron pads the
  // vocabulary to a multiple of 128 x tp): each rank needs at least one row.
  if (model.vocab < plan.tp)
    throw InputError(fmt::format("parallel.tp = {}: model.vocab = {} is smaller; the embedding and the LM head split "
                                 "the vocabulary's rows over the TP ranks, so it needs at least tp of them",
                                 plan.tp, model.vocab));
  validate_expert_parallel(plan, model);
  const std::int64_t replica_batch = std::int64_t{plan.micro_batch} * plan.dp;
  if (plan.global_batch % replica_batch != 0)
    throw InputError(fmt::format(
        "training.global_batch = {}: must be a multiple of training.micro_batch x parallel.dp = {} x {} = {}",
        plan.global_batch, plan.micro_batch, plan.dp, replica_batch));
  // Refuse programs that would not fit in memory rather than thrash or crash.
  const double ops = estimated_program_ops(plan, model);
  if (ops > limits::kMaxProgramOps)
    throw InputError(fmt::format(
        "model.layers = {} with {} micro-batches per step (training.global_batch = {}, training.micro_batch = {}, "
        "parallel.dp = {}) make about {:.0f} million ops to simulate, above the limit of {:.0f} million (about {:.0f} "
        "GB); fewer layers or micro-batches, or a larger micro-batch",
        model.layers, plan.micro_batches(), plan.global_batch, plan.micro_batch, plan.dp, ops / 1e6,
        limits::kMaxProgramOps / 1e6, limits::kMaxProgramOps * 100 / 1e9));
  const double tokens = static_cast<double>(plan.micro_batch) * model.seq_len;
  const double widest = std::max({static_cast<double>(model.hidden), model.q_dim(), 1.0 * model.ffn_or_default()});
  if (tokens * widest > 9e18 || tokens > 2e9)
    throw InputError(fmt::format("training.micro_batch = {} x model.seq_len = {} tokens is too large to simulate",
                                 plan.micro_batch, model.seq_len));
  // Model FLOPs of the step (GEMMs 6 x parameters x tokens, attention 12 x layers x heads x
  // head_dim x seq_len per token, a third more with recompute), per GPU: bounds every simulated time.
  const double step_tokens = static_cast<double>(plan.global_batch) * model.seq_len;
  const double step_flops = (6 * (model.is_moe() ? model.active_params() : model.total_params()) + 12.0 * model.layers * model.q_dim() * model.seq_len) *
                            step_tokens * (plan.recompute == Recompute::none ? 1.0 : 4.0 / 3.0);
  if (!(step_flops / num_gpus <= limits::kMaxStepFlopsPerGpu))
    throw InputError(fmt::format(
        "training.global_batch = {} x model.seq_len = {} tokens on a {:.3g}-parameter model is {:.3g} FLOPs per GPU "
        "per step, above the limit of {:.0e}; lower the batch, the sequence length or the model size",
        plan.global_batch, model.seq_len, model.total_params(), step_flops / num_gpus, limits::kMaxStepFlopsPerGpu));
  if (plan.zero_stage < 0 || plan.zero_stage > 3)
    throw InputError(fmt::format("parallel.zero_stage = {}: valid values are 0, 1, 2, 3", plan.zero_stage));
  if (!(plan.dp_bucket_bytes >= 1e3 && plan.dp_bucket_bytes <= 1e12))
    throw InputError(fmt::format("parallel.dp_bucket_mb = {}: must be between 0.001 and 1e6 MB",
                                 plan.dp_bucket_bytes / 1e6));
  if (plan.sequence_parallel && plan.tp == 1)
    throw InputError("parallel.sequence_parallel = true needs parallel.tp > 1 (it shards over the TP group)");
  if (plan.recompute_modules != module_bit(RecomputeModule::core_attn)) {
    const std::string modules = recompute_modules_name(plan.recompute_modules);
    if (plan.recompute != Recompute::selective)
      throw InputError(fmt::format("training.recompute_modules = {}: the modules are what selective recomputation "
                                   "reruns; set training.recompute = selective (it is {})", modules,
                                   recompute_name(plan.recompute)));
    if ((plan.recompute_modules & module_bit(RecomputeModule::mla_up_proj)) && !model.is_mla())
      throw InputError(fmt::format("training.recompute_modules = {}: mla_up_proj needs a model with multi-head latent "
                                   "attention; {} has none", modules, model.name));
    if ((plan.recompute_modules & module_bit(RecomputeModule::moe_act)) && !model.is_moe())
      throw InputError(fmt::format("training.recompute_modules = {}: moe_act needs a model with experts; {} has none",
                                   modules, model.name));
  }
  positive(plan.virtual_stages, "parallel.virtual_stages");
  if (plan.recompute_num_layers < 0)
    throw InputError(fmt::format("training.recompute_num_layers = {}: must be >= 0 (0: every layer)",
                                 plan.recompute_num_layers));
  if (plan.recompute == Recompute::selective_op && !fused_attention(plan.attention))
    throw InputError("training.recompute = selective_op keeps the fused attention's output (torchtitan's op-level "
                     "checkpointing saves the SDPA kernel's); set training.attention = flash");
  if (plan.recompute_num_layers > 0 && plan.recompute != Recompute::full)
    throw InputError(fmt::format("training.recompute_num_layers = {}: it limits full recomputation to the first layers "
                                 "of each stage; set training.recompute = full (it is {})",
                                 plan.recompute_num_layers, recompute_name(plan.recompute)));
  if (plan.schedule != Schedule::interleaved && plan.virtual_stages != 1)
    throw InputError(fmt::format("parallel.virtual_stages = {}: only the interleaved schedule has virtual stages "
                                 "(set parallel.schedule = interleaved, or virtual_stages = 1)", plan.virtual_stages));
  if (plan.stage_layers.empty()) {
    if (model.layers % plan.pp == 0) {
      plan.stage_layers.assign(plan.pp, model.layers / plan.pp);
    } else if (plan.pp > 1 && (model.layers + 2) % plan.pp == 0 && (model.layers + 2) / plan.pp > 1) {
      // The embedding and the LM head each count as one layer (BLOOM, Megatron-DeepSpeed).
      plan.stage_layers.assign(plan.pp, (model.layers + 2) / plan.pp);
      --plan.stage_layers.front();
      --plan.stage_layers.back();
    } else {
      throw InputError(fmt::format(
          "parallel.pp = {}: model.layers = {} is not divisible by it (nor is layers + 2, counting the "
          "embedding and the head as one layer each); set parallel.stage_layers (comma-separated layers "
          "per stage) for uneven stages", plan.pp, model.layers));
    }
  }
  if (static_cast<int>(plan.stage_layers.size()) != plan.pp)
    throw InputError(fmt::format("parallel.stage_layers has {} entries: need one per pipeline stage (parallel.pp = {})",
                                 plan.stage_layers.size(), plan.pp));
  int sum = 0;
  for (std::size_t i = 0; i < plan.stage_layers.size(); ++i) {
    const int n = plan.stage_layers[i];
    // DualPipeV's rank 0 holds the embedding and the head, which may be all it runs.
    const bool ends_only = plan.schedule == Schedule::dualpipev && i == 0;
    if (n < (ends_only ? 0 : 1))
      throw InputError(fmt::format("parallel.stage_layers: every stage needs >= 1 layer{}, got {}",
                                   plan.schedule == Schedule::dualpipev ? " (DualPipeV's rank 0: >= 0)" : "", n));
    sum += n;
  }
  if (sum != model.layers)
    throw InputError(fmt::format("parallel.stage_layers sums to {} layers but model.layers = {}", sum, model.layers));
  if (plan.schedule == Schedule::interleaved) {
    if (plan.pp < 2) throw InputError("parallel.schedule = interleaved needs parallel.pp >= 2");
    // Every chunk needs a layer, but for the first stage's first chunk, which may hold the
    // embedding alone, and the last stage's last chunk, the head and loss alone (Llama 3's layout,
    // Sec. 3.3.2; Megatron-Core's --account-for-embedding/loss-in-pipeline-split).
    for (int s = 0; s < plan.pp; ++s) {
      const int n = plan.stage_layers[s], least = plan.virtual_stages - (s == 0) - (s == plan.pp - 1);
      if (n < least)
        throw InputError(fmt::format(
            "parallel.schedule = interleaved: stage {} of {} layers cannot hold parallel.virtual_stages = {} model "
            "chunks (every chunk needs >= 1 layer, but for the first stage's first chunk, which may hold the "
            "embedding alone, and the last stage's last chunk, the head alone); lower virtual_stages or set "
            "parallel.stage_layers", s, n, plan.virtual_stages));
    }
    // Megatron-Core's bounds (schedules.py): a group spans pp to m micro-batches, and the last
    // group (the remainder) is empty or at least pp long, else the pipeline waits on itself.
    const int m = plan.micro_batches(), group = plan.microbatch_group_or_pp();
    if (m < plan.pp)
      throw InputError(fmt::format("parallel.schedule = interleaved: {} micro-batches per step, fewer than "
                                   "parallel.pp = {}; the interleaved schedule needs at least pp of them "
                                   "(raise training.global_batch or lower training.micro_batch)", m, plan.pp));
    if (group < plan.pp || group > m || (m % group != 0 && m % group < plan.pp)) {
      std::string valid;
      for (int g = plan.pp; g <= m; ++g)
        if (m % g == 0 || m % g >= plan.pp) valid += (valid.empty() ? "" : ", ") + std::to_string(g);
      throw InputError(fmt::format(
          "parallel.microbatch_group = {}: with {} micro-batches per step and parallel.pp = {} the interleaved "
          "schedule runs groups of pp to {} micro-batches per model chunk, and the last group (the remainder) must "
          "be empty or at least pp long (Megatron-Core's rule); valid values: {}",
          group, m, plan.pp, m, valid));
    }
  }  // DualPipe (deepseek-ai/DualPipe, DualPipe.step): an even number of ranks, half the micro-batches
  // from each end, and at least pp from each so that every rank reaches its overlapped steps.
  if (plan.schedule == Schedule::dualpipe) {
    const int m = plan.micro_batches();
    if (plan.pp < 2 || plan.pp % 2 != 0)
      throw InputError(fmt::format("parallel.schedule = dualpipe: parallel.pp = {}; DualPipe pairs each stage with its "
                                   "mirror and needs an even pp >= 2", plan.pp));
    if (m % 2 != 0 || m < 2 * plan.pp)
      throw InputError(fmt::format("parallel.schedule = dualpipe: {} micro-batches per step; DualPipe feeds half of "
                                   "them from each end and needs an even count of at least 2 x parallel.pp = {} "
                                   "(set training.global_batch = micro_batch x dp x such a count)", m, 2 * plan.pp));
    if (plan.microbatch_group != 0)
      throw InputError("parallel.microbatch_group: only the interleaved schedule groups micro-batches; leave it at 0");
  }
  if (plan.schedule == Schedule::zbh1 && plan.microbatch_group != 0)
    throw InputError("parallel.microbatch_group: only the interleaved schedule groups micro-batches; leave it at 0");
  // DualPipeV (dualpipev.py DualPipeV.step): every rank runs its chunk-0 warm-up of 2 (pp - rank - 1)
  // forwards before the first turn, so it needs at least 2 pp micro-batches; each rank splits its
  // layers over its two chunks.
  if (plan.schedule == Schedule::dualpipev) {
    const int m = plan.micro_batches();
    if (plan.pp < 2)
      throw InputError(fmt::format("parallel.schedule = dualpipev: parallel.pp = {}; the V needs pp >= 2", plan.pp));
    if (m < 2 * plan.pp)
      throw InputError(fmt::format("parallel.schedule = dualpipev: {} micro-batches per step; DualPipeV needs at least "
                                   "2 x parallel.pp = {} (set training.global_batch = micro_batch x dp x such a count)",
                                   m, 2 * plan.pp));
    for (int s = 1; s < plan.pp; ++s)  // rank 0's chunks may hold the embedding or the head alone
      if (plan.stage_layers[static_cast<std::size_t>(s)] < 2)
        throw InputError(fmt::format("parallel.schedule = dualpipev: stage {} holds {} layer(s); each rank but the "
                                     "first splits its layers over its two chunks and needs at least 2 "
                                     "(parallel.stage_layers)",
                                     s, plan.stage_layers[static_cast<std::size_t>(s)]));
    if (plan.microbatch_group != 0)
      throw InputError("parallel.microbatch_group: only the interleaved schedule groups micro-batches; leave it at 0");
  }
}

double estimated_program_ops(const ParallelPlan& plan, const ModelShape& model) {
  return 45.0 * plan.micro_batches() * (static_cast<double>(model.layers) + 2.0 * plan.pp);
}

}  // namespace dtsim
