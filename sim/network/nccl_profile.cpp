// The NCCL version profiles (see nccl_profile.hpp), each figure with the NCCL source file of the
// tagged release it comes from (github.com/NVIDIA/nccl, tag v2.X.Y-1) or the measured sweep it
// was fitted on.
#include "sim/network/nccl_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "sim/base/error.hpp"

namespace dtsim {

namespace {

// The oldest release a profile describes, and the newest release known (tag v2.30.7-1).
constexpr int kOldestMinor = 8, kNewestMinor = 30;

// 2021-era constants: fitted on the 8 x A100 all-reduce sweep from 1 MiB up.
constexpr std::array<TimeNs, 3> kLegacyBase = {30000, 50000, 30000};
constexpr std::array<std::array<TimeNs, 3>, 4> kLegacyHop = {
    {{3400, 2400, 3400}, {4000, 3500, 5500}, {4000, 3500, 5500}, {5000, 8000, 14000}}};
constexpr const char* kLegacyLatency =
    "fitted on the 8 x A100 NVSwitch all-reduce sweep of 2021-era NCCL (shared/validation/collectives.csv "
    "c0006-c0020, 1 MiB to 16 GiB); below 1 MiB it is slow (86 us at 32 KiB against the measured 44)";
// From 2.18: LL's launch base fitted on the 32 KiB floors of three sweeps (8 x A100 NCCL 2.18.5
// 41.9 us and 8 x H200 2.20.5 31.2 us, tests/validation/nccl_sweeps.csv; 8 x H200 2.27.7 40 us,
// collectives.csv c0021): their mean 37.7 us less 14 steps of NCCL's LL hop and the route's
// 0.6 us; LL's per-step latencies are NCCL's own; LL128 and Simple as 2021's (the recent sweeps
// follow them from 4 MiB up).
constexpr std::array<TimeNs, 3> kRecentBase = {20000, 50000, 30000};
constexpr std::array<std::array<TimeNs, 3>, 4> kRecentHop = {
    {{600, 2400, 3400}, {1000, 3500, 5500}, {1000, 3500, 5500}, {2700, 8000, 14000}}};
constexpr const char* kRecentLatency =
    "LL: launch 20 us, the mean 32 KiB floor of 8 x A100 NCCL 2.18.5, 8 x H200 2.20.5 (tests/validation/"
    "nccl_sweeps.csv) and 8 x H200 2.27.7 (collectives.csv c0021), 37.7 us, less 14 steps of 1.2 us; per-step LL "
    "latency NCCL's (src/graph/tuning.cc v2.18.3 hwLat Ring LL: NVLink 0.6, PCI 1.0, NET 2.7 us); LL128 and Simple "
    "as 2.8's (the recent sweeps follow them from 4 MiB up)";

std::vector<NcclProfile> make_profiles() {
  std::vector<NcclProfile> p;
  p.push_back({"2.8", "2.8 - 2.16", "2021-2023", kLegacyBase, kLegacyHop, kLegacyLatency, false, false, false, 0, 0, 0, 0, 0,
               "no NVLS algorithm before 2.17 (src/include/devcomm.h v2.16.5: NCCL_NUM_ALGORITHMS 4, Tree, Ring, "
               "CollNet Direct and Chain)"});
  p.push_back({"2.17", "2.17", "2023", kLegacyBase, kLegacyHop, "as 2.8 (no sweep of 2.17 measured)", true, false, false, 8,
               40000, 16, 16, 16,
               "NVLS introduced (src/include/devcomm.h v2.17.1 NCCL_ALGO_NVLS), inside one node only "
               "(src/transport/nvls.cc v2.17.1), NCCL_NVLS_NCHANNELS 16, NCCL_MAX_NVLS_ARITY 8, latency 40 us "
               "(src/graph/tuning.cc v2.17.1 baseLat NVLS Simple)"});
  p.push_back({"2.18", "2.18 - 2.20", "2023-2024", kRecentBase, kRecentHop, kRecentLatency, true, false, true, 8, 23000, 16,
               16, 16,
               "NVLS tree across nodes (src/include/devcomm.h v2.18.1 NCCL_ALGO_NVLS_TREE); latency 23 us "
               "(src/graph/tuning.cc v2.18.3 baseLat, v2.19.3 hwLat NVLink NVLS Simple), 16 channels, "
               "NCCL_MAX_NVLS_ARITY 8; not across the hosts of an NVLink domain (src/transport/nvls.cc v2.20.3: off "
               "with MNNVL)"});
  p.push_back({"2.21", "2.21 - 2.24", "2024", kRecentBase, kRecentHop, "as 2.18", true, true, true, 32, 25000, 16, 16, 16,
               "NCCL_MAX_NVLS_ARITY 32 (src/include/device.h v2.21.5), NVLS across the hosts of an NVLink domain "
               "(src/transport/nvls.cc v2.21.5: the MNNVL clique), latency 25 us (src/graph/tuning.cc v2.21.5 hwLat "
               "NVLink NVLS Simple), 16 channels"});
  p.push_back({"2.25", "2.25 - 2.26", "2025", kRecentBase, kRecentHop, "as 2.18", true, true, true, 32, 25000, 16, 32, 32,
               "Blackwell: 32 NVLS channels (src/transport/nvls.cc v2.25.1 NVLS_NCHANNELS_SM100), Hopper 16"});
  p.push_back({"2.27", "2.27 - 2.30", "2025-2026", kRecentBase, kRecentHop, "as 2.18", true, true, true, 32, 25000, 16, 24,
               32,
               "Blackwell: 24 NVLS channels inside one NVLink domain, 32 when the communicator spans domains "
               "(src/transport/nvls.cc v2.27.7 NVLS_NCHANNELS_SM100_NVL; the same in v2.30.7)"});
  return p;
}

// "2.X", "2.X.Y" or "2.X.Y-Z": X, or -1 when the text is no such version.
int minor_of(std::string_view text) {
  if (text.substr(0, 2) != "2.") return -1;
  text.remove_prefix(2);
  int minor = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), minor);
  if (ec != std::errc()) return -1;
  std::string_view rest(end, text.data() + text.size() - end);
  int part = 0;
  for (char sep : {'.', '-'}) {
    if (rest.empty()) break;
    if (rest.front() != sep) continue;
    rest.remove_prefix(1);
    const auto [e, code] = std::from_chars(rest.data(), rest.data() + rest.size(), part);
    if (code != std::errc()) return -1;
    rest.remove_prefix(static_cast<std::size_t>(e - rest.data()));
  }
  return rest.empty() ? minor : -1;
}

}  // namespace

