// Contention made visible: the same step with each GPU on its own NIC and with two GPUs sharing
// one. 4 nodes x 2 GPUs, PP 2 across nodes and DP 4 across two nodes: the DP all-reduce and the
// pipeline sends of both GPUs of a node cross the NICs. Sharing one NIC halves the rings' share
// of it (max-min), so the DP all-reduce takes about twice as long, the step is slower, and the
// shared NIC carries what the two NICs carried. And on the BLOOM scenario: the DP gradient
// reduce-scatter runs over the Omni-Path NICs at the same time as pipeline sends through them.
#include <catch2/catch.hpp>

#include <boost/program_options.hpp>
#include <set>

#include "sim/network/comm_model.hpp"
#include "sim/engine/engine.hpp"
#include "sim/scenario/run.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/network/transfers.hpp"
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

TEST_CASE("BLOOM: the DP reduce-scatter crosses the Omni-Path NICs while pipeline sends use them", "[engine][comm][bloom][heavy]") {
  boost::program_options::variables_map vm;
  boost::program_options::store(
      // Gradients reduced in buckets during the last backward pass (DDP's overlap; BigScience's
      // DeepSpeed reduced them after the flush), so that they meet the pipeline's transfers.
      boost::program_options::command_line_parser(std::vector<std::string>{"--parallel.dp_overlap=true"})
          .options(scenario_options())
          .run(),
      vm);
  Scenario sc = load_scenario(std::string(DTSIM_SOURCE_DIR) + "/scenarios/bloom-176b.ini", vm);
  const ClusterGraph g = make_cluster(sc);
  validate_scenario(sc, g.num_gpus());
  const Program program = build_program(sc.model, sc.plan);
  const ParallelPlan& plan = sc.plan;
  const Router router(g);
  const CommModel comm(g, router, sc.protocol, sc.algorithm);
  auto is_nic_link = [&](int id) {
    return g.link(id).kind == LinkKind::omnipath && (g.device(g.link_source(id)).kind == DeviceKind::nic ||
                                                     g.device(g.link_target(id)).kind == DeviceKind::nic);
  };
  // Omni-Path NIC links (NIC to switch, both ways) the DP group of `rank` crosses with its
  // reduce-scatter of `bytes`, lowered as the engine lowers it.
  auto dp_links = [&](int rank, double bytes) {
    RankCoords c = plan.coords(rank);
    std::vector<int> group;
    for (c.dp = 0; c.dp < plan.dp; ++c.dp) group.push_back(plan.rank_of(c));
    const RingSet rings = comm.rings(group);
    std::vector<HopFlow> hops;
    lower_collective(CommKind::reduce_scatter, bytes, rings, comm.cost(CommKind::reduce_scatter, bytes, rings), hops);
    std::set<int> links;
    for (const HopFlow& h : hops)
      for (int id : router.route(h.src_gpu, h.dst_gpu).links)
        if (is_nic_link(id)) links.insert(id);
    return links;
  };
  // The pipeline transfer an event of `rank` stands for: a send forward or back, a receive from
  // the previous or the next stage.
  auto pp_route = [&](const EventRecord& e) -> const RouteInfo* {
    RankCoords c = plan.coords(e.rank);
    const bool send = e.op == static_cast<int>(OpKind::pp_send), forward = e.phase == 0;
    c.pp += (send == forward) ? 1 : -1;
    if (c.pp < 0 || c.pp >= plan.pp) return nullptr;
    const int peer = plan.rank_of(c);
    return send ? &router.route(e.rank, peer) : &router.route(peer, e.rank);
  };

  MemoryTraceSink sink;
  const EngineResult result =
      Engine(program, g, find_gpu(sc.cluster.gpu), sc.precision, sc.protocol, sc.algorithm, *sc.nccl).run(&sink, TraceDetail::all);
  std::vector<const EventRecord*> dp, pp;
  for (const EventRecord& e : sink.events_) {
    if (plan.coords(e.rank).tp != 0) continue;  // TP rank 0 of each replica: NIC 0 of its node
    if (e.op == static_cast<int>(OpKind::dp_reduce_scatter)) dp.push_back(&e);
    if (e.op == static_cast<int>(OpKind::pp_send) || e.op == static_cast<int>(OpKind::pp_recv)) pp.push_back(&e);
  }
  REQUIRE_FALSE(dp.empty());
  // Each replica's DP group holds GPUs 4k and 4k + 4 of its nodes, both on NIC 0: the
  // reduce-scatter runs hierarchically (NVLink inside, both shards' rings on NIC 0 across). Some
  // take longer than alone on the network: they shared links with other traffic.
  int slowed = 0;
  for (const EventRecord* d : dp) {
    RankCoords c = plan.coords(d->rank);
    std::vector<int> group;
    for (c.dp = 0; c.dp < plan.dp; ++c.dp) group.push_back(plan.rank_of(c));
    const RingSet rings = comm.rings(group);
    const CollectiveCost cost = comm.cost(CommKind::reduce_scatter, d->bytes, rings);
    CHECK(cost.algorithm == Algorithm::hierarchical);
    CHECK(d->end_ns - d->start_ns >= cost.estimate_ns - 2);
    if (d->end_ns - d->start_ns > cost.estimate_ns + 2) ++slowed;
  }
  CHECK(slowed > 0);
  // Reduce-scatters and pipeline transfers of the ranks of one node, running at once, on routes
  // through the same Omni-Path NIC link.
  int shared = 0;
  std::set<int> shared_links;
  for (const EventRecord* d : dp) {
    const std::set<int> links = dp_links(d->rank, d->bytes);
    CHECK_FALSE(links.empty());  // every DP group spans nodes: its flows leave through the NICs
    for (const EventRecord* q : pp) {
      if (g.node_of_gpu(q->rank) != g.node_of_gpu(d->rank) || q->end_ns <= d->start_ns || q->start_ns >= d->end_ns) continue;
      const RouteInfo* route = pp_route(*q);
      if (!route) continue;
      for (int id : route->links)
        if (links.count(id)) {
          ++shared;
          shared_links.insert(id);
        }
    }
  }
  CHECK(shared > 0);
  // The step's link table shows those links carrying traffic.
  for (int id : shared_links) CHECK(result.links.at(id).bytes > 0);
}
