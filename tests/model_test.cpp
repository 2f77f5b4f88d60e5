// Parameter counts of catalog models against their published totals, and shape-driven kernel traffic.
#include <catch2/catch.hpp>

#include "sim/base/error.hpp"
#include "workloads/layer_ops.hpp"
#include "workloads/model.hpp"

using namespace dtsim;

TEST_CASE("parameter counts match the published totals", "[model]") {
  struct Row {
    const char* name;
    double published;
    double tolerance;
  };
  // BLOOM model card 176,247M; Narayanan Table 1 (1.7B, 145.6B, 310.1B, 529.6B, 1008B) and
  // Table 2 (174.6B for the GPT-3 shape); GPT-NeoX-20B paper 20.55B; Llama-2 paper 6.74B.
  const Row rows[] = {{"bloom-176b", 176.247e9, 0.005}, {"gpt-1.7b", 1.7e9, 0.03},
                      {"gpt3-175b", 174.6e9, 0.005},   {"gpt-145.6b", 145.6e9, 0.005},
                      {"gpt-310.1b", 310.1e9, 0.005},  {"gpt-530b", 529.6e9, 0.005},
                      {"gpt-1t", 1008.0e9, 0.005},     {"gpt-neox-20b", 20.55e9, 0.01},
                      {"llama2-7b", 6.74e9, 0.01},     {"llama2-70b", 68.98e9, 0.01}};
  for (const Row& r : rows) {
    INFO(r.name);
    CHECK(find_model(r.name).total_params() == Approx(r.published).epsilon(r.tolerance));
  }
}

TEST_CASE("the catalog's newer models match their published parameter counts", "[model]") {
  struct Row {
    const char* name;
    double published;
  };
  // Hugging Face model cards (safetensors totals), the OPT, MT-NLG and Llama 3 papers; the
  // DeepSeek-V3 report's 671B (without its 14B multi-token-prediction module).
  const Row rows[] = {{"deepseek-r1", 671e9},
                      {"deepseek-r1-distill-qwen-1.5b", 1.78e9},
                      {"deepseek-r1-distill-qwen-7b", 7.62e9},
                      {"deepseek-r1-distill-qwen-14b", 14.77e9},
                      {"deepseek-r1-distill-qwen-32b", 32.76e9},
                      {"deepseek-r1-distill-llama-8b", 8.03e9},
                      {"deepseek-r1-distill-llama-70b", 70.55e9},
                      {"llama3-8b", 8.03e9},
                      {"llama3-70b", 70.55e9},
                      {"llama3.1-405b", 405.85e9},
                      {"llama3.3-70b", 70.55e9},
                      {"llama2-13b", 13.02e9},
                      {"opt-175b", 175e9},
                      {"mt-nlg-530b", 530e9}};
  for (const Row& r : rows) {
    INFO(r.name);
    CHECK(find_model(r.name).total_params() == Approx(r.published).epsilon(0.01));
    CHECK_FALSE(find_model(r.name).source.empty());
  }
}

TEST_CASE("the mixture-of-experts catalog matches the published totals", "[model][moe]") {
  struct Row {
    const char* name;
    double published, tolerance;
  };
  // Model cards and papers: Qwen3-30B-A3B 30.5B, Qwen3-235B-A22B 235B (Qwen's HF model cards);
  // Mixtral 8x7B 46.7B (Mistral's announcement), 8x22B 141B (Mistral's announcement); DeepSeek-V3
  // 671B without its MTP module (the report); GPT-OSS 116.8B and 20.9B (its model card). Llama 4's 109B and 400B (Meta's announcement) count
  // the vision encoder, which the text model leaves out: Scout's text model is 1.1 % smaller.
  const Row rows[] = {{"qwen3-30b-a3b", 30.5e9, 0.01},      {"qwen3-235b-a22b", 235e9, 0.01},
                      {"mixtral-8x7b", 46.7e9, 0.01},        {"mixtral-8x22b", 141e9, 0.01},
                      {"llama4-scout-17b-16e", 109e9, 0.015}, {"llama4-maverick-17b-128e", 400e9, 0.01},
                      {"deepseek-v3", 671e9, 0.01},          {"gpt-oss-120b", 116.8e9, 0.01},
                      {"gpt-oss-20b", 20.9e9, 0.01}};
  for (const Row& r : rows) {
    INFO(r.name << ": " << find_model(r.name).total_params() / 1e9 << " B");
    CHECK(find_model(r.name).total_params() == Approx(r.published).epsilon(r.tolerance));
    CHECK(find_model(r.name).is_moe());
    CHECK_FALSE(find_model(r.name).source.empty());
  }
  // Qwen3's 32 heads of 128 are twice its hidden size of 2048; Maverick alternates dense and MoE
  // layers (24 of each), Scout's are all MoE.
  CHECK(find_model("qwen3-30b-a3b").q_dim() == 2 * 2048);
  CHECK(find_model("llama4-maverick-17b-128e").moe_layers() == 24);
  CHECK(find_model("llama4-scout-17b-16e").moe_layers() == 48);
  CHECK(find_model("deepseek-v3").total_params() == find_model("deepseek-r1").total_params());
}

