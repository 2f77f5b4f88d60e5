// Assembles the program of each pipeline stage: the passes of its schedule (pipeline_schedule),
// each layer's kernels (layer_ops) with recomputation, the pipeline sends and receives, the
// data-parallel gradient reduction (one collective after the backward pass, or buckets issued as
// the last backward pass produces them; reduce-scatter + all-gather with a sharded optimizer),
// FSDP parameter gathers per layer (ZeRO-3), the tied-embedding all-reduce and the optimizer step.
// Memory: static weights, gradients and optimizer state (mixed-precision Adam: 2 + 2 + 12 bytes
// per parameter, 8 with BF16 moments, the ZeRO stage sharding them over DP x CP), activations as ops keep and free them.
#include <algorithm>
#include <cassert>
#include <deque>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "workloads/layer_ops.hpp"
#include "workloads/layer_params.hpp"
#include "workloads/memory_fit.hpp"
#include "workloads/pipeline_schedule.hpp"
#include "workloads/program.hpp"

namespace dtsim {
namespace {

struct PendingChange {
  int op;
  MemChange change;
};

class StageBuilder {
 public:
  StageBuilder(const ModelShape& model, const ParallelPlan& plan, int stage)
      : model_(model), plan_(plan), stage_(stage), ops_(model, plan) {}

  StageProgram build() {
    const std::vector<PipelinePass> order = pipeline_order(plan_, stage_);
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (order[i].overlapped) overlapped_pair(order[i], order[i + 1]), ++i;
      else if (order[i].weight) weight(order[i]);
      else if (order[i].forward) forward(order[i]);
      else backward(order[i], last_compute());
    }
    optimizer();
    static_memory();
    finish_memory();
    return std::move(p_);
  }

 private:
  double e() const { return plan_.weight_bytes; }
  double grad_e() const { return plan_.grad_reduce_fp32 ? 4 : e(); }  // bytes per reduced gradient
  int t() const { return plan_.tp; }
  bool first_chunk(int chunk) const { return plan_.holds_embedding(stage_, chunk); }
  bool last_chunk(int chunk) const { return plan_.holds_head(stage_, chunk); }
  // Where a chunk's activations come from and go (DualPipe's chunk 1 runs from the last stage to the first).
  Group upstream(int chunk) const { return plan_.chunk_reversed(chunk) ? Group::pp_next : Group::pp_prev; }
  Group downstream(int chunk) const { return plan_.chunk_reversed(chunk) ? Group::pp_prev : Group::pp_next; }
  // DualPipeV's last rank: chunk 0's activations go on in chunk 1 here, and chunk 1's input
  // gradient back into chunk 0, with no message. turn_in: the chunk takes its input (forward) or
  // gives its input gradient (backward) here; turn_out: it gives its output or takes its output
  // gradient here.
  bool turn_in(int chunk) const { return plan_.turns_locally(stage_) && chunk == 1; }
  bool turn_out(int chunk) const { return plan_.turns_locally(stage_) && chunk == 0; }
  bool sharded_params() const { return plan_.zero_stage >= 3 && plan_.grad_ranks() > 1; }
  // Gradients are reduced as they are produced: in buckets during the last backward pass of each
  // chunk, or during every backward pass when they are sharded (ZeRO-2/3).
  bool reduce_in_pass(const PipelinePass& pass) const {
    if (plan_.grad_ranks() == 1) return false;
    if (plan_.zero_stage >= 2) return true;
    return plan_.dp_overlap && pass.micro_batch == plan_.last_micro_batch(pass.chunk);
  }
  double layer_param_bytes() const { return e() * model_.params_per_layer() / t(); }
  double activation_bytes() const { return e() * ops_.tokens() * model_.hidden; }

