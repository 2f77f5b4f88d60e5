// Decomposes a training step into ops per pipeline stage: each transformer layer into its
// kernels (norms, projections, attention, MLP, dropout/residual) with FLOPs, HBM bytes and the
// activations they keep (Korthikanti et al. 2022, Sec. 4), the Megatron TP all-reduces, the
// pipeline sends/receives of the 1F1B or GPipe schedule, the DP gradient reduction and the
// optimizer step. Memory: weights, gradients and optimizer state are static per stage (mixed
// precision Adam: 2 + 2 + 12 bytes per parameter, ZeRO-1 shards the 12 over DP).
#include <fmt/format.h>

#include <cassert>
#include <initializer_list>

#include "workloads/program.hpp"

namespace dtsim {
namespace {

struct OpSpec {
  OpKind kind;
  Stream stream = Stream::compute;
  double flops = 0, bytes = 0;
  int m = 0, n = 0, k = 0, batch = 0;
  CommKind comm = CommKind::none;
  Group group = Group::none;
  double saved = 0;  // activation bytes kept for the backward pass (allocated at start)
};

class StageBuilder {
 public:
  StageBuilder(const ModelShape& model, const ParallelPlan& plan, int stage)
      : model_(model), plan_(plan), stage_(stage) {}

  StageProgram build() {
    const int m = plan_.micro_batches();
    const int warmup = plan_.schedule == Schedule::gpipe ? m : std::min(plan_.pp - stage_ - 1, m);
    for (int i = 0; i < warmup; ++i) forward(i);
    for (int i = 0; i < m - warmup; ++i) {
      forward(warmup + i);
      backward(i);
    }
    for (int i = m - warmup; i < m; ++i) backward(i);
    optimizer();
    static_memory();
    return std::move(p_);
  }

 private:
  double tokens() const { return static_cast<double>(plan_.micro_batch) * model_.seq_len; }
  double e() const { return plan_.weight_bytes; }
  int t() const { return plan_.tp; }
  bool first() const { return stage_ == 0; }
  bool last() const { return stage_ == plan_.pp - 1; }

  int add(const OpSpec& s, Phase phase, int layer, int mb, std::initializer_list<int> deps) {
    const int id = p_.size();
    p_.kind.push_back(s.kind);
    p_.stream.push_back(s.stream);
    p_.phase.push_back(phase);
    p_.layer.push_back(layer);
    p_.micro_batch.push_back(mb);
    p_.flops.push_back(s.flops);
    p_.bytes.push_back(s.bytes);
    p_.gemm_m.push_back(s.m);
    p_.gemm_n.push_back(s.n);
    p_.gemm_k.push_back(s.k);
    p_.gemm_batch.push_back(s.batch);
    p_.comm.push_back(s.comm);
    p_.group.push_back(s.group);
    p_.mem_start_category.push_back(MemCategory::activations);
    p_.mem_start_bytes.push_back(s.saved);
    p_.mem_end_category.push_back(MemCategory::activations);
    p_.mem_end_bytes.push_back(0);
    for (int d : deps)
      if (d >= 0) p_.deps.push_back(d);
    p_.dep_begin.push_back(static_cast<int>(p_.deps.size()));
    if (s.comm == CommKind::recv)
      (s.group == Group::pp_prev ? p_.recv_from_prev : p_.recv_from_next).push_back(id);
    else
      p_.stream_ops[static_cast<int>(s.stream)].push_back(id);
    return id;
  }
  void free_at_end(int op, MemCategory c, double bytes) {
    assert(p_.mem_end_bytes[op] == 0);
    p_.mem_end_category[op] = c;
    p_.mem_end_bytes[op] = -bytes;
  }

