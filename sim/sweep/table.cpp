// Writing and reading the sweep table (see table.hpp). The HDF5 row is a compound built
// at run time: point, one string column per axis, status, message, then the Summary fields
// with the names and types of a trace's /summary attributes.
#include "sim/sweep/table.hpp"

#include <fmt/format.h>

#include <cstring>
#include <optional>

#include "sim/base/error.hpp"
#include "sim/base/safe_write.hpp"
#include "sim/trace/hdf5_read.hpp"
#include "sim/trace/hdf5_sink.hpp"

namespace dtsim {
namespace {

using trace_h5::check;
using trace_h5::Handle;

constexpr const char* kFormat = "dtsim-sweep";
constexpr int kFormatVersion = 1;
// Points of one sweep: the point column is int32.
constexpr std::int64_t kMaxPoints = std::int64_t{1} << 31;

struct Field {
  std::string name;
  hid_t type;  // a native type; -1 for a variable-length string
  std::size_t offset, size;
};

// The in-memory layout of one table row, every field at its natural alignment.
class RowLayout {
 public:
  explicit RowLayout(const std::vector<std::string>& axes) {
    add("point", H5T_NATIVE_INT32, sizeof(std::int32_t));
    for (const std::string& key : axes) add(key, -1, sizeof(char*));
    add("status", -1, sizeof(char*));
    add("message", -1, sizeof(char*));
    first_metric_ = fields_.size();
    Summary s;
    trace_h5::visit_summary(s, [&](const char* name, const auto& value) {
      using T = std::decay_t<decltype(value)>;
      if constexpr (std::is_same_v<T, bool>) add(name, H5T_NATIVE_UINT8, 1);
      else add(name, trace_h5::native_type<T>(), sizeof(T));
    });
    size_ = (size_ + 7) / 8 * 8;
  }
  const std::vector<Field>& fields() const { return fields_; }
  std::size_t size() const { return size_; }
  std::size_t first_metric() const { return first_metric_; }
  Handle mem_type() const {
    Handle str = trace_h5::string_type();
    Handle type(H5Tcreate(H5T_COMPOUND, size_), H5Tclose);
    for (const Field& f : fields_) H5Tinsert(type.get(), f.name.c_str(), f.offset, f.type < 0 ? str.get() : f.type);
    return type;
  }

