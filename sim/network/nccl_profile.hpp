// NCCL version profiles: what changed between NCCL releases that the communication model sees —
// the protocols' latencies (how small messages fare), whether NVLS (NVLink SHARP) exists and
// where, its heads, latency and channels. A profile covers the releases from its version to the
// next profile's; `cluster.nccl_version` (or the framework profile's era) names a release and
// `dtsim collective --nccl` overrides it. Each figure's source is in nccl_profile.cpp and in
// `dtsim catalog nccl`.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "sim/base/units.hpp"

namespace dtsim {

struct NcclProfile {
  const char* version;   // the first release it describes, e.g. "2.18"
  const char* releases;  // the releases it describes, e.g. "2.18 - 2.20"
  const char* era;       // when they came out
  // Launch and setup of a collective kernel per protocol (LL, LL128, Simple), and the per-step
  // hop latency beyond the route's per hop class (NVLink, PCIe, host-staged, network) and
  // protocol (CommModel).
  std::array<TimeNs, 3> base_ns;
  std::array<std::array<TimeNs, 3>, 4> hop_ns;
  const char* latency_source;
  // NVLS (sim/network/nvls.hpp): inside one NVLink domain of one host (an HGX node); across the
  // hosts of one NVLink domain (an NVL72 rack: NCCL's multi-node NVLink, MNNVL).
  bool nvls = false;
  bool nvls_across_hosts = false;
  bool nvls_tree = false;       // NVLS inside each domain and trees across them (multi-node all-reduce)
  int nvls_arity = 0;           // NCCL_MAX_NVLS_ARITY: the most heads (and reduce-scatter/all-gather GPUs)
  TimeNs nvls_latency_ns = 0;   // NCCL's NVLS latency, on top of the Simple launch base
  int nvls_channels_hopper = 0, nvls_channels_blackwell = 0, nvls_channels_blackwell_spanning = 0;
  const char* nvls_source;

  TimeNs least_base_ns() const;
};

// Every profile, oldest first.
const std::vector<NcclProfile>& nccl_profiles();
// The profile of the 2021-era constants (NCCL 2.8 to 2.16), the default of code that names none.
const NcclProfile& legacy_nccl_profile();
// The profile of release `version` ("2.18", "2.18.5" or "2.18.5-1"): the newest profile whose
// version is not after it. Throws InputError naming `key`, the value and the valid range.
const NcclProfile& find_nccl_profile(std::string_view version, std::string_view key);
// The rows of `dtsim catalog nccl`.
std::string format_nccl_profiles();

}  // namespace dtsim
