// The engine's lookahead (internal to sim/engine/engine.cpp): the least latency tail of any transfer a
// step can start. A cross-rank effect is a transfer's end, which comes that tail after the
// network event that ends its flows (or its last phase's) or after its start, so nothing a rank
// does at t reaches another rank before t + the lookahead; the engine's merge checks it at every
// delivery. Each group leader's collectives are costed on its rings as the engine costs them
// when it launches them (with every member stage's sizes: the embedding group spans two
// stages), and each rank's pipeline sends on their paths. At 16K GPUs the least is a send's
// (49 µs, against the 30 µs launch base that bounds every tail): 12.6 % fewer windows.
//
// Thread safety: least_tail() of different ranks may run concurrently (it builds only the
// rank's own group entries, groups.hpp).
#pragma once
#include <algorithm>
#include <array>
#include <vector>

#include "sim/network/comm_model.hpp"
#include "sim/engine/groups.hpp"
#include "sim/network/transfers.hpp"
#include "workloads/program.hpp"

namespace dtsim {

class StepTransfers {
 public:
  // The distinct collectives and the send directions of each stage's program.
  explicit StepTransfers(const Program& program) : stages_(program.stages.size()) {
    for (std::size_t s = 0; s < program.stages.size(); ++s) {
      const StageProgram& p = program.stages[s];
      Stage& stage = stages_[s];
      for (int op = 0; op < p.size(); ++op) {
        if (p.comm[op] == CommKind::send) {
          stage.sends[p.group[op] == Group::pp_next ? 1 : 0] = true;
        } else if (p.comm[op] != CommKind::none && p.comm[op] != CommKind::recv) {
          const Collective c{p.group[op], p.comm[op], p.bytes[op]};
          if (std::find(stage.collectives.begin(), stage.collectives.end(), c) == stage.collectives.end())
            stage.collectives.push_back(c);
        }
      }
    }
  }

  // The least tail of the collectives `rank` leads and of its sends (Transfers::kNever: none);
  // send_tail(to_next) gives the tail of its send to the next (or previous) stage.
  template <class SendTail>
  TimeNs least_tail(int rank, const std::vector<int>& stage_of, RankGroups& groups, const CommModel& comm,
                    SendTail&& send_tail) const {
    TimeNs tail = Transfers::kNever;
    for (Group g : kCollectiveGroups) {
      if (!groups.leads(rank, g)) continue;
      std::array<int, 2> member_stages{-1, -1};
      for (int m : groups.members(rank, g))
        if (stage_of[m] != member_stages[0] && stage_of[m] != member_stages[1])
          member_stages[member_stages[0] < 0 ? 0 : 1] = stage_of[m];
      for (int s : member_stages) {
        if (s < 0) continue;
        for (const Collective& c : stages_[s].collectives)
          if (c.group == g) tail = std::min(tail, comm.cost(c.kind, c.bytes, groups.rings(rank, g)).tails().back());
      }
    }
    for (bool to_next : {false, true})
      if (stages_[stage_of[rank]].sends[to_next]) tail = std::min(tail, send_tail(to_next));
    return tail;
  }

 private:
  struct Collective {
    Group group;
    CommKind kind;
    double bytes;
    bool operator==(const Collective&) const = default;
  };
  struct Stage {
    std::vector<Collective> collectives;  // distinct
    std::array<bool, 2> sends{};          // to the previous stage, to the next
  };
  std::vector<Stage> stages_;
};

}  // namespace dtsim
