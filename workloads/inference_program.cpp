// Inference programs: the prefill and decode passes of dtsim serve from layer_ops' forward kernels,
// with weight reads in the serving format and decode attention over the KV cache.
#include "workloads/inference_program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/base/error.hpp"
#include "workloads/layer_ops.hpp"

namespace dtsim {
namespace {

constexpr double kActivationBytes = 2;  // activations and logits in bf16/fp16

// One pass of `tokens` new tokens per sequence: the prompt, or a decode step's (1, or the drafts
// and the token after them when speculating).
class PassBuilder {
 public:
  PassBuilder(const ModelShape& m, const ParallelPlan& plan, const ServeSetup& s, int tokens, bool decoding)
      : model_(with_seq_len(m, tokens)), plan_(plan), setup_(s), ops_(model_, plan_), decoding_(decoding) {}

  // The pass's kernels and collectives in order: the embedding, transformer layer l (context:
  // the tokens a decode step attends to; 0 for the prefill, whose attention is layer_ops' causal
  // flash attention over the prompt), the head.
  std::vector<OpSpec> embedding() const { return serving(ops_.embedding_forward()); }
  std::vector<OpSpec> layer(int l, int context) const {
    std::vector<OpSpec> out = ops_.layer_forward(l);
    for (OpSpec& op : out)
      if (op.kind == OpKind::flash_attention && context > 0)  // a sliding layer reads its window's keys
        op = decode_attention(model_.is_sliding_layer(l) ? std::min(context, model_.sliding_window) : context);
    return serving(std::move(out));
  }
  std::vector<OpSpec> head() const { return serving(head_ops()); }
  // One draft token from the multi-token-prediction modules (DeepSeek-V3's MTP; vLLM's
  // deepseek_mtp drafter): each module's input projection, its transformer block attending over
  // the context, and the shared head on each sequence's one new token.
  std::vector<OpSpec> mtp_draft(int context) const {
    std::vector<OpSpec> out;
    for (int k = 0; k < model_.mtp_layers; ++k) {
      for (const OpSpec& op : serving(ops_.mtp_input())) out.push_back(op);
      for (const OpSpec& op : layer(model_.layers + k, context)) out.push_back(op);
      for (const OpSpec& op : head()) out.push_back(op);
    }
    return out;
  }

