// Kernel-level decomposition of a decoder layer as Megatron-LM runs it: fused layer norm, QKV
// GEMM, QK^T batched GEMM, fused scale-mask-softmax, attention dropout (a separate kernel), the
// context GEMM, output projection, fused bias-dropout-add, and the MLP with fused bias-GeLU (or
// SwiGLU). Element counts are per TP rank; e is bytes per element of the training precision.
#include "workloads/layer_ops.hpp"

#include <algorithm>

namespace dtsim {

OpSpec LayerOps::gemm(OpKind kind, double m, double n, double k, double batch) const {
  OpSpec s;
  s.kind = kind;
  s.m = static_cast<int>(m);
  s.n = static_cast<int>(n);
  s.k = static_cast<int>(k);
  s.batch = static_cast<int>(batch);
  s.flops = 2 * m * n * k * batch;
  s.bytes = e() * (m * k + k * n + m * n) * batch;
  s.backward_bytes = 2 * s.bytes;
  return s;
}

OpSpec LayerOps::elementwise(OpKind kind, double bytes, double backward_bytes, double flops) const {
  OpSpec s;
  s.kind = kind;
  s.bytes = bytes;
  s.backward_bytes = backward_bytes;
  s.flops = flops;
  return s;
}

OpSpec LayerOps::collective(OpKind kind, Stream stream, Group group, CommKind comm, double bytes) {
  return comm_spec(kind, stream, comm, group, bytes);
}

OpSpec LayerOps::tp_collective(OpKind kind, CommKind comm, double bytes) const {
  return collective(kind, Stream::tp, Group::tp, comm, bytes);
}

// Fused layer norm on the (sequence-parallel) tokens: reads x, writes y; backward reads x and
// dy, writes dx. Keeps its input. An RMSNorm in PyTorch eager (torchtitan's RMSNorm: x.float(),
// pow, mean, rsqrt, mul, type_as, mul by the gain) moves per element, forward: e + 4, 4 + 4, 4,
// 4 + 4, 4 + e, 2e = 28 + 4e bytes; backward, the same ops' gradients and their sum: 52 + 7e; it
// keeps the fp32 copy beside its input (4 + e).
OpSpec LayerOps::layernorm(OpKind kind) const {
  const double elems = sharded_tokens() * model_.hidden;
  if (model_.norm == NormKind::rmsnorm && !plan_.fused_kernels) {
    OpSpec s = elementwise(kind, (28 + 4 * e()) * elems, (52 + 7 * e()) * elems, 8 * elems);
    s.saved = (4 + e()) * elems;
    return s;
  }
  OpSpec s = elementwise(kind, 2 * e() * elems, 3 * e() * elems, 8 * elems);
  s.saved = e() * elems;
  return s;
}

void LayerOps::enter_tp_region(std::vector<OpSpec>& ops) const {
  if (plan_.sequence_parallel)
    ops.push_back(tp_collective(OpKind::tp_all_gather, CommKind::all_gather, e() * tokens() * model_.hidden));
}

void LayerOps::leave_tp_region(std::vector<OpSpec>& ops) const {
  const double bytes = e() * tokens() * model_.hidden;
  if (plan_.sequence_parallel) ops.push_back(tp_collective(OpKind::tp_reduce_scatter, CommKind::reduce_scatter, bytes));
  else if (t() > 1) ops.push_back(tp_collective(OpKind::tp_all_reduce, CommKind::all_reduce, bytes));
}

double LayerOps::checkpoint_bytes() const { return e() * sharded_tokens() * model_.hidden; }

std::vector<OpSpec> LayerOps::layer_forward(int layer_index, bool materialized) const {
  const int layer = std::min(layer_index, model_.layers - 1);  // an MTP module's block: the last layer's shape
  const Recompute recompute = materialized ? Recompute::none : plan_.layer_recompute(layer_index);
  const double T = tokens(), Ts = sharded_tokens(), h = model_.hidden, s = model_.seq_len, b = plan_.micro_batch;
  // Per-head query/key and value dimensions (MLA: nope + rope and v_head_dim; keys per query head).
  const bool mla = model_.is_mla();
  const double d_qk = mla ? model_.nope_head_dim + model_.rope_head_dim : model_.head_dim_or_default();
  const double d_v = mla ? model_.v_head_dim : model_.head_dim_or_default();
  const double heads = static_cast<double>(model_.heads) / t();
  const double kv_heads = mla ? heads : std::max(1.0, static_cast<double>(model_.kv_heads_or_heads()) / t());
  const double q_n = heads * d_qk, k_n = kv_heads * d_qk, v_n = kv_heads * d_v, o_n = heads * d_v;
  const double f = model_.ffn_or_default() / static_cast<double>(t());
  const double up = model_.ffn == FfnKind::swiglu ? 2 * f : f;
  const double scores = b * heads * s * s;  // attention score elements on this rank
  const double mask = plan_.dropout ? 1 : 0;  // dropout mask bytes per element
  std::vector<OpSpec> ops;
  auto keep = [&](OpSpec op, double saved) {
    op.saved = saved;
    ops.push_back(op);
  };
  auto core = [&](OpSpec op, double saved) {
    op.attention_core = true;
    keep(op, recompute == Recompute::selective ? 0 : saved);
  };

  // Under selective recomputation of a module, a GEMM does not keep the input that module makes.
  const auto from = [&](OpSpec& op, RecomputeModule m, double bytes) {
    op.input_from = m;
    op.input_saved = bytes;
  };
  OpSpec norm1 = layernorm(OpKind::layernorm);
  norm1.rerun = RecomputeModule::layernorm;
  ops.push_back(norm1);
  enter_tp_region(ops);
  if (mla) {
    for (const OpSpec& op : mla_projections()) ops.push_back(op);
  } else {
    OpSpec qkv = gemm(OpKind::qkv_proj, T, q_n + k_n + v_n, h);
    qkv.column_parallel = true;
    from(qkv, RecomputeModule::layernorm, e() * Ts * h);
    keep(qkv, e() * Ts * h);  // with SP the sharded input is kept and gathered again for backward
    // Rotary embeddings rotate Q and K: fused (Transformer Engine, apex, torch.compile), read and
    // write each element once; eager (torchtitan's apply_rotary_emb: float, complex multiply,
    // type_as), (e + 4) + 8 + (4 + e) bytes per element. The backward rotates the gradients back.
    if (model_.position == PositionEmbedding::rotary) {
      const double rotated = T * (q_n + k_n), bytes = (plan_.fused_kernels ? 2 * e() : 16 + 2 * e()) * rotated;
      ops.push_back(elementwise(OpKind::rotary, bytes, bytes, 6 * rotated));
    }
  }
  if (fused_attention(plan_.attention)) {
    // With context parallelism the rank's queries (T of the b s tokens) meet every key: it reads
    // all keys and values, and keeps only its own with the log-sum-exp of its queries.
    OpSpec fa = gemm(OpKind::flash_attention, s / plan_.cp, s, d_qk, b * heads);
    fa.flops = 2 * b * heads * (s / plan_.cp) * s * (d_qk + d_v);
    // Its FLOPs count the s x s rectangle, of which the compute model runs the causal half. In a
    // sliding layer the kernel skips the key blocks outside the window: the rectangle's stand-in is
    // twice the window's causal pairs, so that half is exactly them (context parallelism refuses
    // windows, validate_plan). Every key is still read once.
    const double span = model_.attention_span(layer);
    if (span < s) fa.flops = 2 * b * heads * 2 * causal_pairs(s, span) * (d_qk + d_v);
    fa.bytes = e() * (T * (q_n + o_n) + b * s * (k_n + v_n));
    fa.backward_bytes = 2.5 * fa.bytes;
    fa.saved = e() * T * (q_n + k_n + v_n) + 4 * b * heads * (s / plan_.cp);  // Q, K, V and the log-sum-exp
    if (mla) from(fa, RecomputeModule::mla_up_proj, e() * T * (q_n + k_n + v_n));
    if (plan_.cp == 1) ops.push_back(fa);
    else for (const OpSpec& op : cp_attention_forward(fa, e() * b * s * (k_n + v_n))) ops.push_back(op);
  } else {
    OpSpec qk = gemm(OpKind::attn_scores, s, s, d_qk, b * heads);
    // ALiBi in Megatron-DeepSpeed's unfused attention (BLOOM; megatron/model/transformer.py):
    // baddbmm on the [b*np, 1, s] bias slice, which is first expanded into the whole score tensor
    // and then read back by the GEMM (beta = 1/layer): two passes over the scores more. The bias
    // needs no gradient, so the backward pass is unchanged.
    if (model_.position == PositionEmbedding::alibi) qk.bytes += 2 * e() * scores;
    if (mla) from(qk, RecomputeModule::mla_up_proj, e() * T * (q_n + k_n));
    keep(qk, e() * T * (q_n + k_n));  // Q and K
    core(elementwise(OpKind::softmax, 2 * e() * scores, 3 * e() * scores, 5 * scores), e() * scores);
    if (plan_.dropout)
      core(elementwise(OpKind::attn_dropout, (2 * e() + 1) * scores, (2 * e() + 1) * scores, 2 * scores), scores);
    OpSpec context = gemm(OpKind::attn_context, s, d_v, s, b * heads);
    context.attention_core = true;
    if (mla) from(context, RecomputeModule::mla_up_proj, e() * T * v_n);
    keep(context, (recompute == Recompute::selective ? 0 : e() * scores) + e() * T * v_n);  // probs, V
  }
  keep(gemm(OpKind::out_proj, T, h, o_n), e() * T * o_n);
  if (!model_.parallel_block) {
    leave_tp_region(ops);
    keep(elementwise(OpKind::dropout_residual, (3 * e() + mask) * Ts * h, (2 * e() + mask) * Ts * h, 2 * Ts * h),
         mask * Ts * h);
  }
  // Parallel attention + MLP (GPT-J/NeoX): the MLP reads the same layer input; one reduction.
  OpSpec norm2 = layernorm(OpKind::layernorm);
  norm2.rerun = RecomputeModule::layernorm;
  if (model_.parallel_block) norm2.saved = 0;  // its input is the layer input, already kept
  ops.push_back(norm2);
  const bool folded_moe = model_.is_moe_layer(layer) && plan_.expert_folding();  // no TP region around it
  if (!folded_moe) enter_tp_region(ops);
  if (model_.is_moe_layer(layer)) {
    for (const OpSpec& op : moe_mlp()) ops.push_back(op);
  } else {
    OpSpec fc1 = gemm(OpKind::fc1, T, up, h);
    fc1.column_parallel = true;
    from(fc1, RecomputeModule::layernorm, e() * Ts * h);
    keep(fc1, e() * Ts * h);
    if (model_.ffn == FfnKind::swiglu && plan_.fused_kernels)
      keep(elementwise(OpKind::activation, 3 * e() * T * f, 5 * e() * T * f, 6 * T * f), e() * T * up);
    else if (model_.ffn == FfnKind::swiglu)  // eager: silu(a) (2e), then silu(a) * b (3e); backward 3e + 6e
      keep(elementwise(OpKind::activation, 5 * e() * T * f, 9 * e() * T * f, 6 * T * f), e() * T * (up + f));
    else
      keep(elementwise(OpKind::activation, 2 * e() * T * f, 3 * e() * T * f, 8 * T * f), e() * T * up);
    keep(gemm(OpKind::fc2, T, h, f), e() * T * f);
  }
  if (!folded_moe) leave_tp_region(ops);
  keep(elementwise(OpKind::dropout_residual, (3 * e() + mask) * Ts * h, (2 * e() + mask) * Ts * h, 2 * Ts * h),
       mask * Ts * h);

  // An FP8 recipe keeps a linear layer's input for its backward pass as the FP8 tensor it cast
  // (1 byte an element; Transformer Engine's te.Linear saves the quantized input for the
  // weight-gradient GEMM; DeepSeek-V3 Sec. 3.3.3 caches the Linear inputs in FP8). Scales and
  // FP4 recipes' halved bytes are left out.
  if (plan_.recipe != Recipe::none && !recipe_spec(plan_.recipe).fp4)
    for (OpSpec& op : ops)
      if (linear_layer_gemm(op.kind)) op.saved /= e(), op.input_saved /= e();
  if (recompute == Recompute::selective)
    for (OpSpec& op : ops)
      if (op.input_from != RecomputeModule::none && plan_.recomputes(op.input_from)) op.saved -= op.input_saved;
  if (recompute == Recompute::full) {
    for (OpSpec& op : ops) op.saved = 0;
    ops.front().saved = checkpoint_bytes();
  }
  // torchtitan's op-level checkpointing (its _apply_op_sac policy): the outputs of the fused
  // attention (and its log-sum-exp) and of every second matmul are saved, nothing else but the
  // layer's input.
  if (recompute == Recompute::selective_op) {
    for (OpSpec& op : ops) {
      op.input_saved = 0;
      op.saved = op.kind == OpKind::flash_attention ? e() * T * o_n + 4 * b * heads * (s / plan_.cp)
                 : op.comm == CommKind::none && op.m > 0 && weight_gemm(op.kind)
                     ? e() * op.m * static_cast<double>(op.n) * std::max(1, op.batch) / 2
                     : 0;
    }
    ops.front().saved += checkpoint_bytes();
  }
  overlap_tp_with_gemms(ops);
  return ops;
}

// Transformer Engine's userbuffers overlap (Megatron-Bridge's and NeMo's TransformerLayerTPOverlapCfg:
// qkv_fprop and fc1_fprop ring exchange, proj_fprop and fc2_fprop pipelined or ring exchange): the
// all-gather before a QKV or MLP-input GEMM runs beside it, and the reduce-scatter after an
// output-projection or MLP-output GEMM goes ahead of it to run beside it, both as copy-engine
// transfers that leave the GEMM its SMs (ring exchange; the reduce-scatter's one-SM margin is
// left out). backward_of puts the reduce-scatter back after its GEMM to find its conjugate
// all-gather's place.
void LayerOps::overlap_tp_with_gemms(std::vector<OpSpec>& ops) const {
  if (plan_.tp_overlap != TpOverlap::userbuffers || !plan_.sequence_parallel || t() == 1) return;
  for (std::size_t i = 0; i + 1 < ops.size(); ++i) {
    const OpKind next = ops[i + 1].kind;
    if (ops[i].kind == OpKind::tp_all_gather && (next == OpKind::qkv_proj || next == OpKind::fc1)) {
      ops[i].async = ops[i].sm_free = true, ops[i].overlaps = 1;
    } else if (next == OpKind::tp_reduce_scatter && (ops[i].kind == OpKind::out_proj || ops[i].kind == OpKind::fc2)) {
      std::swap(ops[i], ops[i + 1]);
      ops[i].async = ops[i].sm_free = true, ops[i].overlaps = 1;
      ++i;
    }
  }
}

std::vector<OpSpec> LayerOps::module_reruns(const std::vector<OpSpec>& layer) const {
  std::vector<OpSpec> out;
  double regenerated = 0;  // the rerun modules' outputs, held until their consumers' backward
  for (const OpSpec& op : layer) {
    if (op.rerun != RecomputeModule::none && plan_.recomputes(op.rerun)) {
      out.push_back(op);
      out.back().saved = 0;  // its own input is kept by the forward pass
    }
    if (op.input_from != RecomputeModule::none && plan_.recomputes(op.input_from)) regenerated += op.input_saved;
  }
  if (!out.empty()) out.front().saved = regenerated;
  return out;
}

std::vector<OpSpec> LayerOps::op_checkpoint_reruns(const std::vector<OpSpec>& layer, double kept) const {
  std::vector<OpSpec> out;
  double needed = 0;
  for (const OpSpec& op : layer) {
    needed += op.saved;
    if (op.comm != CommKind::none || op.kind == OpKind::flash_attention) continue;
    OpSpec rerun = op;
    rerun.saved = 0;
    if (op.m > 0 && weight_gemm(op.kind)) {
      rerun.n = std::max(1, op.n / 2);
      rerun.flops /= 2;
      rerun.bytes /= 2;
    }
    out.push_back(rerun);
  }
  if (!out.empty()) out.front().saved = std::max(0.0, needed - kept);
  return out;
}

std::vector<OpSpec> LayerOps::attention_core(const std::vector<OpSpec>& layer) const {
  std::vector<OpSpec> out;
  for (const OpSpec& op : layer)
    if (op.attention_core) out.push_back(op);
  return out;
}

std::vector<OpSpec> LayerOps::embedding_forward() const {
  const double T = tokens(), h = model_.hidden;
  // Gather the token rows (plus positions) and write the hidden states; backward scatters the
  // gradient into the table.
  std::vector<OpSpec> ops{elementwise(OpKind::embedding, 2 * e() * T * h, 2 * e() * T * h, 0)};
  leave_tp_region(ops);  // vocab-parallel embedding: partial rows are summed over TP
  if (model_.embedding_norm) ops.push_back(layernorm(OpKind::embedding_norm));
  return ops;
}

std::vector<OpSpec> LayerOps::head_forward() const {
  const double T = tokens(), h = model_.hidden, v = static_cast<double>(model_.vocab) / t();
  std::vector<OpSpec> ops{layernorm(OpKind::final_norm)};
  enter_tp_region(ops);
  OpSpec head = gemm(OpKind::lm_head, T, v, h);
  head.column_parallel = true;
  head.saved = e() * sharded_tokens() * h + 4 * T * v;  // input and the fp32 softmax of the logits
  ops.push_back(head);
  // Megatron's vocab-parallel cross-entropy, unfused, in fp32; HBM bytes per logit: cast the
  // logits to fp32 (e + 4), max (4), subtract it in place (8), exp in place (8), sum (4), divide
  // into the softmax kept for backward (8); backward: scale the softmax by the loss gradient in
  // place (8) and cast the result back (4 + e).
  ops.push_back(elementwise(OpKind::loss, (e() + 4 + 4 + 8 + 8 + 4 + 8) * T * v, (8 + 4 + e()) * T * v, 5 * T * v));
  if (t() > 1) ops.push_back(tp_collective(OpKind::tp_all_reduce, CommKind::all_reduce, 3 * 4 * T));
  return ops;
}

// Megatron's asynchronous TP communication around a column-parallel GEMM's backward: the input
// gradient GEMM first, then its all-reduce (or, with SP, its reduce-scatter, the re-gather of
// the sharded input having run during the input-gradient GEMM) overlapping the weight-gradient
// GEMM.
void LayerOps::column_parallel_backward(const OpSpec& forward, std::vector<OpSpec>& ops) const {
  const double bytes = e() * tokens() * model_.hidden;
  OpSpec part = forward;
  part.saved = 0;
  part.bytes = forward.backward_bytes / 2;
  auto async = [](OpSpec c) {
    c.async = true;
    return c;
  };
  if (plan_.sequence_parallel) ops.push_back(async(tp_collective(OpKind::tp_all_gather, CommKind::all_gather, bytes)));
  part.gemm_part = GemmPart::input_grad;
  ops.push_back(part);
  if (plan_.sequence_parallel)
    ops.push_back(async(tp_collective(OpKind::tp_reduce_scatter, CommKind::reduce_scatter, bytes)));
  else
    ops.push_back(async(tp_collective(OpKind::tp_all_reduce, CommKind::all_reduce, bytes)));
  part.gemm_part = GemmPart::weight_grad;
  ops.push_back(part);
}

LayerOps::WeightSplit LayerOps::split_weight_gradients(const std::vector<OpSpec>& backward) {
  WeightSplit out;
  for (const OpSpec& op : backward) {
    if (op.gemm_part == GemmPart::weight_grad) {
      out.weight.push_back(op);
    } else if (op.gemm_part == GemmPart::whole && op.comm == CommKind::none && op.m > 0 && weight_gemm(op.kind)) {
      OpSpec part = op;
      part.flops /= 2;
      part.bytes /= 2;
      part.gemm_part = GemmPart::input_grad;
      out.input.push_back(part);
      part.gemm_part = GemmPart::weight_grad;
      out.weight.push_back(part);
    } else {
      out.input.push_back(op);
    }
  }
  return out;
}

double LayerOps::weight_gradient_inputs(const std::vector<OpSpec>& forward) {
  double sum = 0;
  for (const OpSpec& op : forward)
    if (op.comm == CommKind::none && op.m > 0 && weight_gemm(op.kind)) sum += op.saved;
  return sum;
}

std::vector<OpSpec> LayerOps::backward_of(const std::vector<OpSpec>& forward) const {
  const double bytes = e() * tokens() * model_.hidden;
  // In reverse order; an asynchronous all-to-all goes back ahead of the compute ops it ran beside,
  // which it runs beside again (their backward does not need its gradients).
  std::vector<OpSpec> reversed(forward.rbegin(), forward.rend());
  // A reduce-scatter that ran beside the GEMM before it (userbuffers) goes back behind it, so its
  // conjugate all-gather comes ahead of the GEMM's backward.
  for (std::size_t j = 1; j < reversed.size(); ++j)
    if (reversed[j].kind == OpKind::tp_reduce_scatter && reversed[j].async) std::swap(reversed[j - 1], reversed[j]);
  for (std::size_t j = 0; j < reversed.size(); ++j) {
    if (!is_all_to_all(reversed[j].comm) || !reversed[j].async) continue;
    std::size_t to = j;
    for (int beside = reversed[j].overlaps; beside > 0 && to > 0; --to)
      if (reversed[to - 1].comm == CommKind::none) --beside;
    std::rotate(reversed.begin() + static_cast<std::ptrdiff_t>(to), reversed.begin() + static_cast<std::ptrdiff_t>(j),
                reversed.begin() + static_cast<std::ptrdiff_t>(j) + 1);
  }
  std::vector<OpSpec> ops;
  for (auto it = reversed.begin(); it != reversed.end(); ++it) {
    if (is_all_to_all(it->comm)) {  // MoE: the gradients go back the way the tokens came
      OpSpec op = *it;
      op.saved = 0;
      ops.push_back(op);
      continue;
    }
    if (it->kind == OpKind::cp_kv_all_gather) continue;  // part of the CP attention's backward
    if (plan_.cp > 1 && it->kind == OpKind::flash_attention) {
      if (it->cp_attention_end) cp_attention_backward(*it, ops);
      continue;
    }
    if (it->comm != CommKind::none) {
      // SP: an all-gather's conjugate is a reduce-scatter and vice versa; an all-reduce leaving a
      // row-parallel region is an identity backward (its input-side twin is emitted below).
      if (it->kind == OpKind::tp_reduce_scatter) {
        // Userbuffers: the gradient's all-gather beside the GEMM's backward (proj_dgrad and
        // fc2_dgrad ring exchange).
        OpSpec gather = tp_collective(OpKind::tp_all_gather, CommKind::all_gather, bytes);
        gather.async = gather.sm_free = it->async;
        ops.push_back(gather);
      }
      else if (it->kind == OpKind::tp_all_gather)
        ops.push_back(tp_collective(OpKind::tp_reduce_scatter, CommKind::reduce_scatter, bytes));
      continue;
    }
    OpSpec op = *it;
    op.saved = 0;
    op.flops *= 2;
    op.bytes = it->backward_bytes;
    if (op.column_parallel && t() > 1 && plan_.tp_overlap != TpOverlap::none) {
      const auto next = std::next(it);
      const bool gathered = next != reversed.end() && next->kind == OpKind::tp_all_gather;
      if (plan_.sequence_parallel == gathered) {
        column_parallel_backward(*it, ops);
        if (gathered) ++it;  // its reduce-scatter is already in place
        continue;
      }
    }
    // SP keeps the sharded input of a column-parallel GEMM and gathers it again for the weight
    // gradient.
    if (op.column_parallel && plan_.sequence_parallel)
      ops.push_back(tp_collective(OpKind::tp_all_gather, CommKind::all_gather, bytes));
    ops.push_back(op);
    if (op.column_parallel && !plan_.sequence_parallel && t() > 1)
      ops.push_back(tp_collective(OpKind::tp_all_reduce, CommKind::all_reduce, bytes));
  }
  return ops;
}

}  // namespace dtsim
