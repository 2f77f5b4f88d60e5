// read_trace (see hdf5_reader.hpp), using the layout pieces of hdf5_sink.hpp.
#include "sim/trace/hdf5_reader.hpp"

#include <fmt/format.h>

#include "sim/base/error.hpp"
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
      out.string_attrs[name] = trace_h5::read_string_attr(root.get(), name.c_str(), path);
    } else if (name == "format_version") {
      check(H5Aread(attr.get(), H5T_NATIVE_INT, &out.format_version), path, what);
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

template <class Row>
std::vector<Row> read_table(hid_t loc, const char* name, hid_t mem_type, const std::string& path) {
  const std::string what = fmt::format("reading dataset '{}'", name);
  Handle dataset(check(H5Dopen2(loc, name, H5P_DEFAULT), path, what), H5Dclose);
  Handle space(check(H5Dget_space(dataset.get()), path, what), H5Sclose);
  std::vector<Row> rows(static_cast<std::size_t>(check(H5Sget_simple_extent_npoints(space.get()), path, what)));
  if (!rows.empty()) check(H5Dread(dataset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()), path, what);
  return rows;
}

// Frees the strings HDF5 allocated inside `rows`.
template <class Row>
void reclaim(hid_t mem_type, std::vector<Row>& rows) {
  if (rows.empty()) return;
  const hsize_t count = rows.size();
  Handle space(H5Screate_simple(1, &count, nullptr), H5Sclose);
  H5Dvlen_reclaim(mem_type, space.get(), H5P_DEFAULT, rows.data());
}

std::string text(const char* s) { return s != nullptr ? s : ""; }

void read_topology(hid_t file, const std::string& path, TraceContents& out) {
  Handle group(check(H5Gopen2(file, "topology", H5P_DEFAULT), path, "opening group 'topology'"), H5Gclose);
  Handle device_type = trace_h5::device_type();
  auto devices = read_table<trace_h5::DeviceRow>(group.get(), "devices", device_type.get(), path);
  for (const auto& d : devices) out.devices.push_back({text(d.name), text(d.kind), d.node, d.gpu_index});
  reclaim(device_type.get(), devices);

  Handle link_type = trace_h5::link_type();
  auto links = read_table<trace_h5::LinkRow>(file, "links", link_type.get(), path);
  for (const auto& l : links) {
    out.links.push_back({l.id, text(l.source), text(l.target), text(l.kind), l.bandwidth_bytes_per_s,
                         l.latency_ns, l.bytes, l.busy_s});
  }
  reclaim(link_type.get(), links);
}

void read_summary(hid_t file, const std::string& path, Summary& out) {
  Handle group(check(H5Gopen2(file, "summary", H5P_DEFAULT), path, "opening group 'summary'"), H5Gclose);
  trace_h5::visit_summary(out, [&](const char* name, auto& value) {
    const std::string what = fmt::format("reading summary attribute '{}'", name);
    Handle attr(check(H5Aopen(group.get(), name, H5P_DEFAULT), path, what), H5Aclose);
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, bool>) {
      std::uint8_t flag = 0;
      check(H5Aread(attr.get(), H5T_NATIVE_UINT8, &flag), path, what);
      value = flag != 0;
    } else {
      check(H5Aread(attr.get(), trace_h5::native_type<T>(), &value), path, what);
    }
  });
}

}  // namespace

TraceContents read_trace(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  Handle file(check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), path, "opening the file"), H5Fclose);
  TraceContents out;
  read_root_attrs(file.get(), path, out);
  Handle event_type = trace_h5::event_type();
  out.events = read_table<EventRecord>(file.get(), "events", event_type.get(), path);
  Handle memory_type = trace_h5::memory_type();
  out.memory = read_table<MemoryRecord>(file.get(), "memory", memory_type.get(), path);
  Handle rank_type = trace_h5::rank_type();
  out.ranks = read_table<RankRecord>(file.get(), "ranks", rank_type.get(), path);
  read_topology(file.get(), path, out);
  read_summary(file.get(), path, out.summary);
  return out;
}

}  // namespace dtsim
