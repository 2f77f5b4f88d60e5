"""The file formats this package reads and their versions; opening a file checks both, so a file
from another dtsim version fails with a message saying which version it is and which is read."""
import h5py

from .tables import text

TRACE_FORMAT, TRACE_FORMAT_VERSION = "dtsim-trace", 2
SWEEP_FORMAT, SWEEP_FORMAT_VERSION = "dtsim-sweep", 1
ADVISE_FORMAT, ADVISE_FORMAT_VERSION = "dtsim-advise", 1
_VERSIONS = {TRACE_FORMAT: TRACE_FORMAT_VERSION, SWEEP_FORMAT: SWEEP_FORMAT_VERSION,
             ADVISE_FORMAT: ADVISE_FORMAT_VERSION}


class FormatError(ValueError):
    """The file is not a dtsim trace, sweep or advise table, or has a format_version this package does not read."""


def open_checked(path: str):
    """(open h5py.File, its format name); raises FormatError naming the file."""
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise FormatError(f"{path}: cannot open as HDF5 ({e})") from e
    found = text(f.attrs.get("format", ""))
    version = int(f.attrs.get("format_version", -1))
    if found not in _VERSIONS:
        f.close()
        raise FormatError(f"{path}: not a dtsim file (format attribute is '{found}', "
                          f"expected '{TRACE_FORMAT}', '{SWEEP_FORMAT}' or '{ADVISE_FORMAT}')")
    if version != _VERSIONS[found]:
        f.close()
        raise FormatError(f"{path}: {found} format_version {version} is not supported "
                          f"(this package reads version {_VERSIONS[found]}); re-run dtsim or update analysis/")
    return f, found
