// Hdf5TraceSink and the trace's row types (see hdf5_sink.hpp).
#include "sim/trace/hdf5_sink.hpp"

#include <fmt/format.h>

#include <cassert>
#include <cstddef>

#include "workloads/program.hpp"

namespace dtsim {

namespace trace_h5 {

namespace {

Handle compound(std::size_t size) { return Handle(H5Tcreate(H5T_COMPOUND, size), H5Tclose); }

}  // namespace

#define DTSIM_FIELD(Row, field, h5type) H5Tinsert(type.get(), #field, offsetof(Row, field), h5type)

Handle event_type() {
  Handle type = compound(sizeof(EventRecord));
  DTSIM_FIELD(EventRecord, rank, H5T_NATIVE_INT32);
  DTSIM_FIELD(EventRecord, stream, H5T_NATIVE_INT8);
  DTSIM_FIELD(EventRecord, category, H5T_NATIVE_INT8);
  DTSIM_FIELD(EventRecord, phase, H5T_NATIVE_INT8);
  DTSIM_FIELD(EventRecord, op, H5T_NATIVE_INT16);
  DTSIM_FIELD(EventRecord, layer, H5T_NATIVE_INT32);
  DTSIM_FIELD(EventRecord, micro_batch, H5T_NATIVE_INT32);
  DTSIM_FIELD(EventRecord, start_ns, H5T_NATIVE_INT64);
  DTSIM_FIELD(EventRecord, end_ns, H5T_NATIVE_INT64);
  DTSIM_FIELD(EventRecord, flops, H5T_NATIVE_DOUBLE);
  DTSIM_FIELD(EventRecord, bytes, H5T_NATIVE_DOUBLE);
  return type;
}

Handle memory_type() {
  Handle type = compound(sizeof(MemoryRecord));
  DTSIM_FIELD(MemoryRecord, rank, H5T_NATIVE_INT32);
  DTSIM_FIELD(MemoryRecord, time_ns, H5T_NATIVE_INT64);
  DTSIM_FIELD(MemoryRecord, weights, H5T_NATIVE_DOUBLE);
  DTSIM_FIELD(MemoryRecord, gradients, H5T_NATIVE_DOUBLE);
  DTSIM_FIELD(MemoryRecord, optimizer, H5T_NATIVE_DOUBLE);
  DTSIM_FIELD(MemoryRecord, activations, H5T_NATIVE_DOUBLE);
  DTSIM_FIELD(MemoryRecord, buffers, H5T_NATIVE_DOUBLE);
  return type;
}

Handle rank_type() {
  Handle type = compound(sizeof(RankRecord));
  DTSIM_FIELD(RankRecord, rank, H5T_NATIVE_INT32);
  DTSIM_FIELD(RankRecord, node, H5T_NATIVE_INT32);
  DTSIM_FIELD(RankRecord, dp, H5T_NATIVE_INT32);
  DTSIM_FIELD(RankRecord, tp, H5T_NATIVE_INT32);
  DTSIM_FIELD(RankRecord, pp, H5T_NATIVE_INT32);
  DTSIM_FIELD(RankRecord, ep, H5T_NATIVE_INT32);
  DTSIM_FIELD(RankRecord, cp, H5T_NATIVE_INT32);
  DTSIM_FIELD(RankRecord, peak_memory_bytes, H5T_NATIVE_DOUBLE);
  DTSIM_FIELD(RankRecord, compute_s, H5T_NATIVE_DOUBLE);
  DTSIM_FIELD(RankRecord, memory_bound_s, H5T_NATIVE_DOUBLE);
  DTSIM_FIELD(RankRecord, exposed_comm_s, H5T_NATIVE_DOUBLE);
  DTSIM_FIELD(RankRecord, bubble_s, H5T_NATIVE_DOUBLE);
  DTSIM_FIELD(RankRecord, idle_s, H5T_NATIVE_DOUBLE);
  return type;
}

Handle device_type() {
  Handle str = string_type();
  Handle type = compound(sizeof(DeviceRow));
  DTSIM_FIELD(DeviceRow, name, str.get());
  DTSIM_FIELD(DeviceRow, kind, str.get());
  DTSIM_FIELD(DeviceRow, node, H5T_NATIVE_INT32);
  DTSIM_FIELD(DeviceRow, gpu_index, H5T_NATIVE_INT32);
  return type;
}

Handle link_type() {
  Handle str = string_type();
  Handle type = compound(sizeof(LinkRow));
  DTSIM_FIELD(LinkRow, id, H5T_NATIVE_INT32);
  DTSIM_FIELD(LinkRow, source, str.get());
  DTSIM_FIELD(LinkRow, target, str.get());
  DTSIM_FIELD(LinkRow, kind, str.get());
  DTSIM_FIELD(LinkRow, bandwidth_bytes_per_s, H5T_NATIVE_DOUBLE);
  DTSIM_FIELD(LinkRow, latency_ns, H5T_NATIVE_INT64);
  DTSIM_FIELD(LinkRow, bytes, H5T_NATIVE_DOUBLE);
  DTSIM_FIELD(LinkRow, busy_s, H5T_NATIVE_DOUBLE);
  return type;
}

#undef DTSIM_FIELD

}  // namespace trace_h5

namespace {

using trace_h5::check;
using trace_h5::Handle;

using trace_h5::append_rows;
using trace_h5::create_table;
using trace_h5::write_attr;
using trace_h5::write_string_attr;
using trace_h5::write_table;

}  // namespace

Hdf5TraceSink::Hdf5TraceSink(std::string path) : path_(std::move(path)) {}

Hdf5TraceSink::~Hdf5TraceSink() {
  if (!finished_) abort();
}

void Hdf5TraceSink::begin(const RunInfo& info) {
  assert(!temp_ && !finished_);
  temp_.emplace(path_, fmt::format("HDF5 file '{}'", path_), [&](const std::string& name) {
    file_ = trace_h5::create_file(name, path_);
    return file_.get() >= 0;
  });

  Handle root(check(H5Gopen2(file_.get(), "/", H5P_DEFAULT), path_, "opening '/'"), H5Gclose);
  write_string_attr(root.get(), "format", trace_h5::kFormat, path_);
  const int version = trace_h5::kFormatVersion;
  write_attr(root.get(), "format_version", H5T_NATIVE_INT, &version, path_);
  write_string_attr(root.get(), "dtsim_version", info.dtsim_version, path_);
  write_string_attr(root.get(), "scenario", info.scenario_text, path_);
  write_string_attr(root.get(), "time_unit", "ns", path_);

  event_type_ = trace_h5::event_type();
  memory_type_ = trace_h5::memory_type();
  events_ = create_table(file_.get(), "events", event_type_.get(), kBlockRows, path_);
  write_string_attr(events_.get(), "stream_names", stream_names(), path_);
  write_string_attr(events_.get(), "op_names", op_kind_names(), path_);
  write_string_attr(events_.get(), "category_names", "compute,memory,communication", path_);
  write_string_attr(events_.get(), "phase_names", phase_names(), path_);
  memory_ = create_table(file_.get(), "memory", memory_type_.get(), kBlockRows, path_);
  event_rows_.reserve(kBlockRows);
  memory_rows_.reserve(kBlockRows);
}

void Hdf5TraceSink::event(const EventRecord& record) {
  event_rows_.push_back(record);
  if (event_rows_.size() == kBlockRows) flush_events();
}

void Hdf5TraceSink::memory(const MemoryRecord& record) {
  memory_rows_.push_back(record);
  if (memory_rows_.size() == kBlockRows) flush_memory();
}

void Hdf5TraceSink::ranks(const std::vector<RankRecord>& rows) { ranks_ = rows; }

void Hdf5TraceSink::topology(const std::vector<DeviceRecord>& devices, const std::vector<LinkRecord>& links) {
  devices_ = devices;
  links_ = links;
}

void Hdf5TraceSink::summary(const Summary& summary) { summary_ = summary; }

void Hdf5TraceSink::flush_events() {
  assert(temp_);
  append_rows(events_.get(), event_type_.get(), event_rows_.data(), event_rows_.size(), path_);
  event_rows_.clear();
}

void Hdf5TraceSink::flush_memory() {
  assert(temp_);
  append_rows(memory_.get(), memory_type_.get(), memory_rows_.data(), memory_rows_.size(), path_);
  memory_rows_.clear();
}

void Hdf5TraceSink::finish() {
  assert(temp_ && !finished_);
  flush_events();
  flush_memory();
  const hid_t file = file_.get();

  Handle rank_type = trace_h5::rank_type();
  write_table(file, "ranks", rank_type.get(), ranks_.data(), ranks_.size(), path_);

  Handle topology(check(H5Gcreate2(file, "topology", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), path_,
                        "creating group 'topology'"),
                  H5Gclose);
  std::vector<trace_h5::DeviceRow> devices;
  for (const DeviceRecord& d : devices_) devices.push_back({d.name.c_str(), d.kind.c_str(), d.node, d.gpu_index});
  Handle device_type = trace_h5::device_type();
  write_table(topology.get(), "devices", device_type.get(), devices.data(), devices.size(), path_);
  std::vector<trace_h5::LinkRow> links;
  for (const LinkRecord& l : links_) {
    links.push_back({l.id, l.source.c_str(), l.target.c_str(), l.kind.c_str(), l.bandwidth_bytes_per_s,
                     l.latency_ns, l.bytes, l.busy_s});
  }
  Handle link_type = trace_h5::link_type();
  write_table(file, "links", link_type.get(), links.data(), links.size(), path_);

  Handle summary(check(H5Gcreate2(file, "summary", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), path_,
                       "creating group 'summary'"),
                 H5Gclose);
  trace_h5::visit_summary(summary_, [&](const char* name, const auto& value) {
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, bool>) {
      const std::uint8_t flag = value ? 1 : 0;
      write_attr(summary.get(), name, H5T_NATIVE_UINT8, &flag, path_);
    } else {
      write_attr(summary.get(), name, trace_h5::native_type<T>(), &value, path_);
    }
  });

  summary.reset();
  topology.reset();
  events_.reset();
  memory_.reset();
  check(file_.reset(), path_, "closing the file");
  temp_->commit();
  temp_.reset();
  finished_ = true;
}

void Hdf5TraceSink::abort() {
  if (finished_) return;
  events_.reset();
  memory_.reset();
  file_.reset();
  temp_.reset();  // removes the temporary file
  event_rows_.clear();
  memory_rows_.clear();
}

}  // namespace dtsim