  int add(const OpSpec& s, Phase phase, int layer, int mb, std::initializer_list<int> deps) {
    const int id = append_op(p_, s, phase, layer, mb);
    if (s.saved != 0) on_start(id, MemCategory::activations, s.saved);
    for (int d : deps)
      if (d >= 0) p_.deps.push_back(d);
    // Megatron's pipeline sends are synchronous: the next compute op waits for the last sends.
    if (s.stream == Stream::compute) {
      p_.deps.insert(p_.deps.end(), unfinished_sends_.begin(), unfinished_sends_.end());
      unfinished_sends_.clear();
    }
    if (s.comm == CommKind::send) unfinished_sends_.push_back(id);
    // An asynchronous collective overlaps one compute op; the compute op after that waits for it.
    if (s.stream == Stream::compute) {
      for (AsyncOp& a : async_pending_)
        if (a.computes_left-- == 0) p_.deps.push_back(a.op);
      std::erase_if(async_pending_, [](const AsyncOp& a) { return a.computes_left < 0; });
    }
    if (s.async) async_pending_.push_back({id, s.overlaps});
    p_.dep_begin.push_back(static_cast<int>(p_.deps.size()));
    if (s.comm == CommKind::recv)
      (s.group == Group::pp_prev ? p_.recv_from_prev : p_.recv_from_next).push_back(id);
    else
      p_.stream_ops[static_cast<int>(s.stream)].push_back(id);
    return id;
  }
  void on_start(int op, MemCategory c, double bytes) { changes_.push_back({op, {c, false, bytes}}); }
  void on_end(int op, MemCategory c, double bytes) { changes_.push_back({op, {c, true, bytes}}); }

  // Runs ops in order, each after the one before (a compute op after a TP collective waits for
  // it, unless the collective is asynchronous); the first also waits for `extra`. Returns the
  // last op that is not asynchronous.
  int chain(const std::vector<OpSpec>& ops, Phase phase, int layer, int mb, int prev, int extra = -1) {
    for (const OpSpec& op : ops) {
      const int id = add(op, phase, layer, mb, {prev, extra});
      if (!op.async) prev = id;
      extra = -1;
    }
    return prev;
  }
  static double kept(const std::vector<OpSpec>& ops) {
    double sum = 0;
    for (const OpSpec& op : ops) sum += op.saved;
    return sum;
  }

  // FSDP: gather one layer's parameters on the DP stream; they stay until `release` ends.
  int gather_layer(Phase phase, int layer, int mb, int after) {
    const int op = add(comm_spec(OpKind::param_all_gather, Stream::dp, CommKind::all_gather, Group::dp, layer_param_bytes()),
                       phase, layer, mb, {after});
    on_start(op, MemCategory::buffers, layer_param_bytes());
    return op;
  }

  // Megatron's scatter/gather between stages (Narayanan et al. 2021, Sec. 4.1): with TP each
  // rank sends 1/t of the activation and the receiving TP group all-gathers it over NVLink.
  double send_bytes() const { return activation_bytes() / t(); }
  void send(Group to, Phase phase, int mb, int after) {
    add(comm_spec(OpKind::pp_send, Stream::pp_send, CommKind::send, to, send_bytes()), phase, -1, mb, {after});
  }
  // The receive, then (TP) the all-gather; returns the op the next computation waits for.
  int receive(Group from, Phase phase, int mb) {
    const int r = add(comm_spec(OpKind::pp_recv, Stream::pp_recv, CommKind::recv, from, send_bytes()), phase, -1, mb, {});
    on_end(r, MemCategory::buffers, activation_bytes());
    if (t() == 1) return r;
    return add(comm_spec(OpKind::pp_all_gather, Stream::tp, CommKind::all_gather, Group::tp, activation_bytes()), phase, -1,
               mb, {r});
  }

