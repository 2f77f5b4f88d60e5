// The checked HDF5 reads of hdf5_read.hpp.
#include "sim/trace/hdf5_read.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "sim/trace/hdf5_heap_check.hpp"

namespace dtsim::trace_h5 {
namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& object, const std::string& what) {
  throw InputError(fmt::format("HDF5 file '{}': {}: {}", path, object, what));
}

std::string attr_name(const std::string& object, const char* name) {
  return fmt::format("attribute '{}' of '{}'", name, object);
}

const char* class_name(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "float";
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ARRAY: return "array";
    case H5T_VLEN: return "variable-length sequence";
    default: return "another class";
  }
}

// Checks that attribute `attr` holds exactly one value (a scalar dataspace, or a simple one of
// one element).
void require_one_value(hid_t attr, const std::string& path, const std::string& what) {
  Handle space(check(H5Aget_space(attr), path, "reading " + what), H5Sclose);
  const H5S_class_t kind = H5Sget_simple_extent_type(space.get());
  const hssize_t points = H5Sget_simple_extent_npoints(space.get());
  if (kind == H5S_SCALAR || (kind == H5S_SIMPLE && points == 1)) return;
  throw InputError(fmt::format("HDF5 file '{}': {} holds {} values: expected one", path, what,
                               kind == H5S_NULL ? 0 : points));
}

}  // namespace

Handle open_file(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(fmt::format("HDF5 file '{}': cannot open it: {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) throw InputError(fmt::format("HDF5 file '{}': not a regular file", path));
  check_global_heaps(path);
  return Handle(check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), path, "opening the file"), H5Fclose);
}

bool has_attr(hid_t loc, const char* name, const std::string& path) {
  return check(H5Aexists(loc, name), path, fmt::format("looking for attribute '{}'", name)) > 0;
}

std::string read_string(hid_t loc, const char* name, const std::string& path, const std::string& object) {
  const std::string what = attr_name(object, name);
  Handle attr(check(H5Aopen(loc, name, H5P_DEFAULT), path, "opening " + what), H5Aclose);
  Handle file_type(check(H5Aget_type(attr.get()), path, "reading " + what), H5Tclose);
  const H5T_class_t kind = H5Tget_class(file_type.get());
  if (kind != H5T_STRING)
    throw InputError(fmt::format("HDF5 file '{}': {} is of class {}: expected a string", path, what, class_name(kind)));
  require_one_value(attr.get(), path, what);
  if (check(H5Tis_variable_str(file_type.get()), path, "reading " + what) > 0) {
    Handle type = string_type();
    char* text = nullptr;
    check(H5Aread(attr.get(), type.get(), &text), path, "reading " + what);
    const std::size_t length = text != nullptr ? std::strlen(text) : 0;
    std::string value = length <= kMaxStringBytes ? std::string(text != nullptr ? text : "", length) : "";
    H5free_memory(text);
    if (length > kMaxStringBytes)
      throw InputError(fmt::format("HDF5 file '{}': {} is {} bytes long: at most {}", path, what, length,
                                   kMaxStringBytes));
    return value;
  }
  const std::size_t size = H5Tget_size(file_type.get());
  if (size == 0 || size > kMaxStringBytes)
    throw InputError(fmt::format("HDF5 file '{}': {} is {} bytes long: at most {}", path, what, size, kMaxStringBytes));
  Handle type(check(H5Tcopy(H5T_C_S1), path, "reading " + what), H5Tclose);
  check(H5Tset_size(type.get(), size), path, "reading " + what);
  std::string value(size, '\0');
  check(H5Aread(attr.get(), type.get(), value.data()), path, "reading " + what);
  value.resize(strnlen(value.c_str(), size));
  return value;
}

template <class T>
T read_number(hid_t loc, const char* name, const std::string& path, const std::string& object) {
  const std::string what = attr_name(object, name);
  Handle attr(check(H5Aopen(loc, name, H5P_DEFAULT), path, "opening " + what), H5Aclose);
  Handle file_type(check(H5Aget_type(attr.get()), path, "reading " + what), H5Tclose);
  const H5T_class_t kind = H5Tget_class(file_type.get());
  const bool integral = std::is_integral_v<T>;
  if (kind != H5T_INTEGER && (integral || kind != H5T_FLOAT))
    throw InputError(fmt::format("HDF5 file '{}': {} is of class {}: expected {}", path, what, class_name(kind),
                                 integral ? "an integer" : "a number"));
  require_one_value(attr.get(), path, what);
  T value{};
  hid_t mem_type = H5T_NATIVE_DOUBLE;
  if constexpr (std::is_same_v<T, std::int32_t>) mem_type = H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, std::int64_t>) mem_type = H5T_NATIVE_INT64;
  else if constexpr (std::is_same_v<T, std::uint8_t>) mem_type = H5T_NATIVE_UINT8;
  check(H5Aread(attr.get(), mem_type, &value), path, "reading " + what);
  return value;
}

