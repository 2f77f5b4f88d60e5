// The program of LLM inference (dtsim serve) in the Program/StageProgram structures the engine
// runs for a training step: one prefill pass over every sequence's prompt, then decode iterations
// (one new token per sequence) at a few context lengths, chained one after another on every TP
// rank. Forward kernels come from layer_ops; what differs for inference is built here: the linear
// layers read their weights in the serving format, decode attention reads the KV cache of the
// context, the LM head runs on each sequence's last token only and its logits are gathered over TP.
#pragma once
#include <string_view>
#include <vector>

#include "workloads/memory_fit.hpp"
#include "workloads/program.hpp"

namespace dtsim {

// KV-cache precision (vLLM's kv_cache_dtype): the model's 16 bit, or fp8 (1 byte per element).
enum class KvFormat { bf16, fp8 };
KvFormat parse_kv_format(std::string_view text, std::string_view key);
std::string_view kv_format_name(KvFormat f);
double kv_format_bytes(KvFormat f);

// Input limits: a pass's tokens (batch x prompt) stay within a GEMM dimension (int32).
constexpr int kMaxServeBatch = 4096;
constexpr int kMaxServeTokens = 1 << 18;
// Speculative decoding: at most 8 draft tokens a step; the MTP drafter's acceptance when not given,
// DeepSeek-V3's report (Sec. 5.4.3): its second token is accepted 85-90 % of the time.
constexpr int kMaxDraftTokens = 8;
constexpr double kMtpAcceptance = 0.85;

// Speculative decoding's drafter: none; the model's own multi-token-prediction modules (run once
// per draft token); n-gram prompt lookup (no GPU work).
enum class Drafter { none, mtp, ngram };
Drafter parse_drafter(std::string_view text, std::string_view key);
std::string_view drafter_name(Drafter d);

// The [inference] scenario keys.
struct ServeSetup {
  WeightFormat weights = WeightFormat::bf16;
  KvFormat kv = KvFormat::bf16;
  int batch = 1;        // sequences decoded together
  int prompt = 1024;    // prompt tokens per sequence
  int output = 256;     // generated tokens per sequence
  bool cuda_graphs = true;  // decode steps replayed as CUDA graphs: no per-kernel launch gap
  Drafter drafter = Drafter::none;
  int draft_tokens = 0;       // proposed per step (0 without speculation)
  double acceptance = 0;      // each draft token's chance of being accepted
  // Tokens a decode step verifies per sequence: the drafts and the token after them.
  int step_tokens() const { return draft_tokens + 1; }
  // Tokens a step yields per sequence on average: (1 - a^(k+1)) / (1 - a) for k drafts each
  // accepted with probability a until the first rejection, plus the verifier's own (Leviathan
  // et al. 2023, "Fast Inference from Transformers via Speculative Decoding", eq. 1).
  double tokens_per_step() const;
};

// The memory of the setup on one of tp x pp GPUs (fit's closed forms: weights in their format, the
// KV cache of batch x (prompt + output) tokens, one forward pass's activations, the runtime).
MemoryNeed serve_memory(const ModelShape& m, const ServeSetup& s, int tp, int pp = 1);

// The plan of inference on tp x pp GPUs: TP inside each of pp pipeline stages that hold llama.cpp's
// layer split (the output layer counted as one), no data parallelism, `batch` sequences per pass,
// fused flash attention, no dropout or recomputation; a mixture of experts keeps its experts on
// every rank, their matrices split over TP (vLLM's default without expert parallelism). Throws
// InputError (naming parallel.tp or parallel.pp) when the model cannot be split so.
ParallelPlan inference_plan(const ModelShape& m, const ServeSetup& s, int tp, int pp = 1);

// The context lengths (tokens each new token attends to, itself included) of the decode
// iterations simulated: the first, the middle and the last output token.
std::vector<int> decode_contexts(const ServeSetup& s);

// The whole request on every rank: pass 0 (micro_batch 0) is the prefill, pass i (1..) the decode
// iteration at decode_contexts(s)[i - 1]: with speculation, the drafter's passes (the MTP modules
// once per draft token, on the last stage) and one pass over step_tokens() tokens per sequence
// that verifies them. With pipeline stages the batch passes through them in
// turn (llama.cpp's layer split; vLLM's pipeline without its virtual engines): each stage hands
// its hidden states to the next, and the last sends the sampled tokens back to the first for the
// next step. plan: from inference_plan.
Program build_inference_program(const ModelShape& m, const ParallelPlan& plan, const ServeSetup& s);

}  // namespace dtsim