  void forward(const PipelinePass& pass) {
    const int mb = pass.micro_batch;
    int prev = -1, recv = -1;
    if (first_chunk(pass.chunk)) prev = chain(ops_.embedding_forward(), Phase::forward, -1, mb, -1);
    else if (turn_in(pass.chunk)) prev = turned_.at({mb, Phase::forward});  // chunk 0's output, here
    else prev = recv = receive(upstream(pass.chunk), Phase::forward, mb);
    const int begin = plan_.chunk_first_layer(stage_, pass.chunk), count = plan_.chunk_layers(stage_, pass.chunk);
    int gathered = sharded_params() ? gather_layer(Phase::forward, begin, mb, -1) : -1;
    for (int l = begin; l < begin + count; ++l) {
      const int first_op = p_.size();
      const int before = prev;
      prev = chain(ops_.layer_forward(l), Phase::forward, l, mb, prev, gathered);
      if (recv >= 0) {
        on_end(first_op, MemCategory::buffers, -activation_bytes());
        recv = -1;
      }
      if (sharded_params()) {
        on_end(prev, MemCategory::buffers, -layer_param_bytes());
        // Prefetch the next layer once the previous one is done: at most two layers gathered.
        if (l + 1 < begin + count) gathered = gather_layer(Phase::forward, l + 1, mb, before);
      }
    }
    if (last_chunk(pass.chunk)) {
      prev = chain(ops_.head_forward(), Phase::forward, -1, mb, prev);
      for (int k = 0; k < model_.mtp_layers; ++k) prev = mtp_forward(model_.layers + k, mb, prev);
    } else if (turn_out(pass.chunk)) {
      turned_[{mb, Phase::forward}] = prev;
    } else {
      send(downstream(pass.chunk), Phase::forward, mb, prev);
    }
  }

  // Multi-token-prediction module `l` - layers after the main head: its input (the next tokens'
  // embedding, the norms, the projection), its block and the shared head, under the layer tag l.
  int mtp_forward(int l, int mb, int prev) {
    const int gathered = sharded_params() ? gather_layer(Phase::forward, l, mb, -1) : -1;
    prev = chain(ops_.mtp_input(), Phase::forward, l, mb, prev, gathered);
    prev = chain(ops_.layer_forward(l), Phase::forward, l, mb, prev);
    if (sharded_params()) on_end(prev, MemCategory::buffers, -layer_param_bytes());
    return chain(ops_.head_forward(), Phase::forward, l, mb, prev);
  }
  // Its backward, the last module's first: the head, the block, the input; then its gradients.
  int mtp_backward(int l, int mb, int prev, bool reduce) {
    const std::vector<OpSpec> head = ops_.head_forward(), input = ops_.mtp_input();
    prev = chain(ops_.backward_of(head), Phase::backward, l, mb, prev);
    on_end(prev, MemCategory::activations, -kept(head));
    const int gathered = sharded_params() ? gather_layer(Phase::backward, l, mb, -1) : -1;
    prev = layer_backward(l, mb, prev, gathered);
    prev = chain(ops_.backward_of(input), Phase::backward, l, mb, prev);
    on_end(prev, MemCategory::activations, -kept(input));
    if (sharded_params()) on_end(prev, MemCategory::buffers, -layer_param_bytes());
    const LayerParams grads = layer_params(model_, plan_, l);
    prev = accumulate_gradients(grads.replicated + grads.experts, l, mb, prev);
    if (reduce) add_layer_gradients(l, prev);
    return prev;
  }

  // DualPipe's overlapped forward and backward pass (two micro-batches, the two directions): both
  // are built, each starting after the passes before the pair and sending after it, then their
  // ops are interleaved on every stream in segments that end at a collective the computation
  // waits for (the MoE all-to-alls, TP collectives): one pass computes while the other's
  // collective runs (DeepSeek-V3 report Fig. 4; DualPipe's overlapped_forward_backward).
  void overlapped_pair(const PipelinePass& f, const PipelinePass& b) {
    const int begin = p_.size(), before = last_compute();
    std::vector<AsyncOp> pending = std::move(async_pending_);
    async_pending_.clear();
    forward(f);
    const int middle = p_.size();
    std::vector<int> sends = std::move(unfinished_sends_);
    unfinished_sends_.clear();
    pending.insert(pending.end(), async_pending_.begin(), async_pending_.end());
    async_pending_.clear();
    backward(b, before);
    unfinished_sends_.insert(unfinished_sends_.end(), sends.begin(), sends.end());
    async_pending_.insert(async_pending_.end(), pending.begin(), pending.end());
    interleave(begin, middle, p_.size());
  }

