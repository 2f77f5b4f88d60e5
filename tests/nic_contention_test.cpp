// Contention made visible: the same step with each GPU on its own NIC and with two GPUs sharing
// one. 4 nodes x 2 GPUs, PP 2 across nodes and DP 4 across two nodes: the DP all-reduce and the
// pipeline sends of both GPUs of a node cross the NICs. Sharing one NIC halves the rings' share
// of it (max-min), so the DP all-reduce takes about twice as long, the step is slower, and the
// shared NIC carries what the two NICs carried.
#include <catch2/catch.hpp>

#include "sim/engine.hpp"
#include "topologies/builders.hpp"

using namespace dtsim;

namespace {

struct Outcome {
  EngineResult result;
  double dp_all_reduce_ns = 0;  // longest DP gradient reduction on rank 0
  double nic_bytes = 0;         // bytes node 0's NICs sent into the fabric
};

Outcome run_with_nics(int nics) {
  ModelShape m;
  m.layers = 4;
  m.hidden = 2048;
  m.heads = 16;
  m.vocab = 32000;
  m.seq_len = 1024;
  ParallelPlan p;
  p.pp = 2;
  p.dp = 4;
  p.micro_batch = 2;
  p.global_batch = 16;
  p.dp_overlap = false;
  ClusterConfig c;
  c.nodes = 4;
  c.gpus_per_node = 2;
  c.nics_per_node = nics;
  c.nic_gbps = 100;
  const ClusterGraph g = build_cluster(c);
  validate_plan(p, m, g.num_gpus());
  const Program program = build_program(m, p);
  MemoryTraceSink sink;
  Outcome o;
  // Simple protocol throughout, so both runs put the same bytes on the wire.
  o.result = Engine(program, g, find_gpu("A100-SXM4-80GB"), Precision::bf16, Protocol::simple).run(&sink, TraceDetail::all);
  for (const EventRecord& e : sink.events_)
    if (e.rank == 0 && e.op == static_cast<int>(OpKind::dp_all_reduce))
      o.dp_all_reduce_ns = std::max(o.dp_all_reduce_ns, static_cast<double>(e.end_ns - e.start_ns));
  for (const LinkRecord& l : o.result.links)
    if (l.source.rfind("node0.nic", 0) == 0 && l.target.rfind("node0.", 0) != 0) o.nic_bytes += l.bytes;
  return o;
}

}  // namespace

TEST_CASE("DP and pipeline traffic sharing a NIC slow the step by what the flow model gives", "[engine][comm]") {
  const Outcome own = run_with_nics(2), shared = run_with_nics(1);
  CHECK(shared.result.summary.step_time_s > own.result.summary.step_time_s);
  // The same traffic leaves node 0 either way.
  CHECK(shared.nic_bytes == Approx(own.nic_bytes).epsilon(1e-9));
  // Two rings on one NIC get half its rate each: the bandwidth-bound all-reduce takes ~2x.
  const double ratio = shared.dp_all_reduce_ns / own.dp_all_reduce_ns;
  CHECK(ratio > 1.7);
  CHECK(ratio < 2.1);
}
