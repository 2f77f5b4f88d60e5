// Small HDF5 C API helpers shared by every dtsim file writer and reader (traces, sweep tables):
// identifier ownership, error checking with the file's path, variable-length strings, native
// types, exclusive file creation, extensible compressed tables and scalar attributes. Files are
// written in the HDF5 1.10 format, whose metadata carry checksums, and table chunks carry a
// Fletcher-32 checksum, so a damaged file is refused on reading (checked reads: hdf5_read.hpp).
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace dtsim::trace_h5 {

// Owns one HDF5 identifier and closes it with the matching H5?close function.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, -1)), close_(other.close_) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, -1);
      close_ = other.close_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  // Closes the identifier (if any); returns the close status.
  herr_t reset() {
    herr_t status = 0;
    if (id_ >= 0) status = close_(id_);
    id_ = -1;
    return status;
  }

 private:
  hid_t id_ = -1;
  Closer close_ = nullptr;
};

// Throws InputError naming the file `path`, the failed step `what` and HDF5's innermost error.
[[noreturn]] void fail(const std::string& path, const std::string& what);

// Returns `value` (an HDF5 identifier, status or count) unless it is negative, a failure.
template <class T>
T check(T value, const std::string& path, const std::string& what) {
  if (value < 0) fail(path, what);
  return value;
}

// Stops the HDF5 library from closing what is still open at exit (call first, before any other
// HDF5 call). Files are closed explicitly, and HDF5 1.10 crashes at exit on a file whose close
// failed (a full disk while writing).
void no_cleanup_at_exit();

Handle string_type();  // variable-length UTF-8

// Creates HDF5 file `name` with H5F_ACC_EXCL (never through an existing file or link) for
// output `path` (named in messages); an empty Handle when something exists at `name`. Meant as
// the create function of a TempFile (sim/base/safe_write.hpp).
Handle create_file(const std::string& name, const std::string& path);

// The HDF5 native type of a Summary field (bool is stored as uint8).
template <class T>
hid_t native_type() {
  if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  else if constexpr (std::is_same_v<T, std::int32_t>) return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return H5T_NATIVE_INT64;
  else {
    static_assert(std::is_same_v<T, std::uint8_t>);
    return H5T_NATIVE_UINT8;
  }
}

// An empty, extensible, chunked, shuffled, deflated and checksummed 1-D table of `mem_type` rows, stored
// with the packed copy of the type.
Handle create_table(hid_t loc, const char* name, hid_t mem_type, hsize_t chunk_rows, const std::string& path);
// Appends `count` rows at the end of table `dataset`.
void append_rows(hid_t dataset, hid_t mem_type, const void* rows, hsize_t count, const std::string& path);
// A whole table written at once (0 rows still creates the dataset).
void write_table(hid_t loc, const char* name, hid_t mem_type, const void* rows, hsize_t count,
                 const std::string& path);

// Scalar attributes.
void write_attr(hid_t loc, const char* name, hid_t type, const void* value, const std::string& path);
void write_string_attr(hid_t loc, const char* name, const std::string& value, const std::string& path);

}  // namespace dtsim::trace_h5
