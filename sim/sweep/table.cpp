// Writing and reading the sweep table (see table.hpp). The HDF5 row is a compound built
// at run time: point, one string column per axis, status, message, then the Summary fields
// with the names and types of a trace's /summary attributes.
#include "sim/sweep/table.hpp"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "sim/base/error.hpp"
#include "sim/trace/hdf5_sink.hpp"

namespace dtsim {
namespace {

using trace_h5::check;
using trace_h5::Handle;

constexpr const char* kFormat = "dtsim-sweep";
constexpr int kFormatVersion = 1;

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

void write_h5(const SweepTable& table, const std::string& path, const std::string& final_path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  Handle fapl(check(H5Pcreate(H5P_FILE_ACCESS), final_path, "creating the file"), H5Pclose);
  check(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), final_path, "creating the file");
  Handle file(check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), final_path,
                    fmt::format("creating '{}'", path)),
              H5Fclose);
  Handle root(check(H5Gopen2(file.get(), "/", H5P_DEFAULT), final_path, "opening '/'"), H5Gclose);
  trace_h5::write_string_attr(root.get(), "format", kFormat, final_path);
  trace_h5::write_attr(root.get(), "format_version", H5T_NATIVE_INT, &kFormatVersion, final_path);
  trace_h5::write_string_attr(root.get(), "dtsim_version", DTSIM_VERSION, final_path);
  trace_h5::write_string_attr(root.get(), "scenario", table.scenario, final_path);
  trace_h5::write_string_attr(root.get(), "shard", table.shard, final_path);

  const RowLayout layout(table.axes);
  Handle type = layout.mem_type();
  Handle sweep = trace_h5::create_table(file.get(), "sweep", type.get(), 1024, final_path);
  const std::vector<unsigned char> rows = pack_rows(layout, table);
  trace_h5::append_rows(sweep.get(), type.get(), rows.data(), table.rows.size(), final_path);
  std::string axes;
  for (const std::string& a : table.axes) axes += (axes.empty() ? "" : ",") + a;
  trace_h5::write_string_attr(sweep.get(), "axes", axes, final_path);
  trace_h5::write_string_attr(sweep.get(), "definition", table.definition, final_path);
  trace_h5::write_attr(sweep.get(), "total_points", H5T_NATIVE_INT64, &table.total_points, final_path);
  sweep.reset();
  root.reset();
  check(file.reset(), final_path, "closing the file");
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void write_text(const std::string& text, const std::string& path, const std::string& final_path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(fmt::format("CSV file '{}': cannot create '{}'", final_path, path));
  out << text;
  out.close();
  if (!out) throw InputError(fmt::format("CSV file '{}': writing '{}' failed", final_path, path));
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
  const std::string h5_tmp = h5_path + ".tmp", csv_tmp = csv_path + ".tmp";
  std::error_code ignored;
  try {
    if (!h5_path.empty()) write_h5(table, h5_tmp, h5_path);
    if (!csv_path.empty()) write_text(sweep_csv(table), csv_tmp, csv_path);
    for (const auto& [tmp, path] : {std::pair{h5_tmp, h5_path}, std::pair{csv_tmp, csv_path}}) {
      if (path.empty()) continue;
      std::error_code error;
      std::filesystem::rename(tmp, path, error);
      if (error) throw InputError(fmt::format("file '{}': renaming '{}' failed: {}", path, tmp, error.message()));
    }
  } catch (...) {
    if (!h5_path.empty()) std::filesystem::remove(h5_tmp, ignored);
    if (!csv_path.empty()) std::filesystem::remove(csv_tmp, ignored);
    throw;
  }
}

SweepTable read_sweep_table(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  Handle file(check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), path, "opening the file"), H5Fclose);
  Handle root(check(H5Gopen2(file.get(), "/", H5P_DEFAULT), path, "opening '/'"), H5Gclose);
  if (H5Aexists(root.get(), "format") <= 0 || trace_h5::read_string_attr(root.get(), "format", path) != kFormat)
    throw InputError(fmt::format("'{}': not a dtsim sweep file (no format = \"{}\" attribute)", path, kFormat));
  int version = 0;
  {
    Handle attr(check(H5Aopen(root.get(), "format_version", H5P_DEFAULT), path, "reading 'format_version'"),
                H5Aclose);
    check(H5Aread(attr.get(), H5T_NATIVE_INT, &version), path, "reading 'format_version'");
  }
  if (version != kFormatVersion)
    throw InputError(fmt::format("'{}': sweep format_version {} is not supported (this dtsim reads {})", path,
                                 version, kFormatVersion));
  SweepTable t;
  t.scenario = trace_h5::read_string_attr(root.get(), "scenario", path);
  t.shard = trace_h5::read_string_attr(root.get(), "shard", path);
  Handle sweep(check(H5Dopen2(file.get(), "sweep", H5P_DEFAULT), path, "opening dataset 'sweep'"), H5Dclose);
  const std::string axes = trace_h5::read_string_attr(sweep.get(), "axes", path);
  for (std::size_t start = 0; start < axes.size();) {
    const std::size_t end = std::min(axes.find(',', start), axes.size());
    t.axes.push_back(axes.substr(start, end - start));
    start = end + 1;
  }
  t.definition = trace_h5::read_string_attr(sweep.get(), "definition", path);
  {
    Handle attr(check(H5Aopen(sweep.get(), "total_points", H5P_DEFAULT), path, "reading 'total_points'"), H5Aclose);
    check(H5Aread(attr.get(), H5T_NATIVE_INT64, &t.total_points), path, "reading 'total_points'");
  }

  const RowLayout layout(t.axes);
  Handle file_type(check(H5Dget_type(sweep.get()), path, "reading dataset 'sweep'"), H5Tclose);
  bool columns_match = H5Tget_nmembers(file_type.get()) == static_cast<int>(layout.fields().size());
  for (const Field& f : layout.fields())
    columns_match = columns_match && H5Tget_member_index(file_type.get(), f.name.c_str()) >= 0;
  if (!columns_match)
    throw InputError(fmt::format("'{}': the /sweep columns are not point, the axes ({}), status, message and the "
                                 "summary metrics", path, axes));
  Handle type = layout.mem_type();
  Handle space(check(H5Dget_space(sweep.get()), path, "reading dataset 'sweep'"), H5Sclose);
  const auto n = static_cast<std::size_t>(check(H5Sget_simple_extent_npoints(space.get()), path, "reading dataset 'sweep'"));
  std::vector<unsigned char> buf(n * layout.size());
  if (n > 0) check(H5Dread(sweep.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()), path, "reading dataset 'sweep'");
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
  if (n > 0) H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, buf.data());
  return t;
}

}  // namespace dtsim
