// The HDF5 table of `dtsim advise --output FILE.h5`: format "dtsim-advise", format_version 1,
// root attributes model, tokens, global_batch, seq_len, ranked_by, and one compound dataset
// /advise with a row per simulated layout or variant (columns in the README). Written to a
// temporary created exclusively next to FILE.h5 and renamed when complete.
#pragma once
#include <string>

#include "sim/advisor/advise.hpp"

namespace dtsim {

void save_advise_table(const AdviseResult& result, const std::string& path);

}  // namespace dtsim