TEST_CASE("DeepSeek-R1 activates 37B of its 671B parameters per token", "[model]") {
  const ModelShape& m = find_model("deepseek-r1");
  // The report's "37B" is rounded to the billion: 36.5B to 37.5B (dtsim: 36.63B).
  CHECK(m.active_params() > 36.5e9);
  CHECK(m.active_params() < 37.5e9);
  // An MoE layer: MLA attention, router, 256 routed + 1 shared SwiGLU experts of 2048, two norms.
  const double h = 7168, a = 128;
  const double mla = h * 1536 + 2 * 1536 + 1536 * a * (128 + 64) + h * (512 + 64) + 2 * 512 + 512 * a * (128 + 128) +
                     a * 128 * h;
  CHECK(m.attention_params() == Approx(mla));
  CHECK(m.moe_layer_params() == Approx(mla + h * 256 + 257 * 3 * h * 2048 + 4 * h));
  CHECK(m.moe_layer_params() - m.moe_layer_active_params() == Approx(248 * 3 * h * 2048));
  // MLA caches the 512-dim latent and the 64-dim rotary key per token and layer.
  CHECK(m.kv_cache_elements_per_token_layer() == 576);
}

TEST_CASE("a dense model uses all but other tokens' embedding rows and Qwen biases only Q K and V", "[model]") {
  const ModelShape& q = find_model("deepseek-r1-distill-qwen-7b");
  CHECK(q.active_params() == Approx(q.total_params() - (q.vocab - 1.0) * q.hidden));
  const double h = q.hidden, kv = 4 * 128.0, f = q.ffn_hidden;
  CHECK(q.params_per_layer() == Approx(h * (h + 2 * kv) + (h + 2 * kv) + h * h + 3 * h * f + 4 * h));
  CHECK(q.kv_cache_elements_per_token_layer() == 2 * kv);
}

TEST_CASE("the BLOOM layer is 12h^2 + 13h parameters", "[model]") {
  const ModelShape& m = find_model("bloom-176b");
  const double h = m.hidden;
  CHECK(m.params_per_layer() == Approx(12 * h * h + 13 * h));
  CHECK(m.embedding_params() == Approx(250880.0 * h));  // ALiBi: no position embedding
}

TEST_CASE("GQA and SwiGLU change the layer size as their shapes say", "[model]") {
  ModelShape m = find_model("llama2-7b");
  const double h = m.hidden, f = m.ffn_hidden;
  CHECK(m.params_per_layer() == Approx(4 * h * h + 3 * h * f + 4 * h));
  m.kv_heads = 8;  // 4x fewer key/value heads
  CHECK(m.params_per_layer() == Approx(h * (h + 2 * h / 4) + h * h + 3 * h * f + 4 * h));
}

TEST_CASE("an unknown model lists the valid names", "[model]") {
  try {
    find_model("gpt-5");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("gpt-5") && Catch::Contains("bloom-176b"));
  }
}

TEST_CASE("ALiBi in an unfused attention expands the bias into the scores and reads it back", "[model]") {
  // Megatron-DeepSpeed's baddbmm (BLOOM): two more passes over the b x heads/tp x s x s scores
  // in the forward pass, none in the backward (the bias needs no gradient).
  const ModelShape bloom = find_model("bloom-176b");
  ModelShape rotary = bloom;
  rotary.position = PositionEmbedding::rotary;
  ParallelPlan p;
  p.tp = 4, p.micro_batch = 2, p.attention = Attention::standard;
  const auto scores_op = [&](const ModelShape& m) {
    for (const OpSpec& op : LayerOps(m, p).layer_forward(0))
      if (op.kind == OpKind::attn_scores) return op;
    FAIL("no attention scores");
    return OpSpec{};
  };
  const OpSpec alibi = scores_op(bloom), plain = scores_op(rotary);
  const double scores = 2.0 * (112 / 4) * 2048.0 * 2048.0;
  CHECK(alibi.bytes - plain.bytes == Approx(2 * 2 * scores));
  CHECK(alibi.backward_bytes == Approx(plain.backward_bytes));
  CHECK(alibi.flops == Approx(plain.flops));
}
