// dtsim serve's composition: cluster, inference program, kernel choice for the decode GEMMs,
// engine, trace, and the figures read back from the traced rank's ops.
#include "sim/scenario/serve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "sim/base/error.hpp"
#include "sim/compute/compute_model.hpp"
#include "sim/scenario/layout_choice.hpp"
#include "sim/scenario/run.hpp"
#include "sim/trace/hdf5_sink.hpp"
#include "workloads/inference_program.hpp"

namespace dtsim {
namespace {

// Keeps the op records of the first TP rank of every pipeline stage (the figures are read from
// them) and passes every record on to the HDF5 trace, when there is one, unless the scenario asked
// for a summary-only trace.
class ServeSink final : public TraceSink {
 public:
  ServeSink(TraceSink* inner, bool inner_events, const ParallelPlan& plan) : inner_(inner), inner_events_(inner_events) {
    for (int r = 0; r < plan.num_ranks(); ++r) kept_.push_back(plan.coords(r).tp == 0);
  }
  void begin(const RunInfo& info) override {
    if (inner_) inner_->begin(info);
  }
  void event(const EventRecord& r) override {
    if (kept_[static_cast<std::size_t>(r.rank)]) events.push_back(r);
    if (inner_ && inner_events_) inner_->event(r);
  }
  void memory(const MemoryRecord& r) override {
    if (inner_ && inner_events_) inner_->memory(r);
  }
  void ranks(const std::vector<RankRecord>& rows) override {
    if (inner_) inner_->ranks(rows);
  }
  void topology(const std::vector<DeviceRecord>& d, const std::vector<LinkRecord>& l) override {
    if (inner_) inner_->topology(d, l);
  }
  void summary(const Summary& s) override {
    if (inner_) inner_->summary(s);
  }
  void finish() override {
    if (inner_) inner_->finish();
  }
  void abort() override {
    if (inner_) inner_->abort();
  }
  std::vector<EventRecord> events;

