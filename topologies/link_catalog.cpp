// The link catalog (see link_catalog.hpp). Rates from shared/validation/gpus.csv link rows;
// latencies are typical one-hop figures, not measured here. NVLink is set below PCIe so that,
// among equal-hop routes, GPU-GPU traffic inside a node prefers NVLink over a detour through a
// shared NIC's PCIe links.
#include "topologies/link_catalog.hpp"

namespace dtsim {

const std::vector<LinkFact>& link_catalog() {
  static const std::vector<LinkFact> facts = {
      {LinkKind::nvlink2, 0, "the GPU's NVLink GB/s (V100: 150)", 300, "gpus.csv GPU rows, nvlink_GBps_per_dir"},
      {LinkKind::nvlink3, 0, "the GPU's NVLink GB/s (A100: 300)", 300, "gpus.csv GPU rows, nvlink_GBps_per_dir"},
      {LinkKind::nvlink4, 0, "the GPU's NVLink GB/s (H100/H200: 450)", 300, "gpus.csv GPU rows, nvlink_GBps_per_dir"},
      {LinkKind::nvlink5, 0, "the GPU's NVLink GB/s (B200: 900)", 300, "gpus.csv GPU rows, nvlink_GBps_per_dir"},
      {LinkKind::nvlink_bridge, 0, "the GPU's bridge GB/s (RTX 3090: 56.25)", 300,
       "gpus.csv rows 'RTX 3090 NVLink bridge', A100/H100 PCIe bridge"},
      {LinkKind::pcie3, 15.75e9, "PCIe Gen3 x16", 500, "gpus.csv link row 'PCIe Gen3 x16'"},
      {LinkKind::pcie4, 31.5e9, "PCIe Gen4 x16", 500, "gpus.csv link row 'PCIe Gen4 x16'"},
      {LinkKind::pcie5, 63e9, "PCIe Gen5 x16", 500, "gpus.csv link row 'PCIe Gen5 x16'"},
      {LinkKind::pcie6, 121e9, "PCIe Gen6 x16", 500, "gpus.csv link row 'PCIe Gen6 x16'"},
      {LinkKind::upi, 41.6e9, "2 UPI links x 20.8 GB/s (10.4 GT/s)", 300, "Intel Skylake/Cascade Lake UPI"},
      {LinkKind::infiniband, 0, "cluster.nic_gbps / 8 per NIC", 600, "scenario cluster.nic_gbps (HDR 200, NDR 400)"},
      {LinkKind::omnipath, 0, "cluster.nic_gbps / 8 per NIC", 600, "scenario cluster.nic_gbps (Omni-Path 100)"},
      {LinkKind::ethernet, 0, "cluster.nic_gbps / 8 per NIC", 1000, "scenario cluster.nic_gbps (RoCE)"},
  };
  return facts;
}

const LinkFact& link_fact(LinkKind kind) {
  for (const LinkFact& f : link_catalog())
    if (f.kind == kind) return f;
  return link_catalog().front();
}

LinkKind pcie_kind(int gen) {
  constexpr LinkKind kinds[] = {LinkKind::pcie3, LinkKind::pcie4, LinkKind::pcie5, LinkKind::pcie6};
  return kinds[gen - 3];
}

double pcie_bytes_per_s(int gen) { return link_fact(pcie_kind(gen)).bytes_per_s; }

}  // namespace dtsim
