// The parallelism and memory features of the program against their closed forms: sequence
// parallelism and selective recomputation (Korthikanti et al. 2022 Table 2), ZeRO-2/3 static
// memory, FSDP gathers, DP buckets inside the backward pass, Megatron's interleaved order (and
// Megatron-Core's micro-batch groups), and
// the peak memory of a 1F1B stage.
#include <catch2/catch.hpp>

#include <set>

#include "sim/engine/engine.hpp"
#include "tests/program_helpers.hpp"
#include "topologies/builders.hpp"
#include "workloads/pipeline_schedule.hpp"
#include "workloads/program.hpp"

using namespace dtsim;
using dtsim::test::layer_activation_bytes;
using dtsim::test::plan_of;

namespace {

int count(const StageProgram& s, OpKind kind) {
  int n = 0;
  for (OpKind k : s.kind) n += k == kind;
  return n;
}

}  // namespace

TEST_CASE("sequence parallelism and selective recompute follow Korthikanti Table 2", "[program][memory]") {
  const ModelShape& m = find_model("gpt-22b");
  const double s = m.seq_len, h = m.hidden, a = m.heads, t = 8, b = 2;
  auto bytes = [&](Recompute r, bool sp) {
    ParallelPlan p = plan_of(8, 1, 1, 2, 2, r);
    p.sequence_parallel = sp;
    validate_plan(p, m, 8);
    return layer_activation_bytes(build_program(m, p), 2);
  };
  CHECK(bytes(Recompute::none, true) == Approx(s * b * h / t * (34 + 5 * a * s / h)));
  CHECK(bytes(Recompute::selective, false) == Approx(s * b * h * (10 + 24 / t)));
  CHECK(bytes(Recompute::selective, true) == Approx(s * b * h * 34 / t));
  CHECK(bytes(Recompute::full, true) == Approx(2 * s * b * h / t));
}

TEST_CASE("flash attention keeps no score-sized activations", "[program][memory]") {
  const ModelShape& m = find_model("gpt-22b");
  ParallelPlan p = plan_of(1, 1, 1, 1, 1, Recompute::none);
  p.attention = Attention::flash;
  validate_plan(p, m, 1);
  const double s = m.seq_len, h = m.hidden, a = m.heads;
  // 34 s b h without the 5 a s^2 b of the scores: Q, K, V (6 s b h) replace Q, K (4) and V (2);
  // plus the log-sum-exp (4 a s b).
  CHECK(layer_activation_bytes(build_program(m, p), 0) == Approx(s * h * 34 + 4 * a * s));
}

TEST_CASE("ZeRO stages shard optimizer state then gradients then weights", "[program][memory]") {
  const ModelShape& m = find_model("gpt-1.7b");
  const double psi = m.total_params(), n = 8;
  const double expected[] = {16 * psi, 4 * psi + 12 * psi / n, 2 * psi + 14 * psi / n, 16 * psi / n};
  for (int zero = 0; zero <= 3; ++zero) {
    ParallelPlan p = plan_of(1, 1, 8, 4, 32, Recompute::none);
    p.zero_stage = zero;
    validate_plan(p, m, 8);
    const Program prog = build_program(m, p);
    const auto& st = prog.stages[0].static_bytes;
    INFO("zero_stage " << zero);
    CHECK(st[0] + st[1] + st[2] == Approx(expected[zero]));
  }
}

TEST_CASE("FSDP gathers every layer before its forward and backward and reduce-scatters its gradients", "[program]") {
  const ModelShape& m = find_model("gpt-1.7b");
  ParallelPlan p = plan_of(1, 1, 8, 4, 64, Recompute::none);
  p.zero_stage = 3;
  validate_plan(p, m, 8);
  const Program prog = build_program(m, p);
  const StageProgram& s = prog.stages[0];
  const int micro_batches = 2, layers = m.layers;
  CHECK(count(s, OpKind::param_all_gather) == 2 * micro_batches * layers);
  CHECK(count(s, OpKind::dp_reduce_scatter) >= micro_batches * layers);
  CHECK(count(s, OpKind::dp_all_gather) == 0);
}