 private:
  TraceSink* inner_;
  bool inner_events_;
  std::vector<char> kept_;
};

// A decode step's linear layers multiply `batch` rows by the weights. The kernel library runs the
// faster of a tensor-core GEMM (its output tiles padded to the batch) and a CUDA-core
// matrix-vector kernel (llama.cpp's mul_mat_vec, cuBLAS's gemv): the compute model times both and
// the op keeps the faster; the op with GEMM shape 0 is timed as a CUDA-core kernel.
void choose_decode_kernels(StageProgram& p, const ComputeModel& compute) {
  for (int i = 0; i < p.size(); ++i) {
    if (p.micro_batch[i] == 0 || !weight_gemm(p.kind[i]) || p.gemm_m[i] == 0) continue;
    const TimeNs gemm = compute.time(p, i).duration_ns;
    const int m = p.gemm_m[i];
    p.gemm_m[i] = 0;
    if (compute.time(p, i).duration_ns >= gemm) p.gemm_m[i] = m;
  }
}

// Splits pass `pass`'s span into its parts. The batch runs through the pipeline stages in turn,
// so the parts of every stage add up; a hand-off counts once, at its send.
PassTime pass_time(const std::vector<EventRecord>& events, int pass, TimeNs launch_ns) {
  PassTime t;
  TimeNs begin = -1, end = 0;
  for (const EventRecord& e : events) {
    if (e.micro_batch != pass) continue;
    begin = begin < 0 ? e.start_ns : std::min(begin, e.start_ns);
    end = std::max(end, e.end_ns);
    const double s = ns_to_seconds(e.end_ns - e.start_ns);
    if (static_cast<Stream>(e.stream) == Stream::pp_recv) continue;
    if (static_cast<Stream>(e.stream) != Stream::compute) {
      t.comm_s += s;
      continue;
    }
    const double launch = ns_to_seconds(launch_ns);
    t.launch_s += launch;
    const OpKind kind = static_cast<OpKind>(e.op);
    if (weight_gemm(kind)) t.weights_s += s - launch;
    else if (kind == OpKind::flash_attention && pass > 0) t.kv_s += s - launch;
  }
  t.total_s = ns_to_seconds(end - std::max<TimeNs>(begin, 0));
  t.other_s = t.total_s - t.weights_s - t.kv_s - t.comm_s - t.launch_s;
  return t;
}

// Compute kernels of pass `pass` (the launch gaps an eager pass pays).
int kernels(const std::vector<EventRecord>& events, int pass) {
  return static_cast<int>(std::count_if(events.begin(), events.end(), [&](const EventRecord& e) {
    return e.micro_batch == pass && static_cast<Stream>(e.stream) == Stream::compute;
  }));
}

// The mean of a quantity linear in the context over the output, from the first, middle and last
// step (trapezoid rule; exact for a linear cost).
PassTime integrate(const std::vector<PassTime>& steps) {
  const std::size_t n = steps.size();
  const std::vector<double> w = n == 3 ? std::vector<double>{0.25, 0.5, 0.25}
                                : n == 2 ? std::vector<double>{0.5, 0.5}
                                         : std::vector<double>{1.0};
  PassTime mean;
  for (std::size_t i = 0; i < n; ++i) {
    mean.total_s += w[i] * steps[i].total_s;
    mean.weights_s += w[i] * steps[i].weights_s;
    mean.kv_s += w[i] * steps[i].kv_s;
    mean.comm_s += w[i] * steps[i].comm_s;
    mean.launch_s += w[i] * steps[i].launch_s;
    mean.other_s += w[i] * steps[i].other_s;
  }
  return mean;
}

void scale(PassTime& t, double f) {
  t.total_s *= f, t.weights_s *= f, t.kv_s *= f, t.comm_s *= f, t.launch_s *= f, t.other_s *= f;
}

// The weights the linear layers of one decode step stream (the embedding table is not read whole).
double decode_weight_bytes(const StageProgram& p, WeightFormat f) {
  double sum = 0;
  for (int i = 0; i < p.size(); ++i)
    if (p.micro_batch[i] == 1 && weight_gemm(p.kind[i]))
      sum += (p.kind[i] == OpKind::lm_head ? embedding_weight_bytes(f) : weight_format_bytes(f)) *
             static_cast<double>(p.gemm_k[i]) * p.gemm_n[i] * std::max(1, p.gemm_batch[i]);
  return sum;
}

double item_bytes(const MemoryNeed& need, const std::string& name) {
  for (const MemoryItem& i : need.items)
    if (i.name == name) return i.bytes;
  return 0;
}

struct ServeLayout {
  int tp = 1, pp = 1;
};

// TP x PP over all the cluster's GPUs: pp stages (1 unless set), TP inside each.
ServeLayout serve_layout(const Scenario& sc, int gpus) {
  const ParallelPlan& p = sc.plan;
  if (p.dp != kAutoSize && p.dp != 1)
    throw InputError(fmt::format("{}: parallel.dp = {}: dtsim serve simulates one model replica; valid: 1 or auto",
                                 sc.source, p.dp));
  ServeLayout l;
  l.pp = p.pp == kAutoSize ? 1 : p.pp;
  if (l.pp < 1 || gpus % l.pp != 0)
    throw InputError(fmt::format("{}: parallel.pp = {}: dtsim serve splits the model over all {} GPUs of the cluster, "
                                 "so pp must divide {}",
                                 sc.source, p.pp, gpus, gpus));
  l.tp = gpus / l.pp;
  if (p.tp != kAutoSize && p.tp != l.tp)
    throw InputError(fmt::format("{}: parallel.tp = {}: dtsim serve splits the model over all {} GPUs of the cluster "
                                 "in {} pipeline stage(s); valid: {} or auto",
                                 sc.source, p.tp, gpus, l.pp, l.tp));
  return l;
}

}  // namespace

ServeResult run_serve(Scenario& sc, const std::string& trace_path, int threads) {
  const ServeSetup& s = sc.inference;
  const ClusterGraph graph = make_cluster(sc);
  ServeResult r;
  r.gpus = graph.num_gpus();
  const ServeLayout layout = serve_layout(sc, r.gpus);
  const int tp = layout.tp;
  r.tp = tp;
  r.pp = layout.pp;
  sc.plan.tp = tp;  // the sizes served, for tp_fold_exact
  sc.plan.pp = layout.pp;
  sc.plan.dp = 1;
  const ParallelPlan plan = [&] {
    try {
      return inference_plan(sc.model, s, tp, layout.pp);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", sc.source, e.what()));
    }
  }();
  const GpuSpec& gpu = find_gpu(sc.cluster.gpu);
  // CUDA graphs replay a decode step's kernels without the CPU launching each one (PyTorch's
  // CUDA-graphs note; vLLM captures decode batches): the step pays one launch, not one per kernel.
  const TimeNs launch_ns = s.cuda_graphs ? 0 : ComputeModel::kLaunchOverheadNs;
  Program program = build_inference_program(sc.model, plan, s);
  for (StageProgram& stage : program.stages)
    choose_decode_kernels(stage, ComputeModel(gpu, Precision::bf16, plan.attention, plan.recipe, launch_ns));
  Engine engine(program, graph, gpu, Precision::bf16, sc.protocol, sc.algorithm, *sc.nccl, launch_ns);

  std::unique_ptr<TraceSink> file;
  if (!trace_path.empty()) {
    file = std::make_unique<Hdf5TraceSink>(trace_path);
    file->begin(RunInfo{sc.resolved_text, DTSIM_VERSION});
  }
  ServeSink sink(file.get(), sc.trace_detail != TraceDetail::summary, plan);
  try {
    EngineOptions options;
    options.threads = threads;
    options.tp_symmetric = tp_fold_exact(sc);
    const TraceDetail detail = sc.trace_detail == TraceDetail::summary ? TraceDetail::stages : sc.trace_detail;
    r.engine = engine.run(&sink, detail, options);
    if (file) {
      file->ranks(r.engine.ranks);
      file->topology(device_records(graph), r.engine.links);
      file->summary(r.engine.summary);
      file->finish();
    }
  } catch (...) {
    if (file) file->abort();
    throw;
  }

  // The prefill runs eagerly (vLLM captures only decode batches): it pays every kernel's launch.
  r.prefill = pass_time(sink.events, 0, launch_ns);
  if (s.cuda_graphs) {
    const double gaps = kernels(sink.events, 0) * ns_to_seconds(ComputeModel::kLaunchOverheadNs);
    r.prefill.launch_s += gaps;
    r.prefill.total_s += gaps;
  }
  const std::vector<int> contexts = decode_contexts(s);
  for (std::size_t i = 0; i < contexts.size(); ++i) {
    PassTime step = pass_time(sink.events, static_cast<int>(i) + 1, launch_ns);
    step.context = contexts[i];
    if (s.cuda_graphs) {  // the graph's own launch
      step.launch_s += ns_to_seconds(ComputeModel::kLaunchOverheadNs);
      step.total_s += ns_to_seconds(ComputeModel::kLaunchOverheadNs);
    }
    r.decode.push_back(step);
  }
  // A speculative step yields tokens_per_step tokens per sequence on average: every per-token
  // figure is the step's over it (the steps' parts too).
  r.tokens_per_step = s.tokens_per_step();
  for (PassTime& step : r.decode) {
    r.step_s.push_back(step.total_s);
    scale(step, 1 / r.tokens_per_step);
  }
  r.tpot = integrate(r.decode);
  r.ttft_s = r.prefill.total_s;
  r.request_s = r.ttft_s + (s.output - 1) * r.tpot.total_s;
  r.decode_tokens_per_s = s.batch / r.tpot.total_s;
  r.request_tokens_per_s = static_cast<double>(s.batch) * s.output / r.request_s;

  const ComputeModel rates(gpu, Precision::bf16);
  r.memory = serve_memory(sc.model, s, tp, layout.pp);
  for (const StageProgram& stage : program.stages)  // the stages stream their weights in turn
    r.weight_floor_s += decode_weight_bytes(stage, s.weights) / rates.hbm_bytes_per_s() / r.tokens_per_step;
  r.gpu_bytes = gpu.memory_bytes;
  r.kv_token_bytes = item_bytes(r.memory, "kv_cache") / (static_cast<double>(s.batch) * (s.prompt + s.output));
  const double left =
      r.gpu_bytes - item_bytes(r.memory, "weights") - item_bytes(r.memory, "activations") - item_bytes(r.memory, "overhead");
  r.kv_capacity_tokens = std::max(0.0, left) / r.kv_token_bytes;
  r.kv_capacity_sequences = std::floor(r.kv_capacity_tokens / (s.prompt + s.output));
  r.fits = r.memory.total() <= r.gpu_bytes;
  return r;
}

}  // namespace dtsim
