// Text and JSON renderings of a ServeResult.
#include "sim/scenario/serve_format.hpp"

#include <fmt/format.h>

#include "sim/base/json.hpp"
#include "sim/base/units.hpp"
#include "sim/scenario/summary_format.hpp"

namespace dtsim {
namespace {

double item_gib(const MemoryNeed& need, const std::string& name) {
  for (const MemoryItem& i : need.items)
    if (i.name == name) return i.bytes / kGiB;
  return 0;
}

std::string percent(double part, double whole) { return fmt::format("{:5.1f} %", whole > 0 ? 100 * part / whole : 0); }

std::string pass_json(const PassTime& t) {
  return fmt::format("{{\"context\": {}, \"time_ms\": {}, \"weights_ms\": {}, \"kv_cache_ms\": {}, "
                     "\"communication_ms\": {}, \"launch_ms\": {}, \"other_ms\": {}}}",
                     t.context, JsonNumber{t.total_s * 1e3}, JsonNumber{t.weights_s * 1e3}, JsonNumber{t.kv_s * 1e3},
                     JsonNumber{t.comm_s * 1e3}, JsonNumber{t.launch_s * 1e3}, JsonNumber{t.other_s * 1e3});
}

}  // namespace

std::string format_serve_text(const Scenario& sc, const ServeResult& r) {
  const ServeSetup& s = sc.inference;
  const PassTime& t = r.tpot;
  const std::string layout = r.pp > 1 ? fmt::format("tp {} x pp {}: the stages run in turn", r.tp, r.pp)
                                      : fmt::format("tp {}", r.tp);
  std::string out = fmt::format("dtsim serve: {} on {} x {} ({}), {}\n", sc.model.name, r.gpus, sc.cluster.gpu,
                                layout, network_text(sc));
  out += fmt::format("  request            batch {} x ({} prompt + {} output tokens), weights {}, KV cache {}, CUDA "
                     "graphs {}\n",
                     s.batch, s.prompt, s.output, weight_format_name(s.weights), kv_format_name(s.kv),
                     s.cuda_graphs ? "on" : "off");
  out += fmt::format("  time to 1st token  {:.1f} ms (prefill of {} tokens)\n", r.ttft_s * 1e3,
                     static_cast<long long>(s.batch) * s.prompt);
  out += fmt::format("  time per token     {:.2f} ms mean over the output (", t.total_s * 1e3);
  for (std::size_t i = 0; i < r.decode.size(); ++i)
    out += fmt::format("{}{:.2f} ms at context {}", i ? ", " : "", r.decode[i].total_s * 1e3, r.decode[i].context);
  out += ")\n";
  if (s.drafter != Drafter::none)
    out += fmt::format("  speculative        {}, {} draft token(s) a step, each accepted at {:.2f}: {:.2f} tokens per step of "
                       "{:.2f} ms (drafts and verification)\n",
                       drafter_name(s.drafter), s.draft_tokens, s.acceptance, r.tokens_per_step,
                       r.step_s.empty() ? 0.0 : r.step_s.front() * 1e3);
  out += fmt::format("  decode speed       {:.1f} tokens/s ({:.1f} per sequence, {:.1f} per GPU)\n",
                     r.decode_tokens_per_s, r.decode_tokens_per_s / s.batch, r.decode_tokens_per_s / r.gpus);
  out += fmt::format("  whole request      {:.2f} s, {:.1f} tokens/s ({:.1f} per GPU)\n", r.request_s,
                     r.request_tokens_per_s, r.request_tokens_per_s / r.gpus);
  out += fmt::format("  decode step        weights read {}   KV-cache read {}   communication {}   launch {}   "
                     "other kernels {}\n",
                     percent(t.weights_s, t.total_s), percent(t.kv_s, t.total_s), percent(t.comm_s, t.total_s),
                     percent(t.launch_s, t.total_s), percent(t.other_s, t.total_s));
  out += fmt::format("  weight-read floor  {:.2f} ms per {} (weights streamed per GPU / its memory rate{}{})\n",
                     r.weight_floor_s * 1e3, s.drafter == Drafter::none ? "step" : "token",
                     r.pp > 1 ? ", stage after stage" : "", s.drafter == Drafter::none ? "" : ", over the tokens a step yields");
  out += fmt::format("  memory per GPU     {:.1f} of {:.1f} GiB: weights {:.1f}, KV cache {:.1f}, activations {:.1f}, "
                     "runtime {:.1f}{}\n",
                     r.memory.total() / kGiB, r.gpu_bytes / kGiB, item_gib(r.memory, "weights"),
                     item_gib(r.memory, "kv_cache"), item_gib(r.memory, "activations"), item_gib(r.memory, "overhead"),
                     r.fits ? "" : "  OUT OF MEMORY");
  out += fmt::format("  KV-cache capacity  {:.0f} tokens = {:.0f} sequences of {} tokens ({:.0f} KiB per token per "
                     "GPU)\n",
                     r.kv_capacity_tokens, r.kv_capacity_sequences, s.prompt + s.output, r.kv_token_bytes / 1024);
  return out;
}

std::string format_serve_json(const Scenario& sc, const ServeResult& r) {
  const ServeSetup& s = sc.inference;
  JsonList decode;
  for (const PassTime& t : r.decode) decode.add(pass_json(t));
  return fmt::format(
      "{{\"model\": {}, \"gpu\": {}, \"gpus\": {}, \"tp\": {}, \"pp\": {}, \"batch\": {}, \"prompt_tokens\": {}, "
      "\"output_tokens\": {}, \"weights\": \"{}\", \"kv_cache\": \"{}\", \"cuda_graphs\": {}, \"ttft_ms\": {}, "
      "\"tpot_ms\": {}, \"decode_tokens_per_s\": {}, \"decode_tokens_per_s_per_gpu\": {}, \"request_s\": {}, "
      "\"request_tokens_per_s\": {}, \"request_tokens_per_s_per_gpu\": {}, \"weight_floor_ms\": {}, "
      "\"prefill\": {}, \"decode_mean\": {}, \"decode_steps\": {}, \"memory_gib\": {{\"weights\": {}, \"kv_cache\": {}, "
      "\"activations\": {}, \"overhead\": {}, \"total\": {}, \"gpu\": {}}}, \"fits\": {}, "
      "\"kv_capacity_tokens\": {}, \"kv_capacity_sequences\": {}, \"kv_bytes_per_token_per_gpu\": {}}}",
      json_string(sc.model.name), json_string(sc.cluster.gpu), r.gpus, r.tp, r.pp, s.batch, s.prompt, s.output,
      weight_format_name(s.weights), kv_format_name(s.kv), s.cuda_graphs, JsonNumber{r.ttft_s * 1e3},
      JsonNumber{r.tpot.total_s * 1e3}, JsonNumber{r.decode_tokens_per_s}, JsonNumber{r.decode_tokens_per_s / r.gpus},
      JsonNumber{r.request_s}, JsonNumber{r.request_tokens_per_s}, JsonNumber{r.request_tokens_per_s / r.gpus},
      JsonNumber{r.weight_floor_s * 1e3}, pass_json(r.prefill), pass_json(r.tpot), decode.str(),
      JsonNumber{item_gib(r.memory, "weights")}, JsonNumber{item_gib(r.memory, "kv_cache")},
      JsonNumber{item_gib(r.memory, "activations")}, JsonNumber{item_gib(r.memory, "overhead")},
      JsonNumber{r.memory.total() / kGiB}, JsonNumber{r.gpu_bytes / kGiB}, r.fits, JsonNumber{r.kv_capacity_tokens},
      JsonNumber{r.kv_capacity_sequences}, JsonNumber{r.kv_token_bytes});
}

}  // namespace dtsim
