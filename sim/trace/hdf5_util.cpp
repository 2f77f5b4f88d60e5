// The shared HDF5 helpers of hdf5_util.hpp.
#include "sim/trace/hdf5_util.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include "sim/base/error.hpp"

namespace dtsim::trace_h5 {

namespace {

herr_t keep_innermost(unsigned n, const H5E_error2_t* error, void* out) {
  if (n == 0 && error->desc != nullptr) *static_cast<std::string*>(out) = error->desc;
  return 0;
}

}  // namespace

void fail(const std::string& path, const std::string& what) {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_innermost, &detail);
  // A failed system call: keep only the system's message ("No space left on device").
  const std::string marker = "error message = '";
  if (const std::size_t at = detail.find(marker); at != std::string::npos) {
    const std::size_t start = at + marker.size();
    detail = detail.substr(start, detail.find('\'', start) - start);
  }
  throw InputError(fmt::format("HDF5 file '{}': {} failed{}{}", path, what, detail.empty() ? "" : ": ", detail));
}

void no_cleanup_at_exit() { H5dont_atexit(); }

Handle string_type() {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  return type;
}

Handle create_file(const std::string& name, const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors become InputErrors, not printed stacks
  const std::string what = fmt::format("creating '{}'", name);
  Handle fapl(check(H5Pcreate(H5P_FILE_ACCESS), path, what), H5Pclose);
  check(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), path, what);
  check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST), path, what);
  const hid_t file = H5Fcreate(name.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get());
  struct stat st {};
  if (file < 0 && ::lstat(name.c_str(), &st) == 0) return Handle();
  return Handle(check(file, path, what), H5Fclose);
}

Handle create_table(hid_t loc, const char* name, hid_t mem_type, hsize_t chunk_rows, const std::string& path) {
  const std::string what = fmt::format("creating dataset '{}'", name);
  hsize_t dims = 0, max_dims = H5S_UNLIMITED;
  Handle space(check(H5Screate_simple(1, &dims, &max_dims), path, what), H5Sclose);
  Handle dcpl(check(H5Pcreate(H5P_DATASET_CREATE), path, what), H5Pclose);
  check(H5Pset_chunk(dcpl.get(), 1, &chunk_rows), path, what);
  check(H5Pset_shuffle(dcpl.get()), path, what);
  check(H5Pset_deflate(dcpl.get(), 1), path, what);
  check(H5Pset_fletcher32(dcpl.get()), path, what);
  Handle file_type(check(H5Tcopy(mem_type), path, what), H5Tclose);
  check(H5Tpack(file_type.get()), path, what);
  return Handle(check(H5Dcreate2(loc, name, file_type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                      path, what),
                H5Dclose);
}

void append_rows(hid_t dataset, hid_t mem_type, const void* rows, hsize_t count, const std::string& path) {
  if (count == 0) return;
  const std::string what = "appending rows";
  Handle old_space(check(H5Dget_space(dataset), path, what), H5Sclose);
  hsize_t start = 0;
  check(H5Sget_simple_extent_dims(old_space.get(), &start, nullptr), path, what);
  const hsize_t total = start + count;
  check(H5Dset_extent(dataset, &total), path, what);
  Handle file_space(check(H5Dget_space(dataset), path, what), H5Sclose);
  check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr), path, what);
  Handle mem_space(check(H5Screate_simple(1, &count, nullptr), path, what), H5Sclose);
  check(H5Dwrite(dataset, mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, rows), path, what);
}

void write_table(hid_t loc, const char* name, hid_t mem_type, const void* rows, hsize_t count,
                 const std::string& path) {
  Handle dataset = create_table(loc, name, mem_type, 1024, path);
  append_rows(dataset.get(), mem_type, rows, count, path);
}

void write_attr(hid_t loc, const char* name, hid_t type, const void* value, const std::string& path) {
  const std::string what = fmt::format("writing attribute '{}'", name);
  Handle space(check(H5Screate(H5S_SCALAR), path, what), H5Sclose);
  Handle attr(check(H5Acreate2(loc, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT), path, what), H5Aclose);
  check(H5Awrite(attr.get(), type, value), path, what);
}

void write_string_attr(hid_t loc, const char* name, const std::string& value, const std::string& path) {
  Handle type = string_type();
  const char* text = value.c_str();
  write_attr(loc, name, type.get(), &text, path);
}

}  // namespace dtsim::trace_h5
