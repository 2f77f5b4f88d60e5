// `dtsim fit`: the memory a model needs for inference or training and the GPUs that hold it,
// or with --seed-table the GPU guide's VRAM table checked against it.
#pragma once

namespace dtsim {

// argc/argv start at the subcommand's name. Returns the exit status; bad input throws InputError.
int fit_command(int argc, char** argv);

}  // namespace dtsim
