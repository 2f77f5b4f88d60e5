// The engine's shards (internal to sim/engine/engine.cpp): what one task of the window crew
// (crew.hpp) owns, and which shard owns each rank.
//
// Thread safety: a shard is touched only by the thread running it, and by the merge while no
// shard runs.
#pragma once
#include <algorithm>
#include <utility>
#include <vector>

#include "sim/engine/groups.hpp"
#include "sim/engine/rank_heads.hpp"
#include "sim/engine/state.hpp"
#include "sim/engine/units.hpp"

namespace dtsim {

// The ranks and node domains of one crew task: their head times, the current window's tasks,
// and the global network's actions they left.
struct alignas(64) Shard {
  Shard(std::vector<int> its_ranks, std::vector<int> its_domains, int all_domains)
      : ranks(std::move(its_ranks)), domains(std::move(its_domains)), heads(static_cast<int>(ranks.size())),
        domain_heads(static_cast<int>(domains.size())), units(all_domains) {}
  // Its ranks and node domains, ascending. The head tables hold them by index in these lists,
  // so a window scans the shard's own blocks of heads only (with all ranks' tables, the 8
  // shards of a 2-thread 16K step scanned 256 blocks each per window, ~0.25 s in all).
  std::vector<int> ranks;
  std::vector<int> domains;
  RankHeads heads;           // its ranks' earliest pending events (not those of the current window)
  RankHeads domain_heads;    // its node domains' next network events
  WindowUnits units;         // the current window's tasks
  std::vector<int> active;   // its ranks with events in the current window, ascending
  std::vector<int> active_domains;
  // What the merge reads and writes, each on cache lines of its own: the shard's owner and the
  // merge's thread pass them back and forth only when they hold something.
  alignas(64) std::vector<Action> actions;     // for the global network, from the current window
  // The global network's deliveries to its ranks from the last merge, scheduled when the shard
  // next runs (on its own thread: the merge writes no rank's state, and appends here in order).
  alignas(64) std::vector<std::pair<int, LocalEvent>> deliveries;
  // Its ranks' posts of the global network's collectives in the current window, one entry per
  // group once the shard's task is done (gather_posts, groups.hpp).
  alignas(64) std::vector<Posts> posts;

  // Takes the ranks and node domains with a head before `limit` into `active` and
  // `active_domains`, ascending.
  void take_before(TimeNs limit) {
    active.clear();
    heads.take_before(limit, active);
    for (int& r : active) r = ranks[r];
    active_domains.clear();
    domain_heads.take_before(limit, active_domains);
    for (int& d : active_domains) d = domains[d];
  }
};

// Per rank, its shard, shards_per_thread consecutive shards per thread. Threads own node
// domains (domain_of_rank >= 0: all a domain's ranks go together), and ranks outside them, in
// threads x pp contiguous blocks dealt round robin: with the pipeline stage outermost in the
// rank order each thread owns a contiguous share of every stage (the DP replicas reach the same
// point of the step together). Finer blocks cost more than balance gains: at 16K GPUs blocks of
// 8 nodes gave each thread 3.6-5.0 s of work against 2.7-2.8 s with blocks of 64 (2,048 /
// (2 x 16)). A thread's blocks are dealt round robin again to its shards.
inline std::vector<int> shard_of_ranks(const std::vector<int>& domain_of_rank, int domains, int threads, int pp,
                                       int shards_per_thread) {
  const int n = static_cast<int>(domain_of_rank.size());
  const int blocks = threads * pp;
  const int domains_per_block = std::max(1, (domains + blocks - 1) / blocks);
  const int ranks_per_block = std::max(1, (n + blocks - 1) / blocks);
  std::vector<int> shard(n);
  for (int r = 0; r < n; ++r) {
    const int d = domain_of_rank[r];
    const int block = d >= 0 ? d / domains_per_block : r / ranks_per_block;
    shard[r] = block % threads * shards_per_thread + block / threads % shards_per_thread;
  }
  return shard;
}

}  // namespace dtsim