 private:
  // Linear layers read their weights in the serving format; a routed expert's GEMMs read only the
  // experts the pass's tokens reach; nothing is kept for a backward pass.
  std::vector<OpSpec> serving(std::vector<OpSpec> ops) const {
    for (OpSpec& op : ops) {
      if (op.kind == OpKind::expert_fc1 || op.kind == OpKind::expert_fc2) routed(op);
      if (weight_gemm(op.kind)) op.bytes = gemm_bytes(op);
      op.saved = 0;
    }
    return ops;
  }
  // The pass's batch x tokens each choose active_experts of the experts; routed uniformly, a rank
  // holding `local` experts (their TP slices) finds local x (1 - (1 - k/E)^tokens) of them chosen
  // on average, each with the copies shared out among them: a decode step of one sequence reads
  // k experts per layer, a long prefill all of them.
  void routed(OpSpec& op) const {
    const double tokens = static_cast<double>(setup_.batch) * model_.seq_len, experts = model_.experts;
    const double local = experts / plan_.ep, k = model_.active_experts;
    const double chosen = std::max(1.0, local * (1 - std::pow(1 - k / experts, tokens)));
    const double copies = tokens * k / plan_.ep;
    op.batch = static_cast<int>(std::ceil(chosen));
    op.m = std::max(1, static_cast<int>(std::lround(copies / op.batch)));
  }
  static ModelShape with_seq_len(ModelShape m, int tokens) {
    m.seq_len = tokens;
    return m;
  }
  // Activations in and out at 16 bit, each of the op's weight matrices (k x n; a grouped GEMM has
  // one per expert it runs) once in its format (the LM head's: embedding_weight_bytes).
  double gemm_bytes(const OpSpec& op) const {
    const double per_weight = op.kind == OpKind::lm_head ? embedding_weight_bytes(setup_.weights)
                                                         : weight_format_bytes(setup_.weights);
    const double matrices = std::max(1, op.batch);
    return matrices * (kActivationBytes * (static_cast<double>(op.m) * op.k + static_cast<double>(op.m) * op.n) +
                       per_weight * static_cast<double>(op.k) * op.n);
  }
  // One query per sequence and head against `context` cached keys and values: QK^T and PV, 2 x 2
  // FLOPs per cached element pair; HBM: the rank's KV heads of the whole context, the query and
  // the output. The compute model times fused attention on the causal half of its FLOPs, which
  // a decode step does not have; its bound is the KV read either way (a few FLOPs per byte).
  OpSpec decode_attention(int context) const {
    if (model_.is_mla()) return latent_decode_attention(context);
    const double b = setup_.batch * static_cast<double>(model_.seq_len), d = model_.head_dim_or_default(), c = context;
    const double heads = static_cast<double>(model_.heads) / plan_.tp;
    const double kv_heads = std::max(1.0, static_cast<double>(model_.kv_heads_or_heads()) / plan_.tp);
    OpSpec a;
    a.kind = OpKind::flash_attention;
    a.m = 1;
    a.n = context;
    a.k = static_cast<int>(d);
    a.batch = static_cast<int>(b * heads);
    a.flops = 2 * b * heads * c * 2 * d;
    // Each sequence's cached keys and values are read once for its model_.seq_len queries (one,
    // or a speculative step's drafts and the token after them).
    a.bytes = kv_format_bytes(setup_.kv) * setup_.batch * c * 2 * kv_heads * d + kActivationBytes * b * 2 * heads * d;
    return a;
  }
  // MLA's decode with the up-projections absorbed (DeepSeek-V2's paper, Sec. 2.1.2; vLLM's and
  // SGLang's MLA decode kernels): every head's query, taken into the latent space, meets the
  // cached latent (kv_lora_rank) and rotary key (rope_head_dim) of the context, and the weighted
  // latents go back through the value projection. Every TP rank reads the whole latent cache
  // (it is not split by heads) for its heads.
  OpSpec latent_decode_attention(int context) const {
    const double b = setup_.batch * static_cast<double>(model_.seq_len), c = context;
    const double heads = static_cast<double>(model_.heads) / plan_.tp;
    const double latent = model_.kv_lora_rank, rope = model_.rope_head_dim;
    OpSpec a;
    a.kind = OpKind::flash_attention;
    a.m = 1;
    a.n = context;
    a.k = static_cast<int>(latent + rope);
    a.batch = static_cast<int>(b * heads);
    a.flops = 2 * b * heads * c * (latent + rope + latent);
    a.bytes = kv_format_bytes(setup_.kv) * setup_.batch * c * (latent + rope) +
              kActivationBytes * b * heads * 2 * (latent + rope);
    return a;
  }
  // The final norm and the LM head on each sequence's last token, then the vocabulary-parallel
  // logits gathered over TP for sampling (vLLM's LogitsProcessor gathers them).
  // A decode pass's model_.seq_len tokens all need logits (a speculative step checks each draft);
  // the prefill only its last token's.
  std::vector<OpSpec> head_ops() const {
    ModelShape last = model_;
    last.seq_len = decoding_ ? model_.seq_len : 1;
    const LayerOps one(last, plan_);
    std::vector<OpSpec> out;
    for (const OpSpec& op : one.head_forward())
      if (op.kind == OpKind::final_norm || op.kind == OpKind::lm_head) out.push_back(op);
    if (plan_.tp > 1) {
      OpSpec gather;
      gather.kind = OpKind::tp_all_gather;
      gather.stream = Stream::tp;
      gather.comm = CommKind::all_gather;
      gather.group = Group::tp;
      gather.bytes = kActivationBytes * setup_.batch * static_cast<double>(last.seq_len) * model_.vocab;
      out.push_back(gather);
    }
    return out;
  }

