// The link catalog: per link kind, its rate per direction (where the kind fixes it), its one-hop
// latency and the source of both. The builders size links from it; `dtsim catalog links` prints it.
#pragma once
#include <string_view>
#include <vector>

#include "topologies/cluster_graph.hpp"

namespace dtsim {

struct LinkFact {
  LinkKind kind;
  double bytes_per_s;        // per direction; 0 when the GPU catalog or the scenario sets it
  std::string_view rate;     // the rate in words (where it comes from when bytes_per_s = 0)
  TimeNs latency_ns;         // one hop, including a switch hop for fabric links
  std::string_view source;
};

const std::vector<LinkFact>& link_catalog();
const LinkFact& link_fact(LinkKind kind);
// PCIe x16 bytes/s per direction of generation 3..6.
double pcie_bytes_per_s(int gen);
LinkKind pcie_kind(int gen);

}  // namespace dtsim
