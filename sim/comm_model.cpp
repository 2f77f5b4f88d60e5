// Ring collectives and sends over routes, limited by the slowest link.
#include "sim/comm_model.hpp"

#include <algorithm>
#include <limits>

namespace dtsim {

double achievable_fraction(LinkKind kind) {
  switch (kind) {
    case LinkKind::nvlink2:
    case LinkKind::nvlink3: return 0.78;   // 8xA100 ring all-reduce 234.9 of 300 GB/s (MLENG)
    case LinkKind::nvlink4: return 0.815;  // 8xH200 ring all-reduce 367.2 of 450 GB/s, NVLS off (MLENG)
    case LinkKind::nvlink5: return 0.76;   // 8xB200 all-reduce 682.2 of 900 GB/s, NVLS off (MLENG)
    case LinkKind::nvlink_bridge: return 0.40;  // 2xH100 PCIe bridge 116 of 300; 2x2080Ti 21 of 50
    case LinkKind::pcie3:
    case LinkKind::pcie4:
    case LinkKind::pcie5:
    case LinkKind::pcie6: return 0.80;     // H200 H2D 55.4 of 63 GB/s (0.88) less NCCL protocol cost
    case LinkKind::upi: return 0.60;       // NCCL falls back to host-memory copies across sockets
    case LinkKind::infiniband:
    case LinkKind::omnipath:
    case LinkKind::ethernet: return 0.90;  // ib_write_bw reaches 96.9 % (MLENG); NCCL keeps ~90 %
  }
  return 1.0;
}

namespace {
PathParams params_of(const ClusterGraph& graph, const RouteInfo& route) {
  PathParams p;
  p.bytes_per_s = std::numeric_limits<double>::infinity();
  for (int id : route.links) {
    const Link& l = graph.link(id);
    p.bytes_per_s = std::min(p.bytes_per_s, l.bytes_per_s * achievable_fraction(l.kind));
  }
  p.alpha_ns = route.latency_ns + CommModel::kStepLatencyNs;
  return p;
}
}  // namespace

PathParams CommModel::path(int src_gpu, int dst_gpu) const {
  return params_of(graph_, router_.route(src_gpu, dst_gpu));
}

PathParams CommModel::ring(std::span<const int> gpus) const {
  PathParams ring{std::numeric_limits<double>::infinity(), 0};
  const int n = static_cast<int>(gpus.size());
  for (int i = 0; i < n && n > 1; ++i) {
    const PathParams hop = path(gpus[i], gpus[(i + 1) % n]);
    ring.bytes_per_s = std::min(ring.bytes_per_s, hop.bytes_per_s);
    ring.alpha_ns = std::max(ring.alpha_ns, hop.alpha_ns);
  }
  return ring;
}

double CommModel::bytes_per_hop(CommKind kind, double bytes, int n) {
  if (n <= 1) return 0;
  switch (kind) {
    case CommKind::all_reduce: return 2.0 * (n - 1) / n * bytes;
    case CommKind::reduce_scatter:
    case CommKind::all_gather: return 1.0 * (n - 1) / n * bytes;
    case CommKind::send:
    case CommKind::recv: return bytes;
    case CommKind::none: return 0;
  }
  return 0;
}

int CommModel::steps(CommKind kind, int n) {
  return kind == CommKind::all_reduce ? 2 * (n - 1) : kind == CommKind::send ? 1 : n - 1;
}

TimeNs CommModel::collective_time(CommKind kind, double bytes, int n, PathParams p) {
  if (n <= 1 && kind != CommKind::send) return 0;
  return seconds_to_ns(bytes_per_hop(kind, bytes, n) / p.bytes_per_s) + steps(kind, n) * p.alpha_ns;
}

}  // namespace dtsim