TEST_CASE("DP buckets are reduced during the last backward pass unless overlap is off", "[program]") {
  const ModelShape& m = find_model("gpt-1.7b");
  for (bool overlap : {true, false}) {
    ParallelPlan p = plan_of(1, 1, 4, 4, 32, Recompute::none);
    p.dp_overlap = overlap;
    validate_plan(p, m, 4);
    const Program prog = build_program(m, p);
    const StageProgram& s = prog.stages[0];
    const int reductions = count(s, OpKind::dp_all_reduce);
    INFO("overlap " << overlap);
    if (overlap) {
      // Buckets are whole layers of at least 25 MB: a 1.7B layer holds 127 MB of gradients, so
      // each layer is its own bucket (the final norm joins the last layer's) and so is the
      // 236 MB word embedding.
      CHECK(reductions == m.layers + 1);
      for (int i = 0; i < s.size(); ++i)
        if (s.kind[i] == OpKind::dp_all_reduce) CHECK(s.phase[i] == Phase::backward);
    } else {
      CHECK(reductions == 1);
    }
  }
}

TEST_CASE("the interleaved schedule follows Megatron's order", "[program]") {
  ParallelPlan p = plan_of(1, 2, 1, 1, 4, Recompute::none);
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 2;
  p.stage_layers = {2, 2};
  // Stage 0 of 2, 4 micro-batches, 2 chunks: warm-up (2 - 0 - 1) * 2 + (2 - 1) * 2 = 4 forwards
  // (micro-batches 0, 1 on chunk 0, then 0, 1 on chunk 1), then 1F1B.
  const std::vector<PipelinePass> order = pipeline_order(p, 0);
  REQUIRE(order.size() == 16);
  const int expected[][3] = {{1, 0, 0}, {1, 1, 0}, {1, 0, 1}, {1, 1, 1}, {1, 2, 0}, {0, 0, 1}, {1, 3, 0}, {0, 1, 1}};
  for (int i = 0; i < 8; ++i) {
    INFO("pass " << i);
    CHECK(order[i].forward == (expected[i][0] == 1));
    CHECK(order[i].micro_batch == expected[i][1]);
    CHECK(order[i].chunk == expected[i][2]);
  }
  // Chunk c of stage s holds layers (c * pp + s) * layers_per_chunk.
  CHECK(p.chunk_first_layer(1, 1) == 3);
  CHECK(p.chunk_first_layer(0, 1) == 2);
}

