// Node network domains: which nodes' in-node transfers run on links nothing else crosses.
#include "sim/engine/domains.hpp"

#include <algorithm>

#include "sim/network/transfers.hpp"

namespace dtsim {

namespace {

bool is_nvlink(LinkKind k) {
  return k == LinkKind::nvlink2 || k == LinkKind::nvlink3 || k == LinkKind::nvlink4 || k == LinkKind::nvlink5 ||
         k == LinkKind::nvlink_bridge;
}

}  // namespace

NodeDomains node_domains(const Program& program, const ClusterGraph& graph, const Router& router, RankGroups& groups) {
  const int n = program.plan.num_ranks(), nodes = graph.num_nodes();
  // The groups the step uses, and whether each holds all-to-alls (routes between every pair).
  std::array<bool, kNumCollectiveGroups> used{}, all_pairs{};
  std::array<std::vector<CommKind>, kNumCollectiveGroups> kinds;
  bool sends = false;
  for (const StageProgram& p : program.stages)
    for (int op = 0; op < p.size(); ++op) {
      if (p.comm[op] == CommKind::none || p.comm[op] == CommKind::recv) continue;
      if (p.comm[op] == CommKind::send) {
        sends = true;
        continue;
      }
      const int g = collective_group_index(p.group[op]);
      used[g] = true;
      if (is_all_to_all(p.comm[op])) all_pairs[g] = true;
      if (std::find(kinds[g].begin(), kinds[g].end(), p.comm[op]) == kinds[g].end()) kinds[g].push_back(p.comm[op]);
    }
  // TP collectives all on one stream run one at a time per group.
  bool tp_serial = true;
  for (const StageProgram& p : program.stages)
    for (int op = 0; op < p.size(); ++op)
      if (p.group[op] == Group::tp && p.stream[op] != Stream::tp) tp_serial = false;
  std::vector<char> ok(nodes, 1), lone(nodes, tp_serial ? 1 : 0);
  std::vector<std::vector<int>> node_links(nodes);
  std::vector<int> claimed_by(graph.num_links(), -1);  // the TP group leader whose ring claimed the link
  // The route's links join the node's when they are NVLink inside the node; else the node fails.
  // `tp_leader`: the TP group whose ring hop this is, -1 for other transfers (the node is then
  // not lone, nor when two groups' rings share a link).
  auto claim = [&](int node, int src, int dst, int tp_leader) {
    if (!ok[node]) return;
    if (tp_leader < 0) lone[node] = 0;
    for (int l : router.route(src, dst).links) {
      if (!is_nvlink(graph.link(l).kind) || graph.device(graph.link_source(l)).node != node ||
          graph.device(graph.link_target(l)).node != node) {
        ok[node] = 0;
        return;
      }
      if (claimed_by[l] >= 0 && claimed_by[l] != tp_leader) lone[node] = 0;
      claimed_by[l] = tp_leader;
      node_links[node].push_back(l);
    }
  };
  NodeDomains out;
  const auto& group_at = kCollectiveGroups;
  for (int g = 0; g < kNumCollectiveGroups; ++g) {
    out.group_in_node[g].assign(n, 0);
    if (!used[g]) continue;
    for (int r = 0; r < n; ++r) {
      const std::vector<int>& m = groups.members(r, group_at[g]);
      const int node = graph.node_of_gpu(r);
      const auto here = std::count_if(m.begin(), m.end(), [&](int x) { return graph.node_of_gpu(x) == node; });
      if (here == static_cast<long>(m.size())) {
        out.group_in_node[g][r] = 1;
        if (r != m.front() || m.size() < 2) continue;  // routes checked once per group, from its leader
        const int k = static_cast<int>(m.size());
        const bool tp_ring = group_at[g] == Group::tp && !all_pairs[g] && groups.rings(r, Group::tp).rings.size() == 1;
        if (all_pairs[g]) {
          for (int a : m)
            for (int b : m)
              if (a != b) claim(node, a, b, -1);
        } else {
          for (int i = 0; i < k; ++i) claim(node, m[i], m[(i + 1) % k], tp_ring ? r : -1);
        }
      } else if (here >= 2) {
        ok[node] = 0;  // a group spanning nodes with an in-node phase here
      }
    }
  }
  if (sends && program.plan.pp > 1)
    for (int r = 0; r < n; ++r)
      for (Group dir : {Group::pp_next, Group::pp_prev}) {
        const int dst = groups.peer(r, dir);
        if (graph.node_of_gpu(dst) == graph.node_of_gpu(r)) claim(graph.node_of_gpu(r), r, dst, -1);
      }
  // Routes of transfers between nodes must not cross a claimed link: the hops of each group
  // spanning nodes under every algorithm it may run, and the sends between nodes.
  std::vector<int> claimant(graph.num_links(), -1);
  for (int node = 0; node < nodes; ++node)
    if (ok[node])
      for (int l : node_links[node]) claimant[l] = node;
  auto check = [&](const RouteInfo& route) {
    for (int l : route.links)
      if (claimant[l] >= 0) ok[claimant[l]] = 0;
  };
  std::vector<HopFlow> hops;
  for (int g = 0; g < kNumCollectiveGroups; ++g) {
    if (!used[g]) continue;
    for (int r = 0; r < n; ++r) {
      const std::vector<int>& m = groups.members(r, group_at[g]);
      if (out.group_in_node[g][r] || r != m.front()) continue;
      const RingSet& set = groups.rings(r, group_at[g]);
      for (CommKind kind : kinds[g])
        for (Algorithm a : {Algorithm::ring, Algorithm::tree}) {
          if (a == Algorithm::tree && !CommModel::tree_applies(kind, set)) continue;
          CollectiveCost cost;
          cost.algorithm = a;
          lower_collective(kind, static_cast<double>(m.size()), set, cost, hops);
          for (const HopFlow& h : hops)
            if (h.src_gpu != h.dst_gpu) check(h.route ? *h.route : router.route(h.src_gpu, h.dst_gpu));
        }
    }
  }
  if (sends && program.plan.pp > 1)
    for (int r = 0; r < n; ++r)
      for (Group dir : {Group::pp_next, Group::pp_prev}) {
        const int dst = groups.peer(r, dir);
        if (graph.node_of_gpu(dst) != graph.node_of_gpu(r)) check(router.route(r, dst));
      }
  std::vector<int> domain_of_node(nodes, -1);
  out.domain_of_link.assign(graph.num_links(), -1);
  for (int node = 0; node < nodes; ++node) {
    if (!ok[node] || node_links[node].empty()) continue;
    domain_of_node[node] = static_cast<int>(out.links.size());
    out.lone.push_back(lone[node]);
    for (int l : node_links[node]) out.domain_of_link[l] = domain_of_node[node];
    out.links.push_back(std::move(node_links[node]));
  }
  out.domain_of_rank.assign(n, -1);
  for (int r = 0; r < n; ++r) out.domain_of_rank[r] = domain_of_node[graph.node_of_gpu(r)];
  return out;
}

}  // namespace dtsim