  // GEMM [m x k] x [k x n], `batch` times; bytes = inputs and output once.
  OpSpec gemm(OpKind kind, double m, double n, double k, double batch = 1) const {
    OpSpec s{kind};
    s.m = static_cast<int>(m);
    s.n = static_cast<int>(n);
    s.k = static_cast<int>(k);
    s.batch = static_cast<int>(batch);
    s.flops = 2 * m * n * k * batch;
    s.bytes = e() * (m * k + k * n + m * n) * batch;
    return s;
  }
  OpSpec elementwise(OpKind kind, double bytes, double flops) const {
    OpSpec s{kind};
    s.bytes = bytes;
    s.flops = flops;
    return s;
  }
  OpSpec collective(OpKind kind, Stream stream, CommKind comm, Group group, double bytes) const {
    OpSpec s{kind, stream};
    s.comm = comm;
    s.group = group;
    s.bytes = bytes;
    return s;
  }
  OpSpec tp_all_reduce(double bytes) const {
    return collective(OpKind::tp_all_reduce, Stream::tp, CommKind::all_reduce, Group::tp, bytes);
  }
  OpSpec layernorm(OpKind kind) const {
    return elementwise(kind, 2 * e() * tokens() * model_.hidden, 8 * tokens() * model_.hidden);
  }

  // The forward ops of one transformer layer, each with the activation bytes it keeps.
  std::vector<OpSpec> layer_forward() const {
    const double T = tokens(), h = model_.hidden, s = model_.seq_len, b = plan_.micro_batch;
    const double heads = static_cast<double>(model_.heads) / t(), hd = model_.head_dim();
    const double f = model_.ffn_or_default() / static_cast<double>(t());
    const double up = model_.ffn == FfnKind::swiglu ? 2 * f : f;
    const double qkv_n = (h + 2 * model_.kv_dim()) / t();
    const double scores = b * heads * s * s;  // attention score elements per rank
    std::vector<OpSpec> ops;
    auto keep = [&](OpSpec op, double saved) { op.saved = saved; ops.push_back(op); };
    keep(layernorm(OpKind::layernorm), e() * T * h);
    keep(gemm(OpKind::qkv_proj, T, qkv_n, h), e() * T * h);
    keep(gemm(OpKind::attn_scores, s, s, hd, b * heads), 2 * e() * T * h / t());
    keep(elementwise(OpKind::softmax_dropout, (2 * e() + 1) * scores, 6 * scores), (e() + 1) * scores);
    keep(gemm(OpKind::attn_context, s, hd, s, b * heads), e() * scores + e() * T * h / t());
    keep(gemm(OpKind::out_proj, T, h, h / t()), e() * T * h / t());
    if (t() > 1) ops.push_back(tp_all_reduce(e() * T * h));
    keep(elementwise(OpKind::dropout_residual, (3 * e() + 1) * T * h, 2 * T * h), T * h);
    keep(layernorm(OpKind::layernorm), e() * T * h);
    keep(gemm(OpKind::fc1, T, up, h), e() * T * h);
    keep(elementwise(OpKind::activation, e() * T * (up + f), 8 * T * f), e() * T * up);
    keep(gemm(OpKind::fc2, T, h, f), e() * T * f);
    if (t() > 1) ops.push_back(tp_all_reduce(e() * T * h));
    keep(elementwise(OpKind::dropout_residual, (3 * e() + 1) * T * h, 2 * T * h), T * h);
    return ops;
  }

  // Runs a list of ops in order: each waits for the one before it (so a compute op after a TP
  // all-reduce waits for the all-reduce). Returns the last op. keep_saved = false drops the
  // activation allocations (backward passes).
  int chain(const std::vector<OpSpec>& ops, Phase phase, int layer, int mb, int prev, bool keep_saved) {
    for (OpSpec op : ops) {
      if (!keep_saved) op.saved = 0;
      prev = add(op, phase, layer, mb, {prev});
    }
    return prev;
  }

  // Backward of a list of forward ops: reversed, GEMMs and elementwise ops twice the work,
  // the TP all-reduce of each column-parallel input gradient after the GEMM that produces it.
  std::vector<OpSpec> backward_of(const std::vector<OpSpec>& fwd) const {
    std::vector<OpSpec> ops;
    for (auto it = fwd.rbegin(); it != fwd.rend(); ++it) {
      if (it->comm != CommKind::none) continue;
      OpSpec op = *it;
      op.saved = 0;
      op.flops *= 2;
      op.bytes *= 2;
      ops.push_back(op);
      const bool column_parallel_input = op.kind == OpKind::qkv_proj || op.kind == OpKind::fc1 ||
                                         op.kind == OpKind::lm_head;
      if (column_parallel_input && t() > 1) ops.push_back(tp_all_reduce(e() * tokens() * model_.hidden));
    }
    return ops;
  }