TEST_CASE("the interleaved schedule runs micro-batch groups as Megatron-Core's schedule table", "[program]") {
  // Megatron-Core's own example (schedules.py get_schedule_table): PP 2, 5 micro-batches, groups of
  // 3, 2 chunks; forward passes (micro-batch, chunk) 0 1 2 0 1 2 3 4 3 4 / 0 0 0 1 1 1 0 0 1 1.
  ParallelPlan p = plan_of(1, 2, 1, 1, 5, Recompute::none);
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 2;
  p.microbatch_group = 3;
  p.stage_layers = {2, 2};
  ModelShape m = find_model("gpt-1.7b");
  m.layers = 4;
  validate_plan(p, m, 2);
  const int mbs[] = {0, 1, 2, 0, 1, 2, 3, 4, 3, 4}, chunks[] = {0, 0, 0, 1, 1, 1, 0, 0, 1, 1};
  for (int stage = 0; stage < 2; ++stage) {
    const std::vector<PipelinePass> order = pipeline_order(p, stage);
    REQUIRE(order.size() == 20);
    std::vector<PipelinePass> forwards, backwards;
    int warmup = 0;
    for (const PipelinePass& pass : order) {
      (pass.forward ? forwards : backwards).push_back(pass);
      if (backwards.empty()) ++warmup;
    }
    // (pp - stage - 1) x 2 + (chunks - 1) x group warm-up forwards, then the first 1F1B forward.
    CHECK(warmup == (2 - stage - 1) * 2 + 1 * 3 + 1);
    for (int k = 0; k < 10; ++k) {
      INFO("stage " << stage << " pass " << k);
      CHECK(forwards[k].micro_batch == mbs[k]);
      CHECK(forwards[k].chunk == chunks[k]);
      CHECK(backwards[k].micro_batch == mbs[k]);
      CHECK(backwards[k].chunk == 1 - chunks[k]);  // the backward table mirrors the chunks
    }
  }
  // Groups of 2 would leave a remainder of 1 < pp: refused, listing the groups that work (3 leaves
  // 2, 5 none; 4 leaves 1).
  p.microbatch_group = 2;
  CHECK_THROWS_WITH(validate_plan(p, m, 2), Catch::Contains("parallel.microbatch_group = 2") &&
                                                Catch::EndsWith("valid values: 3, 5"));
  // The default (groups of pp = 2) on 5 micro-batches is refused the same way; fewer micro-batches
  // than stages cannot interleave at all.
  p.microbatch_group = 0;
  CHECK_THROWS_WITH(validate_plan(p, m, 2), Catch::Contains("parallel.microbatch_group = 2"));
  p.global_batch = 1;
  CHECK_THROWS_WITH(validate_plan(p, m, 2), Catch::Contains("fewer than parallel.pp = 2"));
}

TEST_CASE("an interleaved pipeline with a micro-batch count that is not a multiple of pp runs to the end", "[program][engine]") {
  // Llama 3's flexible count: 6 micro-batches on 4 stages, one group of 6.
  ModelShape m = find_model("gpt-1.7b");
  ParallelPlan p = plan_of(1, 4, 1, 1, 6, Recompute::none);
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 2;
  p.microbatch_group = 6;
  ClusterConfig c;
  c.gpus_per_node = 4;
  validate_plan(p, m, 4);
  const Program prog = build_program(m, p);
  MemoryTraceSink sink;
  const EngineResult r =
      Engine(prog, build_cluster(c), find_gpu("A100-SXM4-80GB"), Precision::bf16).run(&sink, TraceDetail::all);
  std::int64_t ops = 0;
  for (const StageProgram& s : prog.stages) ops += s.size();
  CHECK(r.summary.events == ops);
  CHECK(r.summary.step_time_s > 0);
}

TEST_CASE("a schedule whose passes wait on each other stops the engine with an error, not a partial step", "[program][engine]") {
  // Groups of 4 on 4 stages and 5 micro-batches leave a last group of 1 < pp, which
  // validate_plan refuses (Megatron-Core's rule); built anyway, its passes wait on each other.
  ModelShape m = find_model("gpt-1.7b");
  m.layers = 24;
  ParallelPlan p = plan_of(1, 4, 1, 1, 5, Recompute::none);
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 3;
  p.microbatch_group = 4;
  p.stage_layers.assign(4, 6);
  CHECK_THROWS_WITH(validate_plan(p, m, 4), Catch::Contains("parallel.microbatch_group = 4"));
  ClusterConfig c;
  c.gpus_per_node = 4;
  const Program prog = build_program(m, p);
  MemoryTraceSink sink;
  CHECK_THROWS_WITH(Engine(prog, build_cluster(c), find_gpu("A100-SXM4-80GB"), Precision::bf16).run(&sink, TraceDetail::all),
                    Catch::Contains("engine: the step stopped with rank"));
}

