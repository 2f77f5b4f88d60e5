// read_trace (see hdf5_reader.hpp), using the layout pieces of hdf5_sink.hpp and the checked
// reads of hdf5_read.hpp.
#include "sim/trace/hdf5_reader.hpp"

#include <fmt/format.h>

#include "sim/base/error.hpp"
#include "sim/trace/hdf5_read.hpp"
#include "sim/trace/hdf5_sink.hpp"

namespace dtsim {

namespace {

using trace_h5::check;
using trace_h5::Handle;

herr_t collect_name(hid_t, const char* name, const H5A_info_t*, void* names) {
  static_cast<std::vector<std::string>*>(names)->emplace_back(name);
  return 0;
}

// Every string attribute of the root group, and format_version.
void read_root_attrs(hid_t file, const std::string& path, TraceContents& out) {
  Handle root(check(H5Gopen2(file, "/", H5P_DEFAULT), path, "opening '/'"), H5Gclose);
  std::vector<std::string> names;
  check(H5Aiterate2(root.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_name, &names), path,
        "listing root attributes");
  for (const std::string& name : names) {
    const std::string what = fmt::format("reading attribute '{}'", name);
    Handle attr(check(H5Aopen(root.get(), name.c_str(), H5P_DEFAULT), path, what), H5Aclose);
    Handle type(check(H5Aget_type(attr.get()), path, what), H5Tclose);
    if (H5Tget_class(type.get()) == H5T_STRING) {
      out.string_attrs[name] = trace_h5::read_string(root.get(), name.c_str(), path, "/");
    } else if (name == "format_version") {
      out.format_version = trace_h5::read_number<std::int32_t>(root.get(), name.c_str(), path, "/");
    }
  }
  const auto format = out.string_attrs.find("format");
  if (format == out.string_attrs.end() || format->second != trace_h5::kFormat) {
    throw InputError(fmt::format("trace file '{}': not a dtsim trace (no format = \"{}\" attribute)", path,
                                 trace_h5::kFormat));
  }
  if (out.format_version != trace_h5::kFormatVersion) {
    throw InputError(fmt::format("trace file '{}': format_version {} is not supported (this dtsim reads {})",
                                 path, out.format_version, trace_h5::kFormatVersion));
  }
}

// The rows of table `name` of `loc` (`object` in messages), checked before reading.
template <class Row>
std::vector<Row> read_table(hid_t loc, const char* name, hid_t mem_type, const std::string& path,
                            const std::string& object) {
  Handle dataset(check(H5Dopen2(loc, name, H5P_DEFAULT), path, "opening dataset '" + object + "'"), H5Dclose);
  const std::size_t count = trace_h5::table_rows(dataset.get(), mem_type, path, "dataset '" + object + "'");
  std::vector<Row> rows = trace_h5::allocate_rows<Row>(count, path, "dataset '" + object + "'");
  trace_h5::read_rows(dataset.get(), mem_type, rows.data(), count, path, "dataset '" + object + "'");
  return rows;
}

std::string text(const char* s) { return s != nullptr ? s : ""; }

void read_topology(hid_t file, const std::string& path, TraceContents& out) {
  Handle group(check(H5Gopen2(file, "topology", H5P_DEFAULT), path, "opening group 'topology'"), H5Gclose);
  Handle device_type = trace_h5::device_type();
  auto devices = read_table<trace_h5::DeviceRow>(group.get(), "devices", device_type.get(), path, "/topology/devices");
  for (const auto& d : devices) out.devices.push_back({text(d.name), text(d.kind), d.node, d.gpu_index});
  trace_h5::reclaim(device_type.get(), devices.data(), devices.size());

  Handle link_type = trace_h5::link_type();
  auto links = read_table<trace_h5::LinkRow>(file, "links", link_type.get(), path, "/links");
  for (const auto& l : links) {
    out.links.push_back({l.id, text(l.source), text(l.target), text(l.kind), l.bandwidth_bytes_per_s,
                         l.latency_ns, l.bytes, l.busy_s});
  }
  trace_h5::reclaim(link_type.get(), links.data(), links.size());
}

void read_summary(hid_t file, const std::string& path, Summary& out) {
  Handle group(check(H5Gopen2(file, "summary", H5P_DEFAULT), path, "opening group 'summary'"), H5Gclose);
  trace_h5::visit_summary(out, [&](const char* name, auto& value) {
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, bool>) value = trace_h5::read_number<std::uint8_t>(group.get(), name, path, "/summary") != 0;
    else value = trace_h5::read_number<T>(group.get(), name, path, "/summary");
  });
}

}  // namespace

TraceContents read_trace(const std::string& path) {
  Handle file = trace_h5::open_file(path);
  TraceContents out;
  read_root_attrs(file.get(), path, out);
  Handle event_type = trace_h5::event_type();
  out.events = read_table<EventRecord>(file.get(), "events", event_type.get(), path, "/events");
  Handle memory_type = trace_h5::memory_type();
  out.memory = read_table<MemoryRecord>(file.get(), "memory", memory_type.get(), path, "/memory");
  Handle rank_type = trace_h5::rank_type();
  out.ranks = read_table<RankRecord>(file.get(), "ranks", rank_type.get(), path, "/ranks");
  read_topology(file.get(), path, out);
  read_summary(file.get(), path, out.summary);
  return out;
}

}  // namespace dtsim
