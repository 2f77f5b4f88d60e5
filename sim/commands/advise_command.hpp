// `dtsim advise`: options, then the ranked table on stdout (or JSON), and the HDF5 table.
#pragma once

namespace dtsim {

// argc/argv start at the subcommand's name. Returns the exit status; bad input throws InputError.
int advise_command(int argc, char** argv);

}  // namespace dtsim
