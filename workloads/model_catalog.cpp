// The catalog of published model shapes, each with its source.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "sim/base/error.hpp"
#include "workloads/model.hpp"

namespace dtsim {
namespace {

ModelShape gpt(std::string name, int layers, int hidden, int heads, int vocab = 51200, int seq = 2048) {
  ModelShape m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.vocab = vocab;
  m.seq_len = seq;
  return m;
}

ModelShape with_source(ModelShape m, std::string source) {
  m.source = std::move(source);
  return m;
}

// A Llama-style shape: SwiGLU, rotary positions, RMS norms, no biases,
// untied embeddings.
ModelShape llama(std::string name, int layers, int hidden, int heads, int kv_heads, int ffn, int vocab, int seq,
                 std::string source) {
  ModelShape m = gpt(std::move(name), layers, hidden, heads, vocab, seq);
  m.kv_heads = kv_heads;
  m.ffn = FfnKind::swiglu;
  m.ffn_hidden = ffn;
  m.position = PositionEmbedding::rotary;
  m.norm = NormKind::rmsnorm;
  m.tied_embeddings = false;
  m.bias = false;
  return with_source(std::move(m), std::move(source));
}

// A Qwen2/2.5 shape: Llama-style with biases on the Q, K, V projections only.
ModelShape qwen(std::string name, int layers, int hidden, int heads, int kv_heads, int ffn, int vocab,
                std::string source) {
  ModelShape m = llama(std::move(name), layers, hidden, heads, kv_heads, ffn, vocab, 4096, std::move(source));
  m.qkv_bias = true;
  return m;
}

// A mixture-of-experts shape: `experts` routed SwiGLU experts of expert_ffn (active per token)
// plus `shared` always-on ones, after `dense` dense layers, MoE every `step`-th layer after them.
ModelShape moe(ModelShape m, int experts, int active, int shared, int expert_ffn, int dense = 0, int step = 1) {
  m.experts = experts;
  m.active_experts = active;
  m.shared_experts = shared;
  m.expert_ffn_hidden = expert_ffn;
  m.dense_layers = dense;
  m.moe_layer_step = step;
  return m;
}

// Qwen3 MoE (Yang et al. 2025, Qwen3 technical report, and the HF config.json): Llama-style with
// no biases at all, 4 KV heads of head_dim 128 whatever the hidden size, every layer MoE with 128
// experts (8 per token) and no shared expert; untied embeddings, vocab 151936; 4096-token
// sequences in the pre-training stages S1 and S2. The per-head RMS norms on Q and K (QK-Norm,
// 2 x 128 gains per layer) are left out: 0.00005 % of the parameters, and no kernel of their own.
ModelShape qwen3_moe(std::string name, int layers, int hidden, int heads, int ffn, int expert_ffn, std::string source) {
  ModelShape m = llama(std::move(name), layers, hidden, heads, 4, ffn, 151936, 4096, std::move(source));
  m.head_dim = 128;
  return moe(std::move(m), 128, 8, 0, expert_ffn);
}

std::vector<ModelShape> make_catalog() {
  std::vector<ModelShape> c;
  // BigScience BLOOM-176B model card: 70 layers, hidden 14336, 112 heads, vocab 250880, seq 2048,
  // ALiBi positions, layer norm after the embedding, tied embeddings. 176,247M parameters.
  ModelShape bloom = gpt("bloom-176b", 70, 14336, 112, 250880, 2048);
  bloom.position = PositionEmbedding::alibi;
  bloom.embedding_norm = true;
  c.push_back(with_source(bloom, "BLOOM-176B model card (BigScience 2022): 176,247M parameters"));
  // Narayanan et al. 2021 Table 1 and Korthikanti et al. 2022 Table 3 (vocab 51200, seq 2048).
  const char* megatron = "Megatron GPT series: Narayanan et al. 2021 Table 1 (vocab 51200, seq 2048)";
  c.push_back(with_source(gpt("gpt-1.7b", 24, 2304, 24), megatron));
  c.push_back(with_source(gpt("gpt-3.6b", 30, 3072, 32), megatron));
  c.push_back(with_source(gpt("gpt-7.5b", 36, 4096, 32), megatron));
  c.push_back(with_source(gpt("gpt-18.4b", 40, 6144, 48), megatron));
  c.push_back(with_source(gpt("gpt-22b", 48, 6144, 64), "Korthikanti et al. 2022 Table 3 (vocab 51200, seq 2048)"));
  c.push_back(with_source(gpt("gpt-39.1b", 48, 8192, 64), megatron));
  c.push_back(with_source(gpt("gpt-76.1b", 60, 10240, 80), megatron));
  c.push_back(with_source(gpt("gpt-145.6b", 80, 12288, 96), megatron));
  c.push_back(with_source(gpt("gpt3-175b", 96, 12288, 96), "GPT-3 175B shape (Brown et al. 2020) as in Narayanan et al. 2021 Table 2: 174.6B"));
  c.push_back(with_source(gpt("gpt-310.1b", 96, 16384, 128), megatron));
  c.push_back(with_source(gpt("gpt-530b", 105, 20480, 128), megatron));
  c.push_back(with_source(gpt("gpt-1t", 128, 25600, 160), megatron));
  // Smith et al. 2022 (MT-NLG): 105 layers, hidden 20480, 128 heads, seq 2048, GPT-2 BPE vocab 50257.
  c.push_back(with_source(gpt("mt-nlg-530b", 105, 20480, 128, 50257, 2048),
                          "Smith et al. 2022 (Megatron-Turing NLG 530B) Table 1; GPT-2 vocab 50257: 530B"));
  // Zhang et al. 2022 (OPT) Table 1: 96 layers, 96 heads, hidden 12288; HF facebook/opt-175b style
  // config: vocab 50272, 2048 learned positions, tied embeddings, biases, ReLU MLP (2 matrices).
  c.push_back(with_source(gpt("opt-175b", 96, 12288, 96, 50272, 2048), "Zhang et al. 2022 (OPT) Table 1: 175B"));
  // EleutherAI GPT-NeoX-20B (Black et al. 2022): 44 layers, hidden 6144, 64 heads, vocab 50432,
  // rotary positions, untied embeddings; 20.55B parameters.
  ModelShape neox = gpt("gpt-neox-20b", 44, 6144, 64, 50432, 2048);
  neox.position = PositionEmbedding::rotary;
  neox.tied_embeddings = false;
  neox.parallel_block = true;  // x + attn(ln1(x)) + mlp(ln2(x))
  c.push_back(with_source(neox, "Black et al. 2022 (GPT-NeoX-20B): 20.55B"));
  // Meta Llama 2 (Touvron et al. 2023 Table 1 and the HF config.json files): vocab 32000, seq 4096.
  c.push_back(llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096,
                    "Touvron et al. 2023 (Llama 2); HF meta-llama/Llama-2-7b-hf config.json: 6.74B"));
  c.push_back(llama("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096,
                    "Touvron et al. 2023 (Llama 2); HF meta-llama/Llama-2-13b-hf config.json: 13.02B"));
  c.push_back(llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096,
                    "Touvron et al. 2023 (Llama 2); HF meta-llama/Llama-2-70b-hf config.json: 68.98B"));
  // Meta Llama 3 / 3.1 / 3.3 (Grattafiori et al. 2024 Table 3 and HF config.json): vocab 128256,
  // 8 KV heads; seq_len is the 8192-token pre-training length (3.1/3.3 extend the context to 128K).
  const auto llama3 = [&](const char* name, int layers, int hidden, int heads, int ffn, const char* config) {
    c.push_back(llama(name, layers, hidden, heads, 8, ffn, 128256, 8192,
                      fmt::format("Grattafiori et al. 2024 (Llama 3) Table 3; HF {} config.json", config)));
  };
  llama3("llama3-8b", 32, 4096, 32, 14336, "meta-llama/Meta-Llama-3-8B: 8.03B");
  llama3("llama3-70b", 80, 8192, 64, 28672, "meta-llama/Meta-Llama-3-70B: 70.55B");
  llama3("llama3.1-8b", 32, 4096, 32, 14336, "meta-llama/Llama-3.1-8B: 8.03B");
  llama3("llama3.1-70b", 80, 8192, 64, 28672, "meta-llama/Llama-3.1-70B: 70.55B");
  llama3("llama3.1-405b", 126, 16384, 128, 53248, "meta-llama/Llama-3.1-405B: 405.85B");
  llama3("llama3.3-70b", 80, 8192, 64, 28672, "meta-llama/Llama-3.3-70B-Instruct: 70.55B");
  // DeepSeek-R1 (HF deepseek-ai/DeepSeek-R1 config.json, the DeepSeek-V3 architecture): 61
  // layers, hidden 7168, 128 heads, MLA with q_lora_rank 1536, kv_lora_rank 512, qk_nope 128,
  // qk_rope 64, v_head 128; first 3 layers dense (intermediate 18432), then 256 routed experts
  // (8 per token) + 1 shared of 2048, routed within 4 of 8 expert groups (n_group 8, topk_group 4:
  // node-limited routing, at most 4 nodes per token, report Sec. 2.1.2); vocab 129280, untied;
  // 4096-token pre-training sequences.
  // 671B total (without the 14B multi-token-prediction module), 37B active (DeepSeek-V3 report).
  ModelShape r1 = llama("deepseek-r1", 61, 7168, 128, 128, 18432, 129280, 4096,
                        "DeepSeek-AI 2025 (DeepSeek-R1) / DeepSeek-V3 report; HF deepseek-ai/DeepSeek-R1 "
                        "config.json: 671B total, 37B active");
  r1.experts = 256;
  r1.active_experts = 8;
  r1.shared_experts = 1;
  r1.expert_ffn_hidden = 2048;
  r1.dense_layers = 3;
  r1.moe_groups = 8;
  r1.moe_topk_groups = 4;
  r1.q_lora_rank = 1536;
  r1.kv_lora_rank = 512;
  r1.nope_head_dim = 128;
  r1.rope_head_dim = 64;
  r1.v_head_dim = 128;
  c.push_back(r1);
  // DeepSeek-V3 (DeepSeek-AI 2024, the DeepSeek-V3 technical report; HF deepseek-ai/DeepSeek-V3
  // config.json): the architecture of deepseek-r1 above, trained with one multi-token-prediction
  // module (report Sec. 2.2, D = 1; num_nextn_predict_layers = 1): an MoE block like layer 60 with
  // its norms and projection, 11.6B of its own; the checkpoint's 685B add 14B for it, counting the
  // copies of the embedding and the output head it shares (report Sec. 2.2, and the HF model card).
  // deepseek-r1 keeps none: the R1 report trains it with reinforcement learning and does not say
  // the module takes part (its config's layer 61 serves speculative decoding); model.mtp_layers = 1
  // adds it.
  ModelShape v3 = r1;
  v3.name = "deepseek-v3";
  v3.mtp_layers = 1;
  v3.source = "DeepSeek-AI 2024 (DeepSeek-V3 report); HF deepseek-ai/DeepSeek-V3 config.json: 671B total, 37B active, "
              "plus the 14B MTP module";
  c.push_back(v3);
  c.push_back(qwen3_moe("qwen3-30b-a3b", 48, 2048, 32, 6144, 768,
                        "Yang et al. 2025 (Qwen3); HF Qwen/Qwen3-30B-A3B config.json: 30.5B total, 3.3B active"));
  c.push_back(qwen3_moe("qwen3-235b-a22b", 94, 4096, 64, 12288, 1536,
                        "Yang et al. 2025 (Qwen3); HF Qwen/Qwen3-235B-A22B config.json: 235B total, 22B active"));
  // Mixtral (Jiang et al. 2024, Mixtral of Experts; HF config.json files): Mistral-style GQA with 8
  // KV heads, every layer MoE with 8 SwiGLU experts of intermediate_size (2 per token), untied.
  // 8x7B: trained with a 32K context (the paper), vocab 32000. 8x22B: the 64K context of Mistral's
  // announcement (max_position_embeddings 65536), the v3 tokenizer's vocab 32768 of
  // mistralai/Mixtral-8x22B-Instruct-v0.1 (the base checkpoint's 32000 is 9.4M parameters fewer).
  c.push_back(moe(llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768,
                        "Jiang et al. 2024 (Mixtral of Experts); HF mistralai/Mixtral-8x7B-v0.1 config.json: 46.7B "
                        "total, 12.9B active"),
                  8, 2, 0, 14336));
  c.push_back(moe(llama("mixtral-8x22b", 56, 6144, 48, 8, 16384, 32768, 65536,
                        "Mistral AI 2024 (Mixtral 8x22B); HF mistralai/Mixtral-8x22B-Instruct-v0.1 config.json: 141B "
                        "total, 39B active"),
                  8, 2, 0, 16384));
  // Llama 4 (Meta 2025, the Llama 4 announcement; HF text_config of config.json): 48 layers,
  // hidden 5120, 40 heads of 128, 8 KV heads, vocab 202048, untied; routed experts and one shared
  // expert of intermediate_size 8192 with top-1 routing; dense layers of intermediate_size_mlp
  // 16384. Scout: 16 experts, every layer MoE. Maverick: 128 experts, interleave_moe_layer_step 2
  // (layers 1, 3, ..., 47 MoE). The published totals (109B, 400B) include the vision encoder,
  // which is not modelled. Three of every four layers attend within chunks of 8192 tokens
  // (attention_chunk_size); seq_len is 8192, where that is full causal attention as dtsim runs it
  // (Scout's rope_scaling original_max_position_embeddings is 8192 too); a longer sequence would
  // overcount those layers' attention. Scout's QK norm (use_qk_norm) is an L2 norm without
  // parameters; Maverick has none.
  const auto llama4 = [](const char* name, int experts, int step, const char* repo, const char* totals) {
    ModelShape m = llama(name, 48, 5120, 40, 8, 16384, 202048, 8192,
                         fmt::format("Meta 2025 (Llama 4); HF {} config.json text_config: {}", repo, totals));
    m.head_dim = 128;
    return moe(std::move(m), experts, 1, 1, 8192, 0, step);
  };
  c.push_back(llama4("llama4-scout-17b-16e", 16, 1, "meta-llama/Llama-4-Scout-17B-16E",
                     "109B total and 17B active with the vision encoder"));
  c.push_back(llama4("llama4-maverick-17b-128e", 128, 2, "meta-llama/Llama-4-Maverick-17B-128E",
                     "400B total and 17B active with the vision encoder"));
  // GPT-OSS (OpenAI 2025, gpt-oss-120b & gpt-oss-20b model card, arXiv 2508.10925; HF
  // openai/gpt-oss-120b and openai/gpt-oss-20b config.json; the reference gpt_oss/torch/model.py
  // of github.com/openai/gpt-oss): hidden 2880, 64 query heads of head_dim 64 with 8 KV heads,
  // biases on the QKV and output projections (attention_bias), every layer MoE with top-4 routing
  // over num_local_experts SwiGLU experts of intermediate_size 2880 whose router and projections
  // carry biases (the activation clamped at swiglu_limit 7: same kernel cost), no shared expert,
  // RMSNorm, rotary positions, untied embeddings, vocab 201088; the even layers attend within a
  // sliding_window of 128 tokens and the odd ones in full (layer_types sliding_attention,
  // full_attention, ...). seq_len: initial_context_length 4096 (YaRN extends it to 131072). The
  // learned attention sinks (one logit per head and layer, 2,304 parameters in all) are left out.
  const auto gpt_oss = [](const char* name, int layers, int experts, const char* repo, const char* totals) {
    ModelShape m = llama(name, layers, 2880, 64, 8, 2880, 201088, 4096,
                         fmt::format("OpenAI 2025 (gpt-oss model card); HF {} config.json: {}", repo, totals));
    m.head_dim = 64;
    m.bias = true;
    m.expert_bias = true;
    m.sliding_window = 128;
    m.sliding_window_pattern = 2;
    return moe(std::move(m), experts, 4, 0, 2880);
  };
  c.push_back(gpt_oss("gpt-oss-120b", 36, 128, "openai/gpt-oss-120b", "116.8B total, 5.1B active"));
  c.push_back(gpt_oss("gpt-oss-20b", 24, 32, "openai/gpt-oss-20b", "20.9B total, 3.6B active"));
  // DeepSeek-R1-Distill (HF deepseek-ai/DeepSeek-R1-Distill-* config.json; bases Qwen2.5-Math-1.5B,
  // Qwen2.5-Math-7B, Qwen2.5-14B, Qwen2.5-32B, Llama-3.1-8B, Llama-3.3-70B-Instruct).
  c.push_back(qwen("deepseek-r1-distill-qwen-1.5b", 28, 1536, 12, 2, 8960, 151936,
                   "HF deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B config.json: 1.78B"));
  c.push_back(qwen("deepseek-r1-distill-qwen-7b", 28, 3584, 28, 4, 18944, 152064,
                   "HF deepseek-ai/DeepSeek-R1-Distill-Qwen-7B config.json: 7.62B"));
  c.push_back(qwen("deepseek-r1-distill-qwen-14b", 48, 5120, 40, 8, 13824, 152064,
                   "HF deepseek-ai/DeepSeek-R1-Distill-Qwen-14B config.json: 14.77B"));
  c.push_back(qwen("deepseek-r1-distill-qwen-32b", 64, 5120, 40, 8, 27648, 152064,
                   "HF deepseek-ai/DeepSeek-R1-Distill-Qwen-32B config.json: 32.76B"));
  c.push_back(llama("deepseek-r1-distill-llama-8b", 32, 4096, 32, 8, 14336, 128256, 8192,
                    "HF deepseek-ai/DeepSeek-R1-Distill-Llama-8B config.json (Llama-3.1-8B): 8.03B"));
  c.push_back(llama("deepseek-r1-distill-llama-70b", 80, 8192, 64, 8, 28672, 128256, 8192,
                    "HF deepseek-ai/DeepSeek-R1-Distill-Llama-70B config.json (Llama-3.3-70B): 70.55B"));
  // GPT-2 XL class 1.5B used for workstation runs (48 layers, 1600 hidden, 25 heads, vocab 50257,
  // seq 1024, learned positions); 1.56B parameters.
  c.push_back(with_source(gpt("gpt2-xl", 48, 1600, 25, 50257, 1024), "Radford et al. 2019 (GPT-2 XL): 1.56B"));
  return c;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return out;
}

}  // namespace

const std::vector<ModelShape>& model_catalog() {
  static const std::vector<ModelShape> catalog = make_catalog();
  return catalog;
}

const ModelShape& find_model(std::string_view name) {
  const std::string key = lower(name);
  for (const ModelShape& m : model_catalog())
    if (m.name == key) return m;
  std::string valid;
  for (const ModelShape& m : model_catalog()) valid += (valid.empty() ? "" : ", ") + m.name;
  throw InputError(fmt::format("model.name = '{}': unknown model; valid names: {}, or 'custom' with the shape keys", name, valid));
}

}  // namespace dtsim
