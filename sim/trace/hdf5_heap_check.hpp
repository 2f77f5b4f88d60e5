// A check of the HDF5 global heap collections of a file before HDF5 reads it. Variable-length
// strings (dtsim's text attributes and string columns) live in these collections, which carry no
// checksum, and HDF5 1.10 trusts their object sizes: one flipped bit there makes H5Aread or
// H5Dread copy past the collection (a crash) or loop forever. Every collection ("GCOL", version 1)
// must lie inside the file and its objects must tile it exactly, as the format says.
#pragma once
#include <string>

namespace dtsim::trace_h5 {

// Throws InputError naming `path` and the collection's offset when a collection is damaged.
void check_global_heaps(const std::string& path);

}  // namespace dtsim::trace_h5
