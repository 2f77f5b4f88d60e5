// check_global_heaps (see hdf5_heap_check.hpp). Layout of a collection (HDF5 file format spec,
// "Global Heap"): "GCOL", version 1, 3 reserved bytes, the collection size (8 bytes, header
// included); then objects, each a 16-byte header (index 2, reference count 2, reserved 4, size 8)
// and its data padded to 8 bytes; object index 0 is the free space, which ends the collection.
#include "sim/trace/hdf5_heap_check.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "sim/base/error.hpp"

namespace dtsim::trace_h5 {
namespace {

constexpr std::uint64_t kHeader = 16, kObjectHeader = 16;

std::uint64_t little_endian(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

// Empty when the collection at `at` (of a file of `size` bytes) is sound, else what is wrong.
std::string collection_fault(const unsigned char* data, std::uint64_t size, std::uint64_t at) {
  const std::uint64_t length = little_endian(data + at + 8, 8);
  if (length < kHeader || length > size - at) return fmt::format("its size {} runs past the end of the file", length);
  const std::uint64_t end = at + length;
  for (std::uint64_t p = at + kHeader; p < end;) {
    if (end - p < kObjectHeader) return "";  // too small for an object: free space
    const std::uint64_t index = little_endian(data + p, 2), bytes = little_endian(data + p + 8, 8);
    if (index == 0) {
      if (bytes != end - p) return fmt::format("its free space of {} bytes does not fill its last {}", bytes, end - p);
      return "";
    }
    if (bytes > end - p - kObjectHeader) return fmt::format("object {} of {} bytes runs past its end", index, bytes);
    p += kObjectHeader + (bytes + 7) / 8 * 8;
    if (p > end) return fmt::format("object {} runs past its end", index);
  }
  return "";
}

}  // namespace

void check_global_heaps(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // H5Fopen reports it
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(kHeader)) {
    ::close(fd);
    return;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return;
  const auto* data = static_cast<const unsigned char*>(map);
  std::string fault;
  std::uint64_t at = 0;
  for (const unsigned char* hit = data; fault.empty();) {
    hit = static_cast<const unsigned char*>(::memmem(hit, size - static_cast<std::uint64_t>(hit - data), "GCOL", 4));
    if (hit == nullptr) break;
    at = static_cast<std::uint64_t>(hit - data);
    if (size - at >= kHeader && hit[4] == 1) fault = collection_fault(data, size, at);
    ++hit;
  }
  ::munmap(map, size);
  if (!fault.empty())
    throw InputError(fmt::format("HDF5 file '{}': damaged: the global heap at byte {}: {}", path, at, fault));
}

}  // namespace dtsim::trace_h5
