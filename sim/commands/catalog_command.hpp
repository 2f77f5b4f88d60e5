// `dtsim catalog models|gpus|links|frameworks`: the catalogs as tables with their figures and sources.
#pragma once

namespace dtsim {

// argc/argv start at the subcommand's name. Returns the exit status; bad input throws InputError.
int catalog_command(int argc, char** argv);

}  // namespace dtsim
