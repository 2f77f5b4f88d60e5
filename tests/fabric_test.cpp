// Fabrics: a rail-optimized cluster keeps same-rail traffic on its rail switch and sends the rest
// over the spine; named NICs set the link kind and rate.
#include <catch2/catch.hpp>

#include <string>

#include "sim/base/error.hpp"
#include "topologies/builders.hpp"
#include "topologies/routing.hpp"

using namespace dtsim;

namespace {

std::string path_of(const ClusterGraph& g, const RouteInfo& r) {
  std::string out = g.device(g.link_source(r.links.front())).name;
  for (int id : r.links) out += " > " + g.device(g.link_target(id)).name;
  return out;
}

}  // namespace

TEST_CASE("a rail-optimized fabric puts NIC k of every node on rail k", "[topology]") {
  ClusterConfig c;
  c.nodes = 4;
  c.nics_per_node = 8;
  c.nic_gbps = 200;
  c.fabric = Fabric::rail;
  c.oversubscription = 2;
  const ClusterGraph g = build_cluster(c);
  const Router router(g);
  // GPU 3 of node 0 to GPU 3 of node 2: one rail switch between the NICs.
  CHECK(path_of(g, router.route(3, 2 * 8 + 3)) == "node0.gpu3 > node0.nic3 > rail3 > node2.nic3 > node2.gpu3");
  // The rail's spine uplink carries the nodes' NIC rate over the oversubscription.
  bool found = false;
  for (int id = 0; id < g.num_links(); ++id)
    if (g.device(g.link_source(id)).name == "rail3" && g.device(g.link_target(id)).name == "spine0") {
      CHECK(g.link(id).bytes_per_s == Approx(4 * 200e9 / 8 / 2));
      found = true;
    }
  CHECK(found);
  CHECK(parse_fabric("rail", "cluster.fabric") == Fabric::rail);
  CHECK_THROWS_AS(parse_fabric("dragonfly", "cluster.fabric"), InputError);
}

TEST_CASE("named NICs give the InfiniBand, Omni-Path and RoCE generations", "[topology]") {
  CHECK(parse_nic_preset("hdr", "cluster.nic").gbps == 200);
  CHECK(parse_nic_preset("ndr", "cluster.nic").kind == LinkKind::infiniband);
  CHECK(parse_nic_preset("xdr", "cluster.nic").gbps == 800);
  CHECK(parse_nic_preset("opa100", "cluster.nic").kind == LinkKind::omnipath);
  CHECK(parse_nic_preset("roce400", "cluster.nic").kind == LinkKind::ethernet);
  CHECK(parse_nic_preset("roce400", "cluster.nic").gbps == 400);
  CHECK_THROWS_WITH(parse_nic_preset("fddi", "cluster.nic"), Catch::Contains("edr, hdr, ndr, xdr"));
}