 private:
  void add(std::string name, hid_t type, std::size_t size) {
    size_ = (size_ + size - 1) / size * size;
    fields_.push_back({std::move(name), type, size_, size});
    size_ += size;
  }
  std::vector<Field> fields_;
  std::size_t size_ = 0, first_metric_ = 0;
};

// Calls f(field, value) for each Summary field of `s` with its layout field.
template <class S, class F>
void visit_metrics(const RowLayout& layout, S& s, F&& f) {
  std::size_t i = layout.first_metric();
  trace_h5::visit_summary(s, [&](const char*, auto& value) { f(layout.fields()[i++], value); });
}

std::vector<unsigned char> pack_rows(const RowLayout& layout, const SweepTable& table) {
  std::vector<unsigned char> buf(layout.size() * table.rows.size());
  const auto put_string = [](unsigned char* at, const std::string& s) {
    const char* p = s.c_str();
    std::memcpy(at, &p, sizeof p);
  };
  static const std::string kStatus[] = {"ok", "oom", "invalid"};
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    unsigned char* row = buf.data() + r * layout.size();
    const PointResult& p = table.rows[r];
    const auto point = static_cast<std::int32_t>(p.point);
    std::memcpy(row + layout.fields()[0].offset, &point, sizeof point);
    for (std::size_t a = 0; a < p.values.size(); ++a) put_string(row + layout.fields()[1 + a].offset, p.values[a]);
    put_string(row + layout.fields()[1 + p.values.size()].offset, kStatus[static_cast<int>(p.status)]);
    put_string(row + layout.fields()[2 + p.values.size()].offset, p.message);
    visit_metrics(layout, p.summary, [&](const Field& f, const auto& value) {
      if constexpr (std::is_same_v<std::decay_t<decltype(value)>, bool>) row[f.offset] = value ? 1 : 0;
      else std::memcpy(row + f.offset, &value, sizeof value);
    });
  }
  return buf;
}

void write_h5(const SweepTable& table, hid_t file, const std::string& final_path) {
  Handle root(check(H5Gopen2(file, "/", H5P_DEFAULT), final_path, "opening '/'"), H5Gclose);
  trace_h5::write_string_attr(root.get(), "format", kFormat, final_path);
  trace_h5::write_attr(root.get(), "format_version", H5T_NATIVE_INT, &kFormatVersion, final_path);
  trace_h5::write_string_attr(root.get(), "dtsim_version", DTSIM_VERSION, final_path);
  trace_h5::write_string_attr(root.get(), "scenario", table.scenario, final_path);
  trace_h5::write_string_attr(root.get(), "shard", table.shard, final_path);

  const RowLayout layout(table.axes);
  Handle type = layout.mem_type();
  Handle sweep = trace_h5::create_table(file, "sweep", type.get(), 1024, final_path);
  const std::vector<unsigned char> rows = pack_rows(layout, table);
  trace_h5::append_rows(sweep.get(), type.get(), rows.data(), table.rows.size(), final_path);
  std::string axes;
  for (const std::string& a : table.axes) axes += (axes.empty() ? "" : ",") + a;
  trace_h5::write_string_attr(sweep.get(), "axes", axes, final_path);
  trace_h5::write_string_attr(sweep.get(), "definition", table.definition, final_path);
  trace_h5::write_attr(sweep.get(), "total_points", H5T_NATIVE_INT64, &table.total_points, final_path);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string sweep_definition(const SweepSpec& spec) {
  std::string out = fmt::format("mode = {}\n", spec.mode == SweepMode::zip ? "zip" : "product");
  for (const SweepAxis& a : spec.axes) {
    bool comma = false;
    for (const std::string& v : a.values) comma = comma || v.find(',') != std::string::npos;
    std::string values;
    for (const std::string& v : a.values) values += (values.empty() ? "" : comma ? ";" : ",") + v;
    out += fmt::format("{} = {}\n", a.key, values);
  }
  return out;
}

std::string sweep_csv(const SweepTable& table) {
  const RowLayout layout(table.axes);
  std::string out;
  for (const Field& f : layout.fields()) out += fmt::format("{}{}", out.empty() ? "" : ",", csv_field(f.name));
  out += "\n";
  for (const PointResult& p : table.rows) {
    out += std::to_string(p.point);
    for (const std::string& v : p.values) out += fmt::format(",{}", csv_field(v));
    out += fmt::format(",{},{}", point_status_name(p.status), csv_field(p.message));
    visit_metrics(layout, p.summary, [&](const Field&, const auto& value) {
      if constexpr (std::is_same_v<std::decay_t<decltype(value)>, bool>) out += value ? ",1" : ",0";
      else out += fmt::format(",{}", value);
    });
    out += "\n";
  }
  return out;
}

void save_sweep_table(const SweepTable& table, const std::string& h5_path, const std::string& csv_path) {
  // Both temporaries are complete before either is renamed.
  std::optional<TempFile> h5;
  std::optional<TempTextFile> csv;
  if (!h5_path.empty()) {
    Handle file;
    h5.emplace(h5_path, fmt::format("HDF5 file '{}'", h5_path), [&](const std::string& name) {
      file = trace_h5::create_file(name, h5_path);
      return file.get() >= 0;
    });
    write_h5(table, file.get(), h5_path);
    check(file.reset(), h5_path, "closing the file");
  }
  if (!csv_path.empty()) {
    csv.emplace(csv_path, fmt::format("CSV file '{}'", csv_path));
    csv->stream() << sweep_csv(table);
    csv->close();
  }
  if (h5) h5->commit();
  if (csv) csv->commit();
}

SweepTable read_sweep_table(const std::string& path) {
  Handle file = trace_h5::open_file(path);
  Handle root(check(H5Gopen2(file.get(), "/", H5P_DEFAULT), path, "opening '/'"), H5Gclose);
  if (!trace_h5::has_attr(root.get(), "format", path) || trace_h5::read_string(root.get(), "format", path, "/") != kFormat)
    throw InputError(fmt::format("'{}': not a dtsim sweep file (no format = \"{}\" attribute)", path, kFormat));
  const int version = trace_h5::read_number<std::int32_t>(root.get(), "format_version", path, "/");
  if (version != kFormatVersion)
    throw InputError(fmt::format("'{}': sweep format_version {} is not supported (this dtsim reads {})", path,
                                 version, kFormatVersion));
  SweepTable t;
  t.scenario = trace_h5::read_string(root.get(), "scenario", path, "/");
  t.shard = trace_h5::read_string(root.get(), "shard", path, "/");
  Handle sweep(check(H5Dopen2(file.get(), "sweep", H5P_DEFAULT), path, "opening dataset 'sweep'"), H5Dclose);
  const std::string axes = trace_h5::read_string(sweep.get(), "axes", path, "/sweep");
  for (std::size_t start = 0; start < axes.size();) {
    const std::size_t end = std::min(axes.find(',', start), axes.size());
    t.axes.push_back(axes.substr(start, end - start));
    start = end + 1;
  }
  t.definition = trace_h5::read_string(sweep.get(), "definition", path, "/sweep");
  t.total_points = trace_h5::read_number<std::int64_t>(sweep.get(), "total_points", path, "/sweep");
  if (t.total_points < 0 || t.total_points > kMaxPoints)
    throw InputError(fmt::format("HDF5 file '{}': attribute 'total_points' of '/sweep' = {}: must be from 0 to {}", path,
                                 t.total_points, kMaxPoints));

  const RowLayout layout(t.axes);
  Handle file_type(check(H5Dget_type(sweep.get()), path, "reading dataset 'sweep'"), H5Tclose);
  bool columns_match = H5Tget_nmembers(file_type.get()) == static_cast<int>(layout.fields().size());
  for (const Field& f : layout.fields())
    columns_match = columns_match && H5Tget_member_index(file_type.get(), f.name.c_str()) >= 0;
  if (!columns_match)
    throw InputError(fmt::format("'{}': the /sweep columns are not point, the axes ({}), status, message and the "
                                 "summary metrics", path, axes));
  Handle type = layout.mem_type();
  const std::size_t n = trace_h5::table_rows(sweep.get(), type.get(), path, "dataset '/sweep'");
  std::vector<unsigned char> buf = trace_h5::allocate_rows<unsigned char>(n * layout.size(), path, "dataset '/sweep'");
  trace_h5::read_rows(sweep.get(), type.get(), buf.data(), n, path, "dataset '/sweep'");
  const auto get_string = [](const unsigned char* at) {
    const char* p = nullptr;
    std::memcpy(&p, at, sizeof p);
    return std::string(p != nullptr ? p : "");
  };
  for (std::size_t r = 0; r < n; ++r) {
    const unsigned char* row = buf.data() + r * layout.size();
    PointResult p;
    std::int32_t point = 0;
    std::memcpy(&point, row + layout.fields()[0].offset, sizeof point);
    p.point = point;
    for (std::size_t a = 0; a < t.axes.size(); ++a) p.values.push_back(get_string(row + layout.fields()[1 + a].offset));
    const std::string status = get_string(row + layout.fields()[1 + t.axes.size()].offset);
    if (status != "ok" && status != "oom" && status != "invalid")
      throw InputError(fmt::format("'{}': point {} has status '{}'; valid: ok, oom, invalid", path, point, status));
    p.status = status == "ok" ? PointStatus::ok : status == "oom" ? PointStatus::oom : PointStatus::invalid;
    p.message = get_string(row + layout.fields()[2 + t.axes.size()].offset);
    visit_metrics(layout, p.summary, [&](const Field& f, auto& value) {
      if constexpr (std::is_same_v<std::decay_t<decltype(value)>, bool>) value = row[f.offset] != 0;
      else std::memcpy(&value, row + f.offset, sizeof value);
    });
    t.rows.push_back(std::move(p));
  }
  trace_h5::reclaim(type.get(), buf.data(), n);
  return t;
}

}  // namespace dtsim
