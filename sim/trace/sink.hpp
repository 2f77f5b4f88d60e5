// TraceSink: the narrow seam between the engine and trace storage. The engine calls begin(),
// then any number of event()/memory() calls in time order per rank, then the tables, then
// finish(). abort() discards everything (no file is left behind). MemoryTraceSink keeps the
// records in memory for tests; Hdf5TraceSink (hdf5_sink.hpp) writes the HDF5 file.
//
// Thread safety: a sink is used from one thread at a time.
#pragma once
#include <vector>

#include "sim/trace/records.hpp"

namespace dtsim {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void begin(const RunInfo& info) = 0;
  virtual void event(const EventRecord& record) = 0;
  virtual void memory(const MemoryRecord& record) = 0;
  virtual void ranks(const std::vector<RankRecord>& rows) = 0;
  virtual void topology(const std::vector<DeviceRecord>& devices, const std::vector<LinkRecord>& links) = 0;
  virtual void summary(const Summary& summary) = 0;
  virtual void finish() = 0;   // the trace is complete and visible only after this returns
  virtual void abort() = 0;
};

class MemoryTraceSink final : public TraceSink {
 public:
  void begin(const RunInfo& info) override { info_ = info; }
  void event(const EventRecord& r) override { events_.push_back(r); }
  void memory(const MemoryRecord& r) override { memory_.push_back(r); }
  void ranks(const std::vector<RankRecord>& rows) override { ranks_ = rows; }
  void topology(const std::vector<DeviceRecord>& d, const std::vector<LinkRecord>& l) override {
    devices_ = d;
    links_ = l;
  }
  void summary(const Summary& s) override { summary_ = s; }
  void finish() override { finished_ = true; }
  void abort() override { *this = MemoryTraceSink(); }

  RunInfo info_;
  std::vector<EventRecord> events_;
  std::vector<MemoryRecord> memory_;
  std::vector<RankRecord> ranks_;
  std::vector<DeviceRecord> devices_;
  std::vector<LinkRecord> links_;
  Summary summary_;
  bool finished_ = false;
};

}  // namespace dtsim