TimeNs NcclProfile::least_base_ns() const { return *std::min_element(base_ns.begin(), base_ns.end()); }

const std::vector<NcclProfile>& nccl_profiles() {
  static const std::vector<NcclProfile> profiles = make_profiles();
  return profiles;
}

const NcclProfile& legacy_nccl_profile() { return nccl_profiles().front(); }

const NcclProfile& find_nccl_profile(std::string_view version, std::string_view key) {
  const int minor = minor_of(version);
  if (minor < kOldestMinor || minor > kNewestMinor)
    throw InputError(fmt::format("{} = '{}': give an NCCL release from 2.{} to 2.{} (e.g. 2.18 or 2.27.7); "
                                 "the profiles: 'dtsim catalog nccl'",
                                 key, version, kOldestMinor, kNewestMinor));
  const NcclProfile* found = &nccl_profiles().front();
  for (const NcclProfile& p : nccl_profiles())
    if (minor_of(p.version) <= minor) found = &p;
  return *found;
}

std::string format_nccl_profiles() {
  std::string out;
  for (const NcclProfile& p : nccl_profiles()) {
    out += fmt::format("{} (NCCL {}, {})\n", p.version, p.releases, p.era);
    out += fmt::format("  latency   LL {} us + {} us/step on NVLink; LL128 {} + {}; Simple {} + {}: {}\n",
                       p.base_ns[0] / 1000.0, p.hop_ns[0][0] / 1000.0, p.base_ns[1] / 1000.0, p.hop_ns[0][1] / 1000.0,
                       p.base_ns[2] / 1000.0, p.hop_ns[0][2] / 1000.0, p.latency_source);
    if (!p.nvls)
      out += fmt::format("  NVLS      none: {}\n", p.nvls_source);
    else
      out += fmt::format("  NVLS      {}{}, up to {} heads, {} us, channels Hopper {} Blackwell {} (spanning domains "
                         "{}): {}\n",
                         p.nvls_across_hosts ? "inside NVLink domains, across hosts too" : "inside one host's NVLink",
                         p.nvls_tree ? "; NVLS trees across domains" : "",
                         p.nvls_arity, p.nvls_latency_ns / 1000.0, p.nvls_channels_hopper, p.nvls_channels_blackwell,
                         p.nvls_channels_blackwell_spanning, p.nvls_source);
  }
  return out;
}

}  // namespace dtsim
