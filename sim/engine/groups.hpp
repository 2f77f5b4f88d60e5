// The engine's groups of ranks (internal to sim/engine/engine.cpp and domains.cpp): which ranks form
// each TP, DP, embedding, EP, expert-DP, CP and DualPipe mirror group, in ring order, their rings, their pending
// rendezvous and the posts that fill them, and each rank's pipeline neighbours. Everything is kept per group leader (its
// first rank) and built on first use; each rank's leader is found at construction.
//
// Thread safety: entries of different leaders may be built concurrently; one leader's entries
// by one thread at a time.
#pragma once
#include <algorithm>
#include <array>
#include <vector>

#include "sim/network/comm_model.hpp"
#include "sim/engine/state.hpp"
#include "workloads/parallel_plan.hpp"

namespace dtsim {

// The collective groups by index: TP, DP, embedding, EP, expert DP, CP, DualPipe's mirror pair.
constexpr int kNumCollectiveGroups = 7;
constexpr std::array<Group, kNumCollectiveGroups> kCollectiveGroups = {
    Group::tp, Group::dp, Group::embedding, Group::ep, Group::expert_dp, Group::cp, Group::pp_mirror};
inline int collective_group_index(Group g) {
  return static_cast<int>(std::find(kCollectiveGroups.begin(), kCollectiveGroups.end(), g) - kCollectiveGroups.begin());
}

// A pending collective of one group: members that posted it and the latest post in (time,
// rank, sequence) order, at which the collective starts.
struct Rendezvous {
  int arrived = 0;
  Action last{-1, -1, 0, -1};
};

// Posts of a collective by `count` members of the group led by `leader`, the latest `last`.
struct Posts {
  Group group;
  int leader;
  int count;
  Action last;
};

// Posts gathered one entry per group: sorted by group, the counts summed and the latest kept (a
// shard's posts of a window, so that where a group's members run on both threads each thread
// counts its own: counted under a lock in the window's tasks, the rendezvous' lines crossed
// cores at nearly every post, 2.1 M posts in the 16K step).
inline void gather_posts(std::vector<Posts>& posts) {
  if (posts.size() < 2) return;
  std::sort(posts.begin(), posts.end(), [](const Posts& a, const Posts& b) {
    return a.group != b.group ? a.group < b.group : a.leader < b.leader;
  });
  std::size_t out = 0;
  for (std::size_t i = 1; i < posts.size(); ++i) {
    Posts& kept = posts[out];
    if (posts[i].group == kept.group && posts[i].leader == kept.leader) {
      kept.count += posts[i].count;
      if (action_before(kept.last, posts[i].last)) kept.last = posts[i].last;
    } else {
      posts[++out] = posts[i];
    }
  }
  posts.resize(out + 1);
}

class RankGroups {
 public:
  RankGroups(const ParallelPlan& plan, const CommModel& comm) : plan_(plan), comm_(comm) {
    for (int i = 0; i < kNumCollectiveGroups; ++i) {
      PerGroup& g = groups_[i];
      g.rendezvous.resize(plan.num_ranks());
      g.rings.resize(plan.num_ranks());
      g.members.resize(plan.num_ranks());
      g.leader.resize(plan.num_ranks());
      for (int r = 0; r < plan.num_ranks(); ++r) {
        RankCoords c = plan.coords(r);
        g.leader[r] = plan.rank_of(first_of_group(c, kCollectiveGroups[i]));
      }
    }
    for (int r = 0; r < plan.num_ranks(); ++r)
      for (int step : {plan.pp - 1, 1}) {
        RankCoords c = plan.coords(r);
        c.pp = (c.pp + step) % plan.pp;
        peers_.push_back(plan.rank_of(c));
      }
  }

