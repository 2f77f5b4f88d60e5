// One model behind run, fit and advise (issue 29): `dtsim fit`'s training memory is the peak
// `dtsim run` simulates for the same layout and framework profile, and `dtsim advise`'s estimate
// of a layout is within 15 % of the step it simulates.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "sim/advisor/advise.hpp"
#include "sim/base/units.hpp"
#include "sim/scenario/run.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/memory_fit.hpp"
#include "tests/scenario_helpers.hpp"

using namespace dtsim;

namespace {

// A layout on H100 nodes of 8 GPUs, as scenario keys on top of `model` and `framework`.
struct Layout {
  const char* what;
  std::string model;  // scenario [model] lines
  const char* framework;
  int tp, pp, dp, micro_batch, micro_batches;
  Recompute recompute;
  int zero = -1;  // -1: the profile's
  int ep = 1;
  int cp = 1;
};

// The model the [model] lines describe (a one-GPU scenario of them).
ModelShape shape_of(const std::string& model) {
  return load_scenario_text(fmt::format("[model]\n{}\n[training]\nglobal_batch = 1\nmicro_batch = 1\n"
                                        "[parallel]\ntp = 1\npp = 1\ndp = 1\n[cluster]\nnodes = 1\ngpus_per_node = 1\n",
                                        model),
                            "model", test::overrides({}))
      .model;
}

// The layout as `dtsim run` takes it, with the stage split fit assumes (memory_fit's stage_split).
std::string scenario_text(const Layout& l) {
  const ModelShape m = shape_of(l.model);
  const int gpus = l.tp * l.pp * l.dp * l.cp;
  std::string stages = "auto";
  const StageSplit split = stage_split(m, l.pp);
  if (split.uneven) {
    stages.clear();
    for (int n : split.layers) stages += fmt::format("{}{}", stages.empty() ? "" : ",", n);
  }
  return fmt::format(
      "[model]\n{}\n[training]\nframework = {}\nglobal_batch = {}\nmicro_batch = {}\nrecompute = {}\n"
      "[parallel]\ntp = {}\npp = {}\ndp = {}\nep = {}\ncp = {}\nstage_layers = {}\n{}"
      "[cluster]\ngpu = H100-SXM5-80GB\nnodes = {}\ngpus_per_node = {}\n[output]\ntrace_detail = summary\n",
      l.model, l.framework, l.micro_batch * l.dp * l.micro_batches, l.micro_batch, recompute_name(l.recompute), l.tp,
      l.pp, l.dp, l.ep, l.cp, stages, l.zero >= 0 ? fmt::format("zero_stage = {}\n", l.zero) : "", std::max(1, gpus / 8),
      std::min(gpus, 8));
}

}  // namespace