TEST_CASE("interleaving splits uneven stages with the extra layers away from the embedding and the head", "[program]") {
  // Llama 3 405B's layout on 4 stages: 4 + 5 + 5 + 4 layers (the embedding and the head count as
  // a layer each), 2 chunks per stage. Blocks in model order (chunk-major):
  // s0c0 [0,2) s1c0 [2,5) s2c0 [5,8) s3c0 [8,10) s0c1 [10,12) s1c1 [12,14) s2c1 [14,16) s3c1 [16,18).
  ParallelPlan p = plan_of(1, 4, 1, 1, 8, Recompute::none);
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 2;
  p.stage_layers = {4, 5, 5, 4};
  ModelShape m = find_model("gpt-1.7b");
  m.layers = 18;
  validate_plan(p, m, 4);
  const int first[4][2] = {{0, 10}, {2, 12}, {5, 14}, {8, 16}};
  const int count[4][2] = {{2, 2}, {3, 2}, {3, 2}, {2, 2}};
  for (int s = 0; s < 4; ++s)
    for (int c = 0; c < 2; ++c) {
      INFO("stage " << s << " chunk " << c);
      CHECK(p.chunk_first_layer(s, c) == first[s][c]);
      CHECK(p.chunk_layers(s, c) == count[s][c]);
    }
  // Stage 0 gives its extra layer to its last chunk: 5 layers on 2 chunks are 2 + 3.
  p.stage_layers = {5, 4, 4, 5};
  CHECK(p.chunk_layers(0, 0) == 2);
  CHECK(p.chunk_layers(0, 1) == 3);
  CHECK(p.chunk_layers(3, 0) == 3);
  CHECK(p.chunk_layers(3, 1) == 2);
  // Every layer's forward runs once per micro-batch, on one stage.
  const Program prog = build_program(m, p);
  std::vector<int> forwards(m.layers, 0);
  for (const StageProgram& st : prog.stages)
    for (int i = 0; i < st.size(); ++i)
      if (st.kind[i] == OpKind::qkv_proj && st.phase[i] == Phase::forward) ++forwards[st.layer[i]];
  for (int l = 0; l < m.layers; ++l) CHECK(forwards[l] == p.micro_batches());
  // A middle stage with fewer layers than chunks is refused, naming both keys.
  p.stage_layers = {6, 1, 6, 5};
  CHECK_THROWS_WITH(validate_plan(p, m, 4), Catch::Contains("parallel.virtual_stages = 2") &&
                                                 Catch::Contains("parallel.stage_layers"));
  // The end stages may be one layer short, their end chunks holding the embedding or the head
  // alone (Llama 3); every layer still runs once per micro-batch.
  p.stage_layers = {1, 8, 8, 1};
  REQUIRE_NOTHROW(validate_plan(p, m, 4));
  CHECK((p.chunk_layers(0, 0) == 0 && p.chunk_layers(0, 1) == 1));
  CHECK((p.chunk_layers(3, 0) == 1 && p.chunk_layers(3, 1) == 0));
  const Program ends = build_program(m, p);
  std::fill(forwards.begin(), forwards.end(), 0);
  for (const StageProgram& st : ends.stages)
    for (int i = 0; i < st.size(); ++i)
      if (st.kind[i] == OpKind::qkv_proj && st.phase[i] == Phase::forward) ++forwards[st.layer[i]];
  for (int l = 0; l < m.layers; ++l) CHECK(forwards[l] == p.micro_batches());
}

TEST_CASE("an interleaved pipeline runs to the end and keeps at most its warm-up in flight", "[program][engine]") {
  ModelShape m = find_model("gpt-1.7b");
  ParallelPlan p = plan_of(1, 4, 1, 1, 8, Recompute::none);
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 2;
  ClusterConfig c;
  c.gpus_per_node = 4;
  const ClusterGraph g = build_cluster(c);
  validate_plan(p, m, 4);
  const Program prog = build_program(m, p);
  MemoryTraceSink sink;
  const EngineResult r = Engine(prog, g, find_gpu("A100-SXM4-80GB"), Precision::bf16).run(&sink, TraceDetail::all);
  CHECK(r.summary.step_time_s > 0);
  // Every op of every rank ran.
  std::int64_t ops = 0;
  for (const StageProgram& s : prog.stages) ops += s.size();
  CHECK(r.summary.events == ops);
}