  // Ranks of this rank's group in ring order (rank order); the first is the group's leader. The
  // embedding group joins the first and last pipeline stages (tied embeddings), the mirror pair
  // stages s and pp - 1 - s (DualPipe); the EP and expert-DP groups are expert_group's (the
  // block of ep consecutive DP ranks holding this rank, and the DP ranks at its position in every
  // block, or their folded layout); DP and expert-DP groups take in every CP rank.
  const std::vector<int>& members(int rank, Group g) {
    PerGroup& per = of(g);
    std::vector<int>& out = per.members[per.leader[rank]];
    if (out.empty()) {
      const RankCoords first = first_of_group(plan_.coords(rank), g);
      if (g == Group::embedding || g == Group::pp_mirror) {
        RankCoords last = first;
        last.pp = plan_.pp - 1 - first.pp;
        out = {plan_.rank_of(first), plan_.rank_of(last)};
        return out;
      }
      if (g == Group::ep || g == Group::expert_dp) {
        for (const RankCoords& m : expert_group(plan_, first, g == Group::expert_dp)) out.push_back(plan_.rank_of(m));
        if (plan_.expert_folding() || (g == Group::expert_dp && plan_.cp > 1 && plan_.expert_dp() > 1))
          std::sort(out.begin(), out.end());
        return out;
      }
      const int tps = g == Group::tp ? plan_.tp : 1;
      const int cps = g == Group::cp || g == Group::dp ? plan_.cp : 1;
      const int dps = g == Group::dp ? plan_.dp : 1;
      for (int d = 0; d < dps; ++d)
        for (int c = 0; c < cps; ++c)
          for (int t = 0; t < tps; ++t) {
            RankCoords m = first;
            m.tp += t, m.cp += c, m.dp += d;
            out.push_back(plan_.rank_of(m));
          }
      if (cps > 1 && dps > 1) std::sort(out.begin(), out.end());
    }
    return out;
  }

  // How many ranks a group of kind g holds (the embedding group: the first and the last stage).
  int size(Group g) const {
    switch (g) {
      case Group::tp: return plan_.tp;
      case Group::cp: return plan_.cp;
      case Group::ep: return plan_.ep;
      case Group::expert_dp: return plan_.expert_grad_ranks();
      case Group::embedding:
      case Group::pp_mirror: return 2;
      default: return plan_.grad_ranks();
    }
  }

  // Action a, a post of a collective of group g, as posts.
  Posts post(Group g, const Action& a) const { return Posts{g, leader(a.rank, g), 1, a}; }

  // Adds posts to their group's rendezvous. When that completes it (`members` posts), `last` is
  // the latest post in (time, rank, sequence) order, where the collective starts.
  bool arrive(const Posts& posts, int members, Action& last) {
    Rendezvous& rv = rendezvous(posts.leader, posts.group);
    rv.arrived += posts.count;
    if (rv.last.rank < 0 || action_before(rv.last, posts.last)) rv.last = posts.last;
    if (rv.arrived < members) return false;
    last = rv.last;
    rv = Rendezvous{};
    return true;
  }

  // Whether `rank` is the first of its group, without building the group.
  bool leads(int rank, Group g) const { return leader(rank, g) == rank; }

  // The rings of rank's group.
  const RingSet& rings(int rank, Group g) {
    const std::vector<int>& group = members(rank, g);
    RingSet& rings = of(g).rings[group.front()];
    if (rings.rings.empty()) rings = comm_.rings(group);
    return rings;
  }

  // The first rank of rank's group (looked up; every rank's is found at construction).
  int leader(int rank, Group g) const { return groups_[collective_group_index(g)].leader[rank]; }

  // The neighbouring stage; with interleaving the last stage feeds the first (next chunk).
  int peer(int rank, Group g) const { return peers_[2 * static_cast<std::size_t>(rank) + (g == Group::pp_next ? 1 : 0)]; }

 private:
  Rendezvous& rendezvous(int leader, Group g) { return of(g).rendezvous[leader]; }
  struct PerGroup {
    std::vector<Rendezvous> rendezvous;  // indexed by group leader rank
    std::vector<RingSet> rings;
    std::vector<std::vector<int>> members;
    std::vector<int> leader;  // per rank
  };
  // The coordinates of the first rank of the group holding a rank at `c`.
  RankCoords first_of_group(RankCoords c, Group g) const {
    switch (g) {
      case Group::tp: c.tp = 0; break;
      case Group::cp: c.cp = 0; break;
      case Group::embedding: c.pp = 0; break;
      case Group::pp_mirror: c.pp = std::min(c.pp, plan_.pp - 1 - c.pp); break;
      case Group::ep:
      case Group::expert_dp: return expert_group_first(plan_, c, g == Group::expert_dp);
      default: c.dp = 0, c.cp = 0; break;
    }
    return c;
  }
  PerGroup& of(Group g) { return groups_[collective_group_index(g)]; }

  const ParallelPlan& plan_;
  const CommModel& comm_;
  PerGroup groups_[kNumCollectiveGroups];
  std::vector<int> peers_;  // per rank: its previous stage's rank, its next stage's
};

}  // namespace dtsim
