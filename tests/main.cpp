// Catch2 entry point for the dtsim test binary.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