  ModelShape model_;
  const ParallelPlan& plan_;
  const ServeSetup& setup_;
  LayerOps ops_;
  bool decoding_;
};

// Appends `s`, waiting for the stage's op before it: a decode step is one dependent chain of
// kernels, TP collectives and stage hand-offs. A receive completes when its message arrives
// (no stream; matched to the sender's sends in order).
void add(StageProgram& p, const OpSpec& s, int layer, int pass) {
  const int id = append_op(p, s, Phase::forward, layer, pass);
  if (id > 0 && s.stream != Stream::pp_recv) p.deps.push_back(id - 1);
  p.dep_begin.push_back(static_cast<int>(p.deps.size()));
  if (s.stream == Stream::pp_recv) p.recv_from_prev.push_back(id);
  else p.stream_ops[static_cast<int>(s.stream)].push_back(id);
  p.mem_begin.push_back(0);
}

// The hand-off between pipeline stages of `tokens` tokens per sequence: the hidden states, each
// TP rank sending its 1/tp part and the receiving TP group all-gathering them (vLLM's
// send_tensor_dict with all_gather_group; llama.cpp's layer split copies the whole tensor, tp 1).
void hand_off_send(StageProgram& p, const ModelShape& m, const ParallelPlan& plan, const ServeSetup& s, int tokens,
                   int pass) {
  const double bytes = kActivationBytes * s.batch * static_cast<double>(tokens) * m.hidden;
  add(p, comm_spec(OpKind::pp_send, Stream::pp_send, CommKind::send, Group::pp_next, bytes / plan.tp), -1, pass);
}
void hand_off_receive(StageProgram& p, const ModelShape& m, const ParallelPlan& plan, const ServeSetup& s, int tokens,
                      int pass) {
  const double bytes = kActivationBytes * s.batch * static_cast<double>(tokens) * m.hidden;
  add(p, comm_spec(OpKind::pp_recv, Stream::pp_recv, CommKind::recv, Group::pp_prev, bytes / plan.tp), -1, pass);
  if (plan.tp > 1)
    add(p, comm_spec(OpKind::pp_all_gather, Stream::tp, CommKind::all_gather, Group::tp, bytes), -1, pass);
}
// The sampled token of every sequence (an int32 id), from the last stage back to the first, which
// embeds it for the next decode step.
constexpr double kTokenIdBytes = 4;

// llama.cpp's layer split (llama-model.cpp load_tensors): layer il (the output layer counted as
// layer n_layer) goes to the first device whose cumulative share of the memory exceeds
// il / (n_layer + 1); equal GPUs hold equal shares, so the head sits on the last stage with
// fewer layers beside it.
std::vector<int> layer_split(int layers, int pp) {
  std::vector<int> stages(pp, 0);
  for (int il = 0; il < layers; ++il) stages[static_cast<std::size_t>(il) * pp / (layers + 1)]++;
  return stages;
}

}  // namespace

Drafter parse_drafter(std::string_view text, std::string_view key) {
  if (text == "none") return Drafter::none;
  if (text == "mtp") return Drafter::mtp;
  if (text == "ngram") return Drafter::ngram;
  throw InputError(fmt::format("{} = '{}': valid values are none, mtp, ngram", key, text));
}

std::string_view drafter_name(Drafter d) { return d == Drafter::mtp ? "mtp" : d == Drafter::ngram ? "ngram" : "none"; }

double ServeSetup::tokens_per_step() const {
  if (draft_tokens == 0) return 1;
  if (acceptance >= 1) return step_tokens();
  return (1 - std::pow(acceptance, step_tokens())) / (1 - acceptance);
}

KvFormat parse_kv_format(std::string_view text, std::string_view key) {
  if (text == "bf16" || text == "fp16") return KvFormat::bf16;
  if (text == "fp8") return KvFormat::fp8;
  throw InputError(fmt::format("{} = '{}': valid values are bf16, fp16 (the model's 16 bit), fp8", key, text));
}

std::string_view kv_format_name(KvFormat f) { return f == KvFormat::fp8 ? "fp8" : "bf16"; }

double kv_format_bytes(KvFormat f) { return f == KvFormat::fp8 ? 1 : 2; }

MemoryNeed serve_memory(const ModelShape& m, const ServeSetup& s, int tp, int pp) {
  InferenceSetup fit;
  fit.format = s.weights;
  fit.context = s.prompt + s.output;
  fit.batch = s.batch;
  fit.kv_bytes = kv_format_bytes(s.kv);
  return inference_memory(m, fit, tp, pp);
}

ParallelPlan inference_plan(const ModelShape& m, const ServeSetup& s, int tp, int pp) {
  if (s.drafter == Drafter::mtp && m.mtp_layers == 0)
    throw InputError(fmt::format("inference.speculative = mtp: model.name = {} has no multi-token-prediction modules "
                                 "(model.mtp_layers = 0); valid: ngram, none",
                                 m.name));
  ParallelPlan p;
  p.tp = tp;
  p.pp = pp;
  p.micro_batch = s.batch;
  p.global_batch = s.batch;
  p.attention = Attention::flash;
  p.dropout = false;
  p.recompute = Recompute::none;
  p.weight_bytes = kActivationBytes;
  if (pp > m.layers)
    throw InputError(fmt::format("parallel.pp = {}: more pipeline stages than model.name = {}'s {} layers", pp, m.name,
                                 m.layers));
  p.stage_layers = layer_split(m.layers, pp);
  if (std::count(p.stage_layers.begin(), p.stage_layers.end(), 0) > 0)
    throw InputError(fmt::format("parallel.pp = {}: the layer split of {} layers leaves a stage empty; valid: at most {}",
                                 pp, m.layers, m.layers / 2 + 1));
  validate_plan(p, m, tp * pp);
  return p;
}

std::vector<int> decode_contexts(const ServeSetup& s) {
  const int first = s.prompt + 1, last = s.prompt + s.output;
  std::vector<int> out{first};
  if (last > first + 1) out.push_back((first + last) / 2);
  if (last > first) out.push_back(last);
  return out;
}

Program build_inference_program(const ModelShape& m, const ParallelPlan& plan, const ServeSetup& s) {
  Program program;
  program.plan = plan;
  program.model = m;
  const std::vector<int> contexts = decode_contexts(s);
  const PassBuilder prefill(m, plan, s, s.prompt, false), decode(m, plan, s, s.step_tokens(), true);
  const PassBuilder draft(m, plan, s, 1, true);
  for (int stage = 0; stage < plan.pp; ++stage) {
    const bool first = stage == 0, last = stage == plan.pp - 1;
    const int begin = plan.chunk_first_layer(stage, 0), end = begin + plan.chunk_layers(stage, 0);
    StageProgram p;
    for (int pass = 0; pass <= static_cast<int>(contexts.size()); ++pass) {
      const int tokens = pass == 0 ? s.prompt : s.step_tokens();
      if (first && pass > 0 && plan.pp > 1)
        add(p, comm_spec(OpKind::pp_recv, Stream::pp_recv, CommKind::recv, Group::pp_prev, kTokenIdBytes * s.batch),
            -1, pass);
      if (!first) hand_off_receive(p, m, plan, s, tokens, pass);
      const PassBuilder& b = pass == 0 ? prefill : decode;
      if (first)
        for (const OpSpec& op : b.embedding()) add(p, op, -1, pass);
      for (int l = begin; l < end; ++l)
        for (const OpSpec& op : b.layer(l, pass == 0 ? 0 : contexts[pass - 1])) add(p, op, l, pass);
      if (last)
        for (const OpSpec& op : b.head()) add(p, op, -1, pass);
      // The MTP drafter proposes the next step's tokens after the verification, one at a time.
      if (last && pass > 0 && s.drafter == Drafter::mtp)
        for (int k = 0; k < s.draft_tokens; ++k)
          for (const OpSpec& op : draft.mtp_draft(contexts[pass - 1] + k + 1)) add(p, op, m.layers, pass);
      if (!last) hand_off_send(p, m, plan, s, tokens, pass);
      else if (plan.pp > 1 && pass < static_cast<int>(contexts.size()))
        add(p, comm_spec(OpKind::pp_send, Stream::pp_send, CommKind::send, Group::pp_next, kTokenIdBytes * s.batch),
            -1, pass);
    }
    const MemoryNeed need = serve_memory(m, s, plan.tp, plan.pp);
    for (const MemoryItem& item : need.items) {
      if (item.name == "weights") p.static_bytes[static_cast<int>(MemCategory::weights)] = item.bytes;
      if (item.name == "kv_cache") p.static_bytes[static_cast<int>(MemCategory::buffers)] = item.bytes;
      if (item.name == "activations") p.static_bytes[static_cast<int>(MemCategory::activations)] = item.bytes;
    }
    for (int i = 0; i < p.size(); ++i)
      if (p.gemm_m[i] > 0) program.model_flops_per_step += p.flops[i] * plan.tp;
    program.stages.push_back(std::move(p));
  }
  return program;
}

}  // namespace dtsim