  // Orders the ops [begin, end) of every stream by (segment, pass, op): the forward pass's ops are
  // [begin, middle), the backward's [middle, end); a pass's segment grows after each collective
  // its computation waits for.
  void interleave(int begin, int middle, int end) {
    std::vector<std::tuple<int, int, int>> key(end - begin);
    int segment = 0;
    for (int op = begin; op < end; ++op) {
      if (op == middle) segment = 0;
      key[op - begin] = {segment, op < middle ? 0 : 1, op};
      const bool blocking = p_.comm[op] != CommKind::none && (p_.stream[op] == Stream::tp || p_.stream[op] == Stream::cp);
      if (blocking) ++segment;
    }
    for (std::vector<std::int32_t>& ops : p_.stream_ops) {
      const auto first = std::lower_bound(ops.begin(), ops.end(), begin);
      std::sort(first, ops.end(), [&](int a, int b) { return key[a - begin] < key[b - begin]; });
    }
  }

  // A layer's (or the head's) part of a ZB-H1 weight-gradient pass: its weight GEMMs, the
  // activations they read (freed after them) and the parameters whose gradients they give.
  struct DeferredWeights {
    int layer = -1;  // -1: the head or the embedding
    std::vector<OpSpec> ops;
    double kept = 0, params = 0;
  };

  // The backward of one layer: recomputation (full: the whole forward first; selective: the
  // attention core right before its backward), then the backward kernels. Frees what the
  // forward and the recomputation kept. With `defer` (ZB-H1) the weight-gradient GEMMs go there
  // instead, with the activations they read. Returns the last op.
  int layer_backward(int l, int mb, int prev, int gathered, DeferredWeights* defer = nullptr) {
    const std::vector<OpSpec> fwd = ops_.layer_forward(l);
    const std::vector<OpSpec> materialized = ops_.layer_forward(l, true);
    std::vector<OpSpec> bwd = ops_.backward_of(materialized);
    if (defer) {
      LayerOps::WeightSplit split = LayerOps::split_weight_gradients(bwd);
      bwd = std::move(split.input);
      defer->ops = std::move(split.weight);
    }
    double freed = kept(fwd);
    if (plan_.layer_recompute(l) == Recompute::full) {
      prev = chain(materialized, Phase::recompute, l, mb, prev, gathered);
      freed += kept(materialized);
      prev = chain(bwd, Phase::backward, l, mb, prev);
    } else if (plan_.recompute == Recompute::selective && plan_.attention == Attention::standard) {
      const std::vector<OpSpec> reruns = ops_.module_reruns(materialized);
      if (!reruns.empty()) prev = chain(reruns, Phase::recompute, l, mb, prev, std::exchange(gathered, -1));
      freed += kept(reruns);
      const std::vector<OpSpec> core = ops_.attention_core(materialized);
      freed += kept(core);
      const auto split = std::find_if(bwd.begin(), bwd.end(), [](const OpSpec& op) { return op.attention_core; });
      prev = chain({bwd.begin(), split}, Phase::backward, l, mb, prev, gathered);
      prev = chain(core, Phase::recompute, l, mb, prev);
      prev = chain({split, bwd.end()}, Phase::backward, l, mb, prev);
    } else if (plan_.layer_recompute(l) == Recompute::selective_op) {
      const std::vector<OpSpec> reruns = ops_.op_checkpoint_reruns(materialized, kept(fwd));
      prev = chain(reruns, Phase::recompute, l, mb, prev, std::exchange(gathered, -1));
      freed += kept(reruns);
      prev = chain(bwd, Phase::backward, l, mb, prev, gathered);
    } else {
      const std::vector<OpSpec> reruns = plan_.recompute == Recompute::selective ? ops_.module_reruns(materialized)
                                                                              : std::vector<OpSpec>{};
      if (!reruns.empty()) prev = chain(reruns, Phase::recompute, l, mb, prev, std::exchange(gathered, -1));
      freed += kept(reruns);
      prev = chain(bwd, Phase::backward, l, mb, prev, gathered);
    }
    if (defer) {
      defer->layer = l;
      defer->kept = std::min(LayerOps::weight_gradient_inputs(materialized), freed);
      freed -= defer->kept;
    }
    on_end(prev, MemCategory::activations, -freed);
    return prev;
  }