  std::vector<OpSpec> embedding_forward() const {
    const double T = tokens(), h = model_.hidden;
    std::vector<OpSpec> ops{elementwise(OpKind::embedding, 2 * e() * T * h, 0)};
    if (t() > 1) ops.push_back(tp_all_reduce(e() * T * h));  // vocab-parallel embedding
    if (model_.embedding_norm) {
      OpSpec norm = layernorm(OpKind::embedding_norm);
      norm.saved = e() * T * h;
      ops.push_back(norm);
    }
    return ops;
  }

  std::vector<OpSpec> head_forward() const {
    const double T = tokens(), h = model_.hidden, v = static_cast<double>(model_.vocab) / t();
    std::vector<OpSpec> ops;
    OpSpec norm = layernorm(OpKind::final_norm);
    norm.saved = e() * T * h;
    ops.push_back(norm);
    OpSpec head = gemm(OpKind::lm_head, T, v, h);
    head.saved = e() * T * h + 4 * T * v;  // input and fp32 logits for the cross-entropy
    ops.push_back(head);
    ops.push_back(elementwise(OpKind::loss, 3 * 4 * T * v, 5 * T * v));
    if (t() > 1) ops.push_back(tp_all_reduce(3 * 4 * T));  // max, sum-exp, target logit
    return ops;
  }

  void forward(int mb) {
    const double msg = e() * tokens() * model_.hidden;
    int prev = -1;
    bool recv_pending = false;
    if (!first()) {
      prev = add(collective(OpKind::pp_recv, Stream::pp_recv, CommKind::recv, Group::pp_prev, msg),
                 Phase::forward, -1, mb, {});
      p_.mem_end_category[prev] = MemCategory::buffers;
      p_.mem_end_bytes[prev] = msg;
      recv_pending = true;
    } else {
      prev = chain(embedding_forward(), Phase::forward, -1, mb, -1, true);
    }
    const int begin = plan_.first_layer(stage_);
    const bool full = plan_.recompute == Recompute::full;
    for (int l = begin; l < begin + plan_.stage_layers[stage_]; ++l) {
      std::vector<OpSpec> ops = layer_forward();
      if (full) {  // keep only the checkpoint: the layer input
        for (OpSpec& op : ops) op.saved = 0;
        ops.front().saved = e() * tokens() * model_.hidden;
      }
      const int first_op = p_.size();
      prev = chain(ops, Phase::forward, l, mb, prev, true);
      if (recv_pending) {
        free_at_end(first_op, MemCategory::buffers, msg);
        recv_pending = false;
      }
    }
    if (last()) chain(head_forward(), Phase::forward, -1, mb, prev, true);
    else add(collective(OpKind::pp_send, Stream::pp_send, CommKind::send, Group::pp_next, msg), Phase::forward, -1, mb, {prev});
  }

