"""Reads the /sweep table of a dtsim sweep file (format "dtsim-sweep" version 1): one row per point
with `point`, one text column per axis (named by its scenario key, e.g. `cluster.nics_per_node`),
`status` (ok, oom, invalid), `message`, then the summary metrics (`step_time_s`, `mfu`, ...).
The dataset attribute `axes` lists the axis keys, comma-separated.

    s = load_sweep("sweep.h5")
    s.attrs["axes"]            # ["cluster.nics_per_node", ...]
    s[s.status == "ok"]
"""
import pandas as pd

from .formats import FormatError, open_checked
from .tables import decoded, text


def _numeric_if_possible(column: pd.Series) -> pd.Series:
    try:
        return pd.to_numeric(column)
    except (ValueError, TypeError):
        return column


def read_sweep(dataset, path: str) -> pd.DataFrame:
    """The /sweep dataset as a DataFrame; axis values become numbers where they all parse."""
    if "axes" not in dataset.attrs:
        raise FormatError(f"{path}: /sweep has no 'axes' attribute")
    axes = [a.strip() for a in text(dataset.attrs["axes"]).split(",") if a.strip()]
    frame = decoded(dataset[:])
    missing = [c for c in ["point", "status", "message", *axes] if c not in frame.columns]
    if missing:
        raise FormatError(f"{path}: /sweep lacks the columns {', '.join(missing)}")
    for axis in axes:
        frame[axis] = _numeric_if_possible(frame[axis])
    frame.attrs["axes"] = axes
    return frame


def load_sweep(path: str) -> pd.DataFrame:
    """The /sweep table of a file written by the sweep command."""
    f, _ = open_checked(path)
    with f:
        if "sweep" not in f:
            raise FormatError(f"{path}: the file has no /sweep table")
        return read_sweep(f["sweep"], path)