  // The backward pass, its first op after op `after`. Under ZB-H1 it is the input-gradient pass:
  // the weight GEMMs, the gradients' accumulation and their reduction wait for the micro-batch's
  // weight-gradient pass (weight()).
  void backward(const PipelinePass& pass, int after) {
    const int mb = pass.micro_batch;
    const bool split = plan_.splits_weight_gradients();
    const bool reduce = !split && reduce_in_pass(pass);
    std::vector<DeferredWeights> deferred;
    int prev = after, recv = -1;
    if (last_chunk(pass.chunk)) {
      for (int k = model_.mtp_layers - 1; k >= 0; --k) prev = mtp_backward(model_.layers + k, mb, prev, reduce);
      const std::vector<OpSpec> head = ops_.head_forward();
      const double head_params = model_.head_params() + model_.final_norm_params() + tied_copy_params();
      std::vector<OpSpec> bwd = ops_.backward_of(head);
      double freed = kept(head);
      if (split) {
        LayerOps::WeightSplit parts = LayerOps::split_weight_gradients(bwd);
        bwd = std::move(parts.input);
        const double read = std::min(LayerOps::weight_gradient_inputs(head), freed);
        deferred.push_back({-1, std::move(parts.weight), read, head_params});
        freed -= read;
      }
      prev = chain(bwd, Phase::backward, -1, mb, prev);
      on_end(prev, MemCategory::activations, -freed);
      if (!split) prev = accumulate_gradients(head_params, -1, mb, prev);
      if (reduce) add_gradients(head_params, prev);
    } else if (turn_out(pass.chunk)) {
      // Chunk 1's input gradient, here: both are compute ops, so the later one follows the other.
      prev = std::max(prev, turned_.at({mb, Phase::backward}));
    } else {
      prev = recv = receive(downstream(pass.chunk), Phase::backward, mb);
    }
    const int begin = plan_.chunk_first_layer(stage_, pass.chunk), count = plan_.chunk_layers(stage_, pass.chunk);
    int gathered = sharded_params() ? gather_layer(Phase::backward, begin + count - 1, mb, -1) : -1;
    for (int l = begin + count - 1; l >= begin; --l) {
      const int first_op = p_.size();
      const int before = prev;
      DeferredWeights* defer = split ? &deferred.emplace_back() : nullptr;
      prev = layer_backward(l, mb, prev, gathered, defer);
      if (recv >= 0) {
        on_end(first_op, MemCategory::buffers, -activation_bytes());
        recv = -1;
      }
      if (sharded_params()) {
        on_end(prev, MemCategory::buffers, -layer_param_bytes());
        if (l > begin) gathered = gather_layer(Phase::backward, l - 1, mb, before);
      }
      const LayerParams grads = layer_params(model_, plan_, l);
      if (split) {
        defer->params = grads.replicated + grads.experts;
        continue;
      }
      prev = accumulate_gradients(grads.replicated + grads.experts, l, mb, prev);
      if (reduce) add_layer_gradients(l, prev);
    }
    if (first_chunk(pass.chunk)) {
      const std::vector<OpSpec> emb = ops_.embedding_forward();
      prev = chain(ops_.backward_of(emb), Phase::backward, -1, mb, prev);
      if (kept(emb) > 0) on_end(prev, MemCategory::activations, -kept(emb));
      if (split) deferred.push_back({-1, {}, 0, model_.embedding_params()});
      else prev = accumulate_gradients(model_.embedding_params(), -1, mb, prev);
      if (reduce) add_gradients(model_.embedding_params(), prev);
    } else if (turn_in(pass.chunk)) {
      turned_[{mb, Phase::backward}] = prev;
    } else {
      send(upstream(pass.chunk), Phase::backward, mb, prev);
    }
    if (reduce) flush_bucket();
    if (split) deferred_[{mb, pass.chunk}] = std::move(deferred);
  }

