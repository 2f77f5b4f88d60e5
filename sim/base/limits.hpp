// Hard limits on input sizes, checked before any work starts (scenario, parallel plan, cluster
// builders, DOT files), so that every size and time stays far inside 64-bit integer and double
// range and a typo (10^9 GPUs, a 1 bit/s NIC) is refused with a message instead of running for
// hours, exhausting memory or overflowing.
#pragma once
#include <cstdint>

namespace dtsim::limits {

// GPUs of one cluster (nodes x gpus_per_node, tp x pp x dp, GPUs of a DOT file): 2^20.
constexpr std::int64_t kMaxGpus = 1 << 20;
// Devices (vertices) of a DOT file.
constexpr std::int64_t kMaxDevices = 1 << 22;
// Link bandwidths, GB/s per direction (NVLink, DOT links) and Gbit/s (NICs).
constexpr double kMinLinkGBps = 1e-3;  // 1 MB/s
constexpr double kMaxLinkGBps = 1e6;   // 1 PB/s
constexpr double kMinNicGbps = 0.1;    // 100 Mbit/s
constexpr double kMaxNicGbps = 1e7;    // 10 Pbit/s
// Link latency, ns (1 s).
constexpr double kMaxLatencyNs = 1e9;
// Model shape: hidden and MLP sizes (2^24; GPT-1T has 25,600), so that 4 x hidden fits int.
constexpr int kMaxHidden = 1 << 24;
// Model size: parameters of the whole model (100 x GPT-1T).
constexpr double kMaxParams = 1e14;
// Work of one step: model FLOPs (6 x parameters x tokens + attention, with recompute) per GPU.
// 1e20 FLOPs take 10^9 simulated seconds at 1e11 FLOP/s, within int64 nanoseconds.
constexpr double kMaxStepFlopsPerGpu = 1e20;
// Speed and bandwidth factors (cluster.slow_gpus, cluster.degraded_links): a GPU or link at most a
// thousand times slower or faster than nominal, so a transfer never shrinks below the lookahead
// and never stretches past the time range.
constexpr double kMinFactor = 1e-3;
constexpr double kMaxFactor = 1e3;
// Ops of the whole program (every pipeline stage's list; about 100 bytes each), 2 x 10^7: 2 GB.
constexpr double kMaxProgramOps = 2e7;
// Engine threads (dtsim run --threads).
constexpr int kMaxThreads = 1024;

}  // namespace dtsim::limits