TEST_CASE("a 1F1B stage peaks at pp micro-batches of activations on top of its static memory", "[program][memory]") {
  const ModelShape& m = find_model("gpt-22b");  // 48 layers, hidden 6144, 64 heads
  ParallelPlan p = plan_of(2, 4, 1, 1, 8, Recompute::selective);
  p.sequence_parallel = true;
  ClusterConfig c;
  const ClusterGraph g = build_cluster(c);
  validate_plan(p, m, 8);
  const Program prog = build_program(m, p);
  const EngineResult r = Engine(prog, g, find_gpu("A100-SXM4-80GB"), Precision::bf16).run(nullptr, TraceDetail::summary);
  const double s = m.seq_len, h = m.hidden, a = m.heads, t = 2, b = 1, layers = 12, in_flight = 4;
  const StageProgram& st = prog.stages[0];
  const double static_bytes = st.static_bytes[0] + st.static_bytes[1] + st.static_bytes[2];
  // Korthikanti: 34 s b h / t per layer with SP + selective, for pp micro-batches on stage 0;
  // plus, during the first backward, the recomputed attention core of one layer (5 a s^2 b / t)
  // and the received gradient (2 s b h).
  const double expected = static_bytes + in_flight * layers * 34 * s * b * h / t + 5 * a * s * s * b / t + 2 * s * b * h;
  CHECK(r.ranks[0].peak_memory_bytes == Approx(expected).epsilon(0.02));
}

namespace {

// One micro-batch on a TP pair, with or without sequence parallelism, under `overlap`.
ParallelPlan tp_pair(const ModelShape& m, bool sp, TpOverlap overlap) {
  ParallelPlan p = plan_of(2, 1, 1, 1, 1, Recompute::none);
  p.sequence_parallel = sp;
  p.tp_overlap = overlap;
  validate_plan(p, m, 2);
  return p;
}

}  // namespace

TEST_CASE("with tp_overlap the backward TP collectives overlap the weight-gradient GEMMs", "[program]") {
  const ModelShape& m = find_model("gpt-1.7b");
  for (bool sp : {false, true}) {
    const Program prog = build_program(m, tp_pair(m, sp, TpOverlap::backward));
    const StageProgram& s = prog.stages[0];
    auto deps_of = [&](int op) { return test::deps_of(s, op); };
    int checked = 0;
    for (int i = 0; i + 3 < s.size(); ++i) {
      if (s.phase[i] != Phase::backward || s.gemm_part[i] != GemmPart::input_grad) continue;
      INFO("sp " << sp << " op " << i);
      // input gradient, its reduction (all-reduce, or SP's reduce-scatter), weight gradient.
      const int reduce = i + 1, weight = i + 2, next = i + 3;
      CHECK(s.kind[reduce] == (sp ? OpKind::tp_reduce_scatter : OpKind::tp_all_reduce));
      CHECK(s.gemm_part[weight] == GemmPart::weight_grad);
      CHECK(s.kind[weight] == s.kind[i]);
      CHECK(deps_of(reduce).count(i) == 1);
      CHECK(deps_of(weight).count(reduce) == 0);  // runs while the reduction does
      CHECK(deps_of(next).count(reduce) == 1);    // the next op waits for both
      CHECK(deps_of(next).count(weight) == 1);
      if (sp) {  // the input re-gathered for the weight gradient during the input-gradient GEMM
        CHECK(s.kind[i - 1] == OpKind::tp_all_gather);
        CHECK(deps_of(i).count(i - 1) == 0);
        CHECK(deps_of(weight).count(i - 1) == 1);
      }
      ++checked;
    }
    CHECK(checked == 2 * m.layers + 1);  // QKV and MLP-up of every layer, and the LM head
  }
}