  // ZB-H1's weight-gradient pass of a micro-batch: the weight GEMMs its backward pass deferred, in
  // that pass's order, each part's gradients accumulated (and, where this pass reduces them,
  // bucketed for the reduction) after its GEMMs, and the activations they read freed.
  void weight(const PipelinePass& pass) {
    const int mb = pass.micro_batch;
    const bool reduce = reduce_in_pass(pass);
    auto deferred = deferred_.extract({mb, pass.chunk});
    if (deferred.empty()) throw std::logic_error("program builder: a weight-gradient pass before its backward pass");
    int prev = last_compute();
    for (const DeferredWeights& d : deferred.mapped()) {
      prev = chain(d.ops, Phase::backward, d.layer, mb, prev);
      if (d.kept > 0) on_end(prev, MemCategory::activations, -d.kept);
      prev = accumulate_gradients(d.params, d.layer, mb, prev);
      if (!reduce) continue;
      if (d.layer >= 0) add_layer_gradients(d.layer, prev);
      else add_gradients(d.params, prev);
    }
    if (reduce) flush_bucket();
  }

  // Without fused accumulation, the weight gradients of `params` (whole-model count, split over
  // TP here) are added into the gradient buffer by kernels of their own (with ZeRO-2/3 the
  // reduced shard): separate, read the new gradient and the buffer, write the buffer (3 e bytes
  // per parameter); fp32_buffer, cast the gradient to fp32 (read e, write 4) and add it into the
  // fp32 buffer (read 4 + 4, write 4). Returns the op the next one waits for.
  int accumulate_gradients(double params, int layer, int mb, int prev) {
    if (plan_.grad_accumulation == GradAccumulation::fused) return prev;
    const double local = params / t() / (plan_.zero_stage >= 2 ? plan_.grad_ranks() : 1);
    OpSpec add_grads;
    add_grads.kind = OpKind::grad_accumulate;
    add_grads.flops = local;
    if (plan_.grad_accumulation == GradAccumulation::separate) {
      add_grads.bytes = 3 * e() * local;
      return add(add_grads, Phase::backward, layer, mb, {prev});
    }
    OpSpec cast = add_grads;
    cast.bytes = (e() + 4) * local;
    add_grads.bytes = 12 * local;
    return add(add_grads, Phase::backward, layer, mb, {add(cast, Phase::backward, layer, mb, {prev})});
  }

  // Gradients of `params` (whole-model count, split over TP here) are ready after op `ready`.
  // ZeRO-3 reduces each layer on its own (an FSDP unit); otherwise buckets fill to the size.
  void add_gradients(double params, int ready) {
    bucket_bytes_ += grad_e() * params / t();
    bucket_ready_ = ready;
    if (sharded_params() || bucket_bytes_ >= plan_.dp_bucket_bytes) flush_bucket();
  }
  // A layer's gradients: the replicated part into the DP bucket, the EP shard's experts into the
  // expert-DP bucket (nothing to reduce when every DP rank holds other experts: ep = dp).
  void add_layer_gradients(int layer, int ready) {
    const LayerParams params = layer_params(model_, plan_, layer);
    add_gradients(params.replicated, ready);
    if (params.experts == 0 || plan_.expert_grad_ranks() == 1) return;
    expert_bucket_bytes_ += grad_e() * params.experts / plan_.expert_tp();
    expert_bucket_ready_ = ready;
    if (expert_bucket_bytes_ >= plan_.dp_bucket_bytes) flush_expert_bucket();
  }
  void flush_bucket() {
    flush_expert_bucket();
    if (bucket_bytes_ == 0) return;
    reduce_gradients(bucket_bytes_, bucket_ready_);
    bucket_bytes_ = 0;
  }
  void flush_expert_bucket() {
    if (expert_bucket_bytes_ == 0) return;
    reduce_gradients(expert_bucket_bytes_, expert_bucket_ready_, true);
    expert_bucket_bytes_ = 0;
  }
  void reduce_gradients(double bytes, int after, bool experts = false) {
    const Group g = experts ? Group::expert_dp : Group::dp;
    if (plan_.zero_stage == 0)
      add(comm_spec(experts ? OpKind::expert_dp_all_reduce : OpKind::dp_all_reduce, Stream::dp, CommKind::all_reduce, g, bytes),
          Phase::backward, -1, -1, {after});
    else
      add(comm_spec(experts ? OpKind::expert_dp_reduce_scatter : OpKind::dp_reduce_scatter, Stream::dp,
               CommKind::reduce_scatter, g, bytes), Phase::backward, -1, -1, {after});
  }