TEST_CASE("fit's training memory is the peak run simulates for the layout", "[fit][one-model]") {
  const std::string moe =
      "name = custom\nlayers = 6\nhidden = 1024\nheads = 16\nkv_heads = 4\nffn = swiglu\nffn_hidden = 2816\n"
      "vocab = 32000\nseq_len = 2048\nexperts = 8\nactive_experts = 2\nshared_experts = 1\nexpert_ffn_hidden = 704\n"
      "dense_layers = 1";
  const std::string wide_heads =  // Qwen3's heads x head_dim = 2 x hidden
      "name = custom\nlayers = 4\nhidden = 1024\nheads = 16\nkv_heads = 4\nhead_dim = 128\nffn = swiglu\n"
      "ffn_hidden = 2816\nvocab = 32000\nseq_len = 2048";
  const Layout layouts[] = {
      {"dense, flash attention + SP", "name = llama2-7b", "megatron-core", 2, 2, 1, 1, 4, Recompute::none},
      {"GQA, selective recompute", "name = llama3-8b", "megatron-core", 4, 1, 2, 1, 2, Recompute::selective},
      {"MoE with EP, standard attention", moe, "megatron-lm-2022", 2, 1, 4, 2, 2, Recompute::none, 0, 2},
      {"MoE every second layer, two stages", moe + "\nmoe_layer_step = 2", "megatron-core", 1, 2, 4, 1, 4,
       Recompute::full, 1, 2},
      {"heads x head_dim apart from hidden, selective recompute", wide_heads, "megatron-lm-2022", 2, 1, 2, 1, 2,
       Recompute::selective},
      {"uneven stages, full recompute", "name = gpt-1.7b", "megatron-lm-2021", 1, 5, 1, 2, 8, Recompute::full},
      {"ZeRO-3 (FSDP)", "name = llama2-7b", "torchtitan", 1, 1, 8, 1, 2, Recompute::none},
      {"context parallel (p2p ring), distributed optimizer", "name = llama3-8b", "megatron-core", 2, 2, 2, 1, 4,
       Recompute::none, -1, 1, 4},
  };
  for (const Layout& l : layouts) {
    Scenario sc = load_scenario_text(scenario_text(l), l.what, test::overrides({}));
    const double simulated = run_scenario(sc, "", 1, true).summary.peak_memory_gib;
    TrainingSetup s = framework_setup(l.framework).training;
    s.seq_len = sc.model.seq_len, s.micro_batch = l.micro_batch, s.recompute = l.recompute;
    s.micro_batches = l.micro_batches, s.ep = l.ep, s.cp = l.cp;
    if (l.zero >= 0) s.zero_stage = l.zero;
    // The simulation leaves out the runtime overhead that fit adds.
    const double fit = (training_memory(sc.model, s, l.tp, l.pp, l.dp).total() - kRuntimeOverheadBytes) / kGiB;
    INFO(l.what << ": fit " << fit << " GiB, run " << simulated << " GiB");
    fmt::print("{}: fit {:.3f} GiB, run {:.3f} GiB\n", l.what, fit, simulated);
    CHECK(fit == Approx(simulated).epsilon(0.05));
  }
}

TEST_CASE("advise's estimate of each layout it ranks is within 15 % of the step it simulates", "[advise][one-model]") {
  // Llama-3-8B on H100 nodes under Megatron-Core (flash attention, SP, distributed optimizer): the
  // estimate that picks the layouts runs the same kernels (layer_ops) on a roofline.
  AdviseRequest q;
  q.model = "llama3-8b";
  q.gpus = {"H100"};
  q.max_gpus = 16;
  q.global_batch = 64;
  q.top = 1;
  q.jobs = 2;
  const AdviseResult res = advise(q);
  CHECK(res.framework == "megatron-core");
  int ranked = 0;
  for (const AdviseRow& r : res.rows) {
    if (r.role != "layout" || r.status != PointStatus::ok) continue;
    ++ranked;
    INFO(fmt::format("tp {} pp {} dp {} mb {} {} z{}", r.tp, r.pp, r.dp, r.micro_batch, recompute_name(r.recompute),
                     r.zero_stage));
    fmt::print("advise tp {} pp {} dp {} mb {} {} z{}: estimate {:.3f} s, simulated {:.3f} s; fit {:.2f} GiB, peak {:.2f} GiB\n",
               r.tp, r.pp, r.dp, r.micro_batch, recompute_name(r.recompute), r.zero_stage, r.estimate_s,
               r.summary.step_time_s, r.fit_gib, r.summary.peak_memory_gib);
    CHECK(r.estimate_s == Approx(r.summary.step_time_s).epsilon(0.15));
    // The memory that admitted the layout is its simulated peak (+ the 1 GiB runtime overhead).
    CHECK(r.fit_gib - kRuntimeOverheadBytes / kGiB == Approx(r.summary.peak_memory_gib).epsilon(0.05));
  }
  CHECK(ranked >= 3);
  CHECK_THROWS_WITH(framework_setup("megatron"), Catch::Contains("training.framework = 'megatron'") &&
                                                     Catch::Contains("megatron-core"));
}
