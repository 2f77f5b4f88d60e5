// model.head_dim apart from hidden / heads (Qwen3: 32 heads of 128 on a hidden size of 2048): the
// projections, the attention core and the KV cache take the heads' width, heads x head_dim, and a
// head_dim equal to hidden / heads changes nothing.
#include <catch2/catch.hpp>

#include "tests/cli_scratch.hpp"
#include "workloads/layer_ops.hpp"
#include "workloads/memory_fit.hpp"

using namespace dtsim;

namespace {

// A Qwen3-style shape at a small size: 8 query and 2 key/value heads of 64 on a hidden size of
// 256, so the heads are twice as wide as the hidden size.
ModelShape wide_heads() {
  ModelShape m;
  m.layers = 2;
  m.hidden = 256;
  m.heads = 8;
  m.kv_heads = 2;
  m.head_dim = 64;
  m.ffn = FfnKind::swiglu;
  m.ffn_hidden = 512;
  m.vocab = 1000;
  m.seq_len = 128;
  m.bias = false;
  m.tied_embeddings = false;
  m.position = PositionEmbedding::rotary;
  return m;
}

const OpSpec& op_of(const std::vector<OpSpec>& ops, OpKind kind) {
  for (const OpSpec& op : ops)
    if (op.kind == kind) return op;
  FAIL("no op of the kind");
  return ops.front();
}

}  // namespace

TEST_CASE("Q, K, V and the output projection are heads x head_dim wide", "[model][head_dim]") {
  const ModelShape m = wide_heads();
  const double h = 256, q = 8 * 64, kv = 2 * 64;
  CHECK(m.q_dim() == q);
  CHECK(m.kv_dim() == kv);
  CHECK(m.attention_params() == h * (q + 2 * kv) + q * h);
  CHECK(m.kv_cache_elements_per_token_layer() == 2 * kv);
  // Inference: 2 x layers x kv_heads x head_dim x context x 2 B of KV cache.
  InferenceSetup s;
  s.context = 1000;
  const MemoryNeed need = inference_memory(m, s, 1, 1);
  CHECK(need.items[1].name == "kv_cache");
  CHECK(need.items[1].bytes == 2 * 2 * kv * 1000 * 2);
}

TEST_CASE("the layer's GEMMs and attention core run on heads x head_dim per TP rank", "[model][head_dim]") {
  const ModelShape m = wide_heads();
  ParallelPlan p;
  p.tp = 2;
  p.micro_batch = 1;
  const LayerOps ops(m, p);
  const std::vector<OpSpec> layer = ops.layer_forward(0);
  const double T = 128, s = 128, q = 8 * 64 / 2.0, kv = 2 * 64 / 2.0;
  const OpSpec& qkv = op_of(layer, OpKind::qkv_proj);
  CHECK(qkv.m == T);
  CHECK(qkv.n == q + 2 * kv);
  CHECK(qkv.k == 256);
  const OpSpec& out = op_of(layer, OpKind::out_proj);
  CHECK(out.n == 256);
  CHECK(out.k == q);
  const OpSpec& scores = op_of(layer, OpKind::attn_scores);
  CHECK(scores.k == 64);
  CHECK(scores.batch == 4);  // heads on this rank
  CHECK(scores.flops == 2 * s * s * 64 * 4);
  CHECK(op_of(layer, OpKind::attn_context).flops == 2 * s * s * 64 * 4);
}

TEST_CASE("a head_dim of hidden / heads is the default shape", "[model][head_dim]") {
  ModelShape implicit = wide_heads();
  implicit.head_dim = 0;
  ModelShape given = implicit;
  given.head_dim = 256 / 8;
  CHECK(given.total_params() == implicit.total_params());
  ParallelPlan p;
  p.micro_batch = 1;
  const std::vector<OpSpec> a = LayerOps(implicit, p).layer_forward(0), b = LayerOps(given, p).layer_forward(0);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].flops == b[i].flops);
    CHECK(a[i].bytes == b[i].bytes);
    CHECK(a[i].saved == b[i].saved);
  }
}

TEST_CASE("model.head_dim is checked with the key and what is valid", "[model][head_dim][cli]") {
  const std::string tiny = std::string(DTSIM_SOURCE_DIR) + "/scenarios/tests/tiny-pipeline.ini";
  const auto err = [&](const std::string& args) {
    const test::Outcome o = test::run_dtsim("run " + tiny + " " + args);
    CHECK(o.status == 2);
    return o.err;
  };
  CHECK_THAT(err("--model.head_dim=0"), Catch::Contains("model.head_dim = 0: must be >= 1"));
  CHECK_THAT(err("--model.heads=7"), Catch::Contains("is not divisible by model.heads = 7; give model.head_dim"));
  // With head_dim the heads need not divide the hidden size, but TP still splits whole heads.
  CHECK_THAT(err("--model.heads=7 --model.head_dim=64"), Catch::Contains("model.heads = 7 is not divisible by it"));
  CHECK(test::run_dtsim("run " + tiny + " --model.heads=6 --model.head_dim=96 --json").status == 0);
}