  int last_compute() const {
    const auto& ops = p_.stream_ops[static_cast<int>(Stream::compute)];
    return ops.empty() ? -1 : ops.back();
  }
  int last_dp() const {
    const auto& ops = p_.stream_ops[static_cast<int>(Stream::dp)];
    return ops.empty() ? -1 : ops.back();
  }

  // Tied embeddings over a pipeline: the last stage keeps its own copy of the word embedding.
  double tied_copy_params() const {
    return model_.tied_embeddings && plan_.head_apart_from_embedding() ? static_cast<double>(model_.vocab) * model_.hidden : 0;
  }
  double local_params() const { return stage_params(model_, plan_, stage_).replicated / t(); }

  // The routed experts of this EP rank on this stage, split over TP.
  double local_expert_params() const { return stage_params(model_, plan_, stage_).experts / plan_.expert_tp(); }
  bool reduce_experts() const { return local_expert_params() > 0 && plan_.expert_grad_ranks() > 1; }

  void optimizer() {
    const double params = local_params(), experts = local_expert_params(), edp = plan_.expert_grad_ranks();
    int prev = last_compute();
    // Gradients not reduced during the backward pass are reduced now, in one collective (and one
    // over the expert-DP group for the experts).
    if (plan_.grad_ranks() > 1 && !plan_.dp_overlap && plan_.zero_stage < 2) {
      reduce_gradients(grad_e() * params, prev);
      if (reduce_experts()) reduce_gradients(grad_e() * experts, prev, true);
    }
    // Tied embeddings over a pipeline: the first and last stages sum their word-embedding
    // gradients (Megatron's embedding group, on the main gradient: fp32 with grad_reduce_fp32;
    // DeepSpeed's ReduceTiedGrads on the fp32 _hp_grad).
    if (model_.tied_embeddings && plan_.head_apart_from_embedding() && (stage_ == 0 || stage_ == plan_.pp - 1))
      add(comm_spec(OpKind::embedding_all_reduce, Stream::dp, CommKind::all_reduce, Group::embedding,
               grad_e() * model_.vocab * model_.hidden / t()),
          Phase::optimizer, -1, -1, {prev});
    // Megatron's mixed-precision step on fp32 master weights, as HBM passes per parameter: copy
    // the low-precision gradient into the fp32 main gradient (e + 4; not needed when the GEMMs
    // or an fp32 buffer accumulate into it), unscale and check it for inf/NaN under fp16 loss scaling (4 + 4), its
    // norm for clipping (4), Adam (read master, grad, m, v; write master, m, v: 12 + 4 x the
    // moment's bytes, 28 with fp32 moments), and the copy
    // back to the low-precision weights (4 + e).
    const double shard = plan_.zero_stage >= 1 ? params / plan_.grad_ranks() + experts / edp : params + experts;
    // DualPipe: the mirror rank computed gradients of the same two stages; the pair sums its
    // reduced shards (the gradient of a parameter is the sum over both directions' micro-batches).
    if (plan_.schedule == Schedule::dualpipe)
      add(comm_spec(OpKind::mirror_all_reduce, Stream::dp, CommKind::all_reduce, Group::pp_mirror, grad_e() * shard),
          Phase::optimizer, -1, -1, {prev, last_dp()});
    const double grad_copy = plan_.grad_accumulation == GradAccumulation::separate ? e() + 4 : 0;
    OpSpec step;
    step.kind = OpKind::optimizer_step;
    step.bytes = shard * (grad_copy + (plan_.loss_scaling ? 8 : 0) + 4 + 12 + 4 * plan_.moment_bytes + (4 + e()));
    step.flops = 16 * shard;
    prev = add(step, Phase::optimizer, -1, -1, {prev, last_dp()});
    if (plan_.grad_ranks() > 1 && (plan_.zero_stage == 1 || plan_.zero_stage == 2))
      add(comm_spec(OpKind::dp_all_gather, Stream::dp, CommKind::all_gather, Group::dp, e() * params), Phase::optimizer, -1, -1,
          {prev});
    if (reduce_experts() && (plan_.zero_stage == 1 || plan_.zero_stage == 2))
      add(comm_spec(OpKind::expert_dp_all_gather, Stream::dp, CommKind::all_gather, Group::expert_dp, e() * experts),
          Phase::optimizer, -1, -1, {prev});
  }