template std::int32_t read_number<std::int32_t>(hid_t, const char*, const std::string&, const std::string&);
template std::int64_t read_number<std::int64_t>(hid_t, const char*, const std::string&, const std::string&);
template std::uint8_t read_number<std::uint8_t>(hid_t, const char*, const std::string&, const std::string&);
template double read_number<double>(hid_t, const char*, const std::string&, const std::string&);

std::size_t table_rows(hid_t dataset, hid_t mem_type, const std::string& path, const std::string& object) {
  const std::string what = "reading " + object;
  Handle file_type(check(H5Dget_type(dataset), path, what), H5Tclose);
  if (H5Tget_class(file_type.get()) != H5T_COMPOUND)
    refuse(path, object, fmt::format("is of class {}: expected a table of compound rows",
                                     class_name(H5Tget_class(file_type.get()))));
  const int members = check(H5Tget_nmembers(mem_type), path, what);
  for (int m = 0; m < members; ++m) {
    char* name = H5Tget_member_name(mem_type, static_cast<unsigned>(m));
    const std::string column = name != nullptr ? name : "";
    H5free_memory(name);
    const int index = H5Tget_member_index(file_type.get(), column.c_str());
    if (index < 0) refuse(path, object, fmt::format("has no column '{}'", column));
    Handle want(check(H5Tget_member_type(mem_type, static_cast<unsigned>(m)), path, what), H5Tclose);
    Handle have(check(H5Tget_member_type(file_type.get(), static_cast<unsigned>(index)), path, what), H5Tclose);
    const H5T_class_t want_class = H5Tget_class(want.get()), have_class = H5Tget_class(have.get());
    const bool numeric = [](H5T_class_t c) { return c == H5T_INTEGER || c == H5T_FLOAT; }(want_class);
    const bool same = numeric ? have_class == H5T_INTEGER || have_class == H5T_FLOAT
                              : have_class == want_class &&
                                    (want_class != H5T_STRING || H5Tis_variable_str(have.get()) > 0);
    if (!same)
      refuse(path, object, fmt::format("column '{}' is of class {}: expected {}", column, class_name(have_class),
                                       numeric ? "a number" : "a variable-length string"));
  }
  Handle space(check(H5Dget_space(dataset), path, what), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (H5Sget_simple_extent_type(space.get()) != H5S_SIMPLE || rank != 1)
    refuse(path, object, fmt::format("has {} dimensions: expected 1", rank < 0 ? 0 : rank));
  hsize_t rows = 0;
  check(H5Sget_simple_extent_dims(space.get(), &rows, nullptr), path, what);
  if (rows > kMaxTableRows) refuse(path, object, fmt::format("has {} rows: at most {}", rows, kMaxTableRows));
  const double declared = static_cast<double>(rows) * static_cast<double>(H5Tget_size(file_type.get()));
  const double stored = static_cast<double>(H5Dget_storage_size(dataset));
  if (declared > kMaxExpansion * stored + (1 << 20))
    refuse(path, object, fmt::format("declares {} rows ({:.0f} bytes) but stores {:.0f} bytes", rows, declared, stored));
  return static_cast<std::size_t>(rows);
}

void read_rows(hid_t dataset, hid_t mem_type, void* rows, std::size_t count, const std::string& path,
               const std::string& object) {
  if (count == 0) return;
  if (H5Dread(dataset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0) {
    reclaim(mem_type, rows, count);  // the strings of the rows converted before the failure
    fail(path, "reading " + object);
  }
}

void reclaim(hid_t mem_type, void* rows, std::size_t count) {
  if (count == 0) return;
  const hsize_t n = count;
  Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  H5Dvlen_reclaim(mem_type, space.get(), H5P_DEFAULT, rows);
}

}  // namespace dtsim::trace_h5
