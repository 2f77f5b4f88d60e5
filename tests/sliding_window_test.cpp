// Sliding-window attention: the causal pairs of a window in closed form, which layers slide, the
// flash kernel's FLOPs in a sliding layer (and the unfused kernels' unchanged s x s scores), the
// step's model FLOPs, GPT-OSS's parameters against its model card, and the keys refused.
#include <catch2/catch.hpp>
#include <string>

#include "sim/scenario/scenario.hpp"
#include "tests/program_helpers.hpp"
#include "workloads/layer_ops.hpp"
#include "tests/scenario_helpers.hpp"

using namespace dtsim;
using dtsim::test::plan_of;

namespace {

const OpSpec& op_of(const std::vector<OpSpec>& ops, OpKind kind) {
  for (const OpSpec& op : ops)
    if (op.kind == kind) return op;
  FAIL("no such op");
  return ops.front();
}

// GPT-OSS-120B's attention on 4 layers of 4096 tokens.
ModelShape small_gpt_oss() {
  ModelShape m = find_model("gpt-oss-120b");
  m.layers = 4;
  return m;
}

Scenario scenario(const std::string& model_keys, const std::string& parallel_keys = "dp = 2\n") {
  const std::string text = "[model]\nname = gpt-oss-20b\nlayers = 4\n" + model_keys +
                           "[training]\nglobal_batch = 2\nmicro_batch = 1\nattention = flash\n"
                           "[parallel]\ntp = 1\npp = 1\n" + parallel_keys +
                           "[cluster]\ngpu = H100-SXM5-80GB\nnodes = 1\ngpus_per_node = 2\n";
  const auto vm = test::overrides();
  Scenario sc = load_scenario_text(text, "window", vm);
  validate_scenario(sc, 2);
  return sc;
}

}  // namespace

TEST_CASE("a window's causal pairs are the sum over positions of min(pos + 1, w)", "[window]") {
  for (const auto& [s, w] : {std::pair{1, 1}, {7, 3}, {4096, 128}, {100, 100}, {100, 250}}) {
    double sum = 0;
    for (int p = 0; p < s; ++p) sum += std::min(p + 1, w);
    CHECK(causal_pairs(s, w) == sum);
  }
  // 4096 tokens, a 128-token window: 128 x 129 / 2 + (4096 - 128) x 128.
  CHECK(causal_pairs(4096, 128) == 516160);
}

TEST_CASE("which layers slide", "[window]") {
  ModelShape m = find_model("gpt-oss-120b");
  // GPT-OSS: layer_types sliding_attention, full_attention, ... (gpt_oss/torch/model.py: layer_idx % 2 == 0).
  for (int l = 0; l < m.layers; ++l) CHECK(m.is_sliding_layer(l) == (l % 2 == 0));
  CHECK(m.attention_span(0) == 128);
  CHECK(m.attention_span(1) == 4096);
  // Gemma 3's sliding_window_pattern 6: five sliding layers, then a full one.
  m.sliding_window_pattern = 6;
  for (int l = 0; l < 12; ++l) CHECK(m.is_sliding_layer(l) == (l % 6 != 5));
  m.sliding_window_pattern = 0;  // every layer
  CHECK(m.is_sliding_layer(5));
  m.sliding_window = 8192;  // a window no shorter than the sequence is full attention
  CHECK(m.attention_span(0) == 4096);
}

TEST_CASE("flash attention in a sliding layer runs the window's causal pairs", "[window]") {
  const ModelShape m = small_gpt_oss();
  ParallelPlan p = plan_of(2, 1, 1, 2, 2, Recompute::none);
  p.attention = Attention::flash;
  const LayerOps ops(m, p);
  const double b = 2, heads = 64 / 2, d = 64, s = 4096;
  const OpSpec full = op_of(ops.layer_forward(1), OpKind::flash_attention);  // a copy: the list is a temporary
  CHECK(full.flops == 2 * b * heads * s * s * (d + d));
  // The field counts the rectangle's stand-in, twice the pairs: the compute model runs half of it.
  const OpSpec sliding = op_of(ops.layer_forward(0), OpKind::flash_attention);
  CHECK(sliding.flops == 2 * b * heads * 2 * 516160.0 * (d + d));
  CHECK(sliding.bytes == full.bytes);  // every key and value is read once either way
  CHECK(sliding.saved == full.saved);
}

TEST_CASE("unfused attention keeps its s x s scores in a sliding layer", "[window]") {
  // Eager attention (gpt_oss/torch/model.py's sdpa, Hugging Face's eager_attention_forward) masks
  // the window into the whole score matrix.
  const ModelShape m = small_gpt_oss();
  const ParallelPlan p = plan_of(1, 1, 1, 1, 1, Recompute::none);
  const LayerOps ops(m, p);
  const double s = 4096, scores = 64 * s * s;
  for (int l : {0, 1}) {
    const std::vector<OpSpec> layer = ops.layer_forward(l);
    CHECK(op_of(layer, OpKind::attn_scores).flops == 2 * scores * 64);
    CHECK(op_of(layer, OpKind::softmax).saved == 2 * scores);
  }
}

TEST_CASE("the step's model FLOPs drop by the window's share of the sliding layers' attention", "[window]") {
  Scenario with = scenario("");
  Scenario without = scenario("sliding_window = 0\n");
  const double saved = build_program(without.model, without.plan).model_flops_per_step -
                       build_program(with.model, with.plan).model_flops_per_step;
  // Two sliding layers, forward + backward (3 x), 2 micro-batches (one per DP rank), 64 heads of 64.
  const double s = 4096, rectangle = s * s - 2 * 516160.0;
  CHECK(saved == Approx(2 * 3 * 2 * 2 * 64 * rectangle * 128).epsilon(1e-12));
}

TEST_CASE("GPT-OSS's parameters are its model card's", "[window][catalog]") {
  // gpt-oss model card (OpenAI 2025) Table 1: 116.83B total, 5.13B active; 20.91B and 3.61B.
  const ModelShape big = find_model("gpt-oss-120b"), small = find_model("gpt-oss-20b");
  CHECK(big.total_params() == Approx(116.83e9).epsilon(0.001));
  CHECK(big.active_params() == Approx(5.13e9).epsilon(0.002));
  CHECK(small.total_params() == Approx(20.91e9).epsilon(0.001));
  CHECK(small.active_params() == Approx(3.61e9).epsilon(0.002));
}

TEST_CASE("sliding-window keys are refused with the key and what is valid", "[window]") {
  CHECK_THROWS_WITH(scenario("sliding_window_pattern = 1\n"),
                    Catch::Contains("model.sliding_window_pattern = 1") && Catch::Contains("valid values"));
  CHECK_THROWS_WITH(scenario("sliding_window = -4\n"), Catch::Contains("model.sliding_window = -4: must be >= 0"));
  CHECK_THROWS_WITH(scenario("sliding_window = 0\nsliding_window_pattern = 2\n"),
                    Catch::Contains("needs model.sliding_window >= 1"));
  CHECK_THROWS_WITH(scenario("", "dp = 1\ncp = 2\n"),
                    Catch::Contains("parallel.cp = 2 with model.sliding_window = 128") && Catch::Contains("cp = 1"));
}