  void static_memory() {
    const StageState state = stage_state(model_, plan_, stage_);
    p_.static_bytes[static_cast<int>(MemCategory::weights)] = state.weights;
    p_.static_bytes[static_cast<int>(MemCategory::gradients)] = state.gradients;
    p_.static_bytes[static_cast<int>(MemCategory::optimizer)] = state.optimizer;
  }

  void finish_memory() {
    std::stable_sort(changes_.begin(), changes_.end(), [](const PendingChange& a, const PendingChange& b) { return a.op < b.op; });
    p_.mem_begin.assign(p_.size() + 1, 0);
    for (const PendingChange& c : changes_) {
      ++p_.mem_begin[c.op + 1];
      p_.mem_changes.push_back(c.change);
    }
    for (int i = 0; i < p_.size(); ++i) p_.mem_begin[i + 1] += p_.mem_begin[i];
  }

  const ModelShape& model_;
  const ParallelPlan& plan_;
  int stage_;
  LayerOps ops_;
  StageProgram p_;
  std::vector<PendingChange> changes_;
  double bucket_bytes_ = 0;
  int bucket_ready_ = -1;
  double expert_bucket_bytes_ = 0;
  int expert_bucket_ready_ = -1;
  std::vector<int> unfinished_sends_;
  std::map<std::pair<int, Phase>, int> turned_;  // DualPipeV's last rank: (micro-batch, phase) -> the op handing over
  std::map<std::pair<int, int>, std::vector<DeferredWeights>> deferred_;  // ZB-H1: (micro-batch, chunk) -> its W pass
  struct AsyncOp {
    int op;
    int computes_left;  // compute ops that may still run before one must wait for it
  };
  std::vector<AsyncOp> async_pending_;
};

// Orders `receives` (ops of `receiver`) as `sender` sends to them over `to`: a stage's messages
// from one neighbour arrive in the order it sends them, and the engine hands each arrival to the
// next receive of the list. Messages are told apart by micro-batch and phase, the k-th of a kind
// matching the k-th (the chunks of an interleaved stage, in order). Schedules whose passes
// alternate directions (DualPipe) send and receive in different orders.
void match_receives(std::vector<std::int32_t>& receives, const StageProgram& receiver, const StageProgram& sender, Group to) {
  std::map<std::pair<int, Phase>, std::deque<std::int32_t>> waiting;
  for (std::int32_t op : receives) waiting[{receiver.micro_batch[op], receiver.phase[op]}].push_back(op);
  std::vector<std::int32_t> ordered;
  ordered.reserve(receives.size());
  for (std::int32_t op : sender.stream_ops[static_cast<int>(Stream::pp_send)]) {
    if (sender.group[op] != to) continue;
    std::deque<std::int32_t>& q = waiting[{sender.micro_batch[op], sender.phase[op]}];
    if (q.empty()) throw std::logic_error("program builder: a pipeline send has no matching receive");
    ordered.push_back(q.front());
    q.pop_front();
  }
  if (ordered.size() != receives.size()) throw std::logic_error("program builder: a pipeline receive has no matching send");
  receives = std::move(ordered);
}

}  // namespace

Program build_program(const ModelShape& model, const ParallelPlan& plan) {
  Program program;
  program.plan = plan;
  program.model = model;
  for (int s = 0; s < plan.pp; ++s) {
    program.stages.push_back(StageBuilder(model, plan, s).build());
    const StageProgram& st = program.stages.back();
    for (int i = 0; i < st.size(); ++i)
      if (st.gemm_m[i] > 0 && st.phase[i] != Phase::recompute)
        program.model_flops_per_step += st.flops[i] * plan.tp * plan.cp * plan.dp;
  }
  for (int s = 0; s < plan.pp; ++s) {
    StageProgram& st = program.stages[s];
    match_receives(st.recv_from_prev, st, program.stages[(s + plan.pp - 1) % plan.pp], Group::pp_next);
    match_receives(st.recv_from_next, st, program.stages[(s + 1) % plan.pp], Group::pp_prev);
  }
  return program;
}

}  // namespace dtsim
