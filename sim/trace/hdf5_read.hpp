// The one reading layer of dtsim's HDF5 files (traces, sweep tables): every attribute and
// dataset is checked for its class, rank, dimensions and size against what dtsim writes, and
// against the limits below, before a byte is read, so a crafted or damaged file gives an
// InputError naming the file, the object and what was expected, never a read past a buffer
// or an allocation of the declared size. HDF5's automatic error printing is off.
#pragma once
#include <fmt/format.h>
#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "sim/base/error.hpp"
#include "sim/trace/hdf5_util.hpp"

namespace dtsim::trace_h5 {

// A string attribute (the scenario text is the longest dtsim writes): at most 64 MiB.
inline constexpr std::size_t kMaxStringBytes = std::size_t{64} << 20;
// Rows of one table: at most 2^31.
inline constexpr hsize_t kMaxTableRows = hsize_t{1} << 31;
// A table's rows may take at most this many times the bytes it stores, plus 1 MiB: deflate
// never compresses more than about 1032:1, so a table that declares more rows than it holds
// (a crafted extent over unwritten chunks) is refused instead of filled in memory.
inline constexpr double kMaxExpansion = 1100;

// Opens `path` read-only after checking that it is a regular file (not a folder or a FIFO) and
// that its global heaps are sound (hdf5_heap_check.hpp).
Handle open_file(const std::string& path);

// Whether `loc` has attribute `name`.
bool has_attr(hid_t loc, const char* name, const std::string& path);

// One string (a scalar string attribute, fixed or variable length, at most kMaxStringBytes).
// `object` names the attribute's owner in messages ("/", "/sweep").
std::string read_string(hid_t loc, const char* name, const std::string& path, const std::string& object);

// One number of class integer (T integral) or float/integer (T double): a scalar attribute.
template <class T>
T read_number(hid_t loc, const char* name, const std::string& path, const std::string& object);

// The row count of the 1-D compound dataset `dataset` (named `object`), after checking that
// every member of `mem_type` is in the file's type with the same class (and string kind), and
// that the count is within kMaxTableRows and kMaxExpansion.
std::size_t table_rows(hid_t dataset, hid_t mem_type, const std::string& path, const std::string& object);
// Reads all `count` rows (from table_rows) into `rows`, value-initialised, H5Tget_size(mem_type)
// bytes each; on failure the strings already read are freed.
void read_rows(hid_t dataset, hid_t mem_type, void* rows, std::size_t count, const std::string& path,
               const std::string& object);
// Frees the variable-length strings of `count` rows of `mem_type` in `rows`.
void reclaim(hid_t mem_type, void* rows, std::size_t count);
// `count` value-initialised Ts, or InputError naming the table when memory runs out.
template <class T>
std::vector<T> allocate_rows(std::size_t count, const std::string& path, const std::string& object) {
  try {
    return std::vector<T>(count);
  } catch (const std::bad_alloc&) {
    throw InputError(fmt::format("HDF5 file '{}': {}: {} rows do not fit in memory", path, object, count));
  }
}

extern template std::int32_t read_number<std::int32_t>(hid_t, const char*, const std::string&, const std::string&);
extern template std::int64_t read_number<std::int64_t>(hid_t, const char*, const std::string&, const std::string&);
extern template std::uint8_t read_number<std::uint8_t>(hid_t, const char*, const std::string&, const std::string&);
extern template double read_number<double>(hid_t, const char*, const std::string&, const std::string&);

}  // namespace dtsim::trace_h5
