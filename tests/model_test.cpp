// Parameter counts of catalog models against their published totals.
#include <catch2/catch.hpp>

#include "sim/base/error.hpp"
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