TEST_CASE("tp_overlap shortens a TP step by hiding its backward reductions", "[program][engine]") {
  const ModelShape& m = find_model("gpt-1.7b");
  ClusterConfig c;
  c.gpus_per_node = 2;
  const ClusterGraph g = build_cluster(c);
  double step_s[2] = {};
  for (bool overlap : {false, true}) {
    ParallelPlan p = plan_of(2, 1, 1, 1, 1, Recompute::none);
    p.tp_overlap = overlap ? TpOverlap::backward : TpOverlap::none;
    validate_plan(p, m, 2);
    const Program prog = build_program(m, p);
    for (int i = 0; i < prog.stages[0].size(); ++i)
      if (!overlap) REQUIRE(prog.stages[0].gemm_part[i] == GemmPart::whole);
    step_s[overlap] =
        Engine(prog, g, find_gpu("A100-SXM4-80GB"), Precision::bf16).run(nullptr, TraceDetail::summary).summary.step_time_s;
  }
  CHECK(step_s[1] < step_s[0]);
}

TEST_CASE("userbuffers overlap runs each sequence-parallel collective beside its GEMM, both ways", "[program][engine]") {
  // Transformer Engine's comm-GEMM overlap: the all-gathers feeding QKV and MLP-up and the
  // reduce-scatters after the output projection and MLP-down run beside those GEMMs; in the
  // backward pass the gradient's all-gather beside the output GEMMs' backward.
  const ModelShape& m = find_model("gpt-1.7b");
  const ParallelPlan p = tp_pair(m, true, TpOverlap::userbuffers);
  const Program prog = build_program(m, p);
  const StageProgram& s = prog.stages[0];
  auto deps_of = [&](int op) { return test::deps_of(s, op); };
  int gathers = 0, scatters = 0, gradient_gathers = 0;
  for (int i = 0; i + 2 < s.size(); ++i) {
    if (s.layer[i] < 0) continue;
    const OpKind k = s.kind[i], next = s.kind[i + 1];
    INFO("op " << i);
    if (s.phase[i] == Phase::forward && k == OpKind::tp_all_gather) {
      REQUIRE((next == OpKind::qkv_proj || next == OpKind::fc1));
      CHECK(deps_of(i + 1).count(i) == 0);  // the GEMM does not wait for the gather
      CHECK(deps_of(i + 2).count(i) == 1);  // the op after it does
      ++gathers;
    } else if (s.phase[i] == Phase::forward && k == OpKind::tp_reduce_scatter) {
      REQUIRE((next == OpKind::out_proj || next == OpKind::fc2));
      CHECK(deps_of(i + 1).count(i) == 0);
      CHECK(deps_of(i + 2).count(i) == 1);
      ++scatters;
    } else if (s.phase[i] == Phase::backward && k == OpKind::tp_all_gather &&
               (next == OpKind::out_proj || next == OpKind::fc2)) {
      CHECK(deps_of(i + 1).count(i) == 0);
      CHECK(deps_of(i + 2).count(i) == 1);
      ++gradient_gathers;
    }
  }
  CHECK(gathers == 2 * m.layers);
  CHECK(scatters == 2 * m.layers);
  CHECK(gradient_gathers == 2 * m.layers);
  // The step is shorter than with the backward pass's overlap alone.
  ClusterConfig c;
  c.gpus_per_node = 2;
  const ClusterGraph g = build_cluster(c);
  ParallelPlan backward = p;
  backward.tp_overlap = TpOverlap::backward;
  const auto step = [&](const ParallelPlan& plan) {
    return Engine(build_program(m, plan), g, find_gpu("A100-SXM4-80GB"), Precision::bf16)
        .run(nullptr, TraceDetail::summary)
        .summary.step_time_s;
  };
  CHECK(step(p) < step(backward));
  CHECK(parse_tp_overlap("userbuffers", "parallel.tp_overlap") == TpOverlap::userbuffers);
  CHECK_THROWS_WITH(parse_tp_overlap("yes", "parallel.tp_overlap"), Catch::Contains("parallel.tp_overlap = 'yes'"));
}