  void backward(int mb) {
    const double msg = e() * tokens() * model_.hidden;
    int prev = last_compute();
    bool recv_pending = false;
    if (!last()) {
      const int r = add(collective(OpKind::pp_recv, Stream::pp_recv, CommKind::recv, Group::pp_next, msg),
                        Phase::backward, -1, mb, {});
      p_.mem_end_category[r] = MemCategory::buffers;
      p_.mem_end_bytes[r] = msg;
      prev = r;
      recv_pending = true;
    } else {
      double kept = 0;
      for (const OpSpec& op : head_forward()) kept += op.saved;
      prev = chain(backward_of(head_forward()), Phase::backward, -1, mb, prev, false);
      free_at_end(prev, MemCategory::activations, kept);
    }
    const int begin = plan_.first_layer(stage_);
    const bool full = plan_.recompute == Recompute::full;
    for (int l = begin + plan_.stage_layers[stage_] - 1; l >= begin; --l) {
      std::vector<OpSpec> fwd = layer_forward();
      double kept = 0;
      for (const OpSpec& op : fwd) kept += op.saved;
      const int first_op = p_.size();
      if (full) prev = chain(fwd, Phase::recompute, l, mb, prev, true);
      prev = chain(backward_of(fwd), Phase::backward, l, mb, prev, false);
      free_at_end(prev, MemCategory::activations, kept + (full ? e() * tokens() * model_.hidden : 0));
      if (recv_pending) {
        free_at_end(first_op, MemCategory::buffers, msg);
        recv_pending = false;
      }
    }
    if (first()) {
      double kept = 0;
      for (const OpSpec& op : embedding_forward()) kept += op.saved;
      prev = chain(backward_of(embedding_forward()), Phase::backward, -1, mb, prev, false);
      if (kept > 0) free_at_end(prev, MemCategory::activations, kept);
    } else {
      add(collective(OpKind::pp_send, Stream::pp_send, CommKind::send, Group::pp_prev, msg), Phase::backward, -1, mb, {prev});
    }
  }

  int last_compute() const {
    const auto& ops = p_.stream_ops[static_cast<int>(Stream::compute)];
    return ops.empty() ? -1 : ops.back();
  }

  double local_params() const {
    const int n = plan_.stage_layers[stage_];
    double params = n * model_.params_per_layer();
    if (first()) params += model_.embedding_params();
    if (last()) params += model_.head_params() + model_.final_norm_params();
    // Tied embeddings: the last stage keeps its own copy of the word embedding for the LM head.
    if (last() && model_.tied_embeddings && plan_.pp > 1) params += static_cast<double>(model_.vocab) * model_.hidden;
    return params / t();
  }

  void optimizer() {
    const double params = local_params();
    const double grad_bytes = e() * params;
    const int after_backward = last_compute();
    const double sharded = plan_.zero_stage >= 1 ? params / plan_.dp : params;
    int prev = after_backward;
    // Tied embeddings over a pipeline: the first and last stages sum their word-embedding
    // gradients (Megatron's embedding group) before the DP reduction.
    if (model_.tied_embeddings && plan_.pp > 1 && (first() || last()))
      prev = add(collective(OpKind::embedding_all_reduce, Stream::dp, CommKind::all_reduce, Group::embedding,
                            e() * model_.vocab * model_.hidden / t()),
                 Phase::optimizer, -1, -1, {prev});
    if (plan_.dp > 1) {
      if (plan_.zero_stage == 0) {
        prev = add(collective(OpKind::dp_all_reduce, Stream::dp, CommKind::all_reduce, Group::dp, grad_bytes),
                   Phase::optimizer, -1, -1, {prev});
      } else {
        prev = add(collective(OpKind::dp_reduce_scatter, Stream::dp, CommKind::reduce_scatter, Group::dp, grad_bytes),
                   Phase::optimizer, -1, -1, {prev});
      }
    }
    // Adam on fp32 master weights: read master, m, v (4 B each) and the gradient, write them and
    // the low-precision weight copy.
    OpSpec step = elementwise(OpKind::optimizer_step, sharded * (3 * 4 * 2 + 2 * e()), 12 * sharded);
    prev = add(step, Phase::optimizer, -1, -1, {prev});
    if (plan_.dp > 1 && plan_.zero_stage >= 1)
      add(collective(OpKind::dp_all_gather, Stream::dp, CommKind::all_gather, Group::dp, e() * params),
          Phase::optimizer, -1, -1, {prev});
  }

  void static_memory() {
    const double params = local_params();
    p_.static_bytes[static_cast<int>(MemCategory::weights)] = e() * params;
    p_.static_bytes[static_cast<int>(MemCategory::gradients)] = e() * params;
    p_.static_bytes[static_cast<int>(MemCategory::optimizer)] = 12 * (plan_.zero_stage >= 1 ? params / plan_.dp : params);
  }

  const ModelShape& model_;
  const ParallelPlan& plan_;
  int stage_;
  StageProgram p_;
};

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
        program.model_flops_per_step += st.flops[i] * plan.tp * plan.dp;
  }
  return program;
}

}  // namespace dtsim
