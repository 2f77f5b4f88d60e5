"""Reads a dtsim HDF5 trace (format "dtsim-trace", version 2) into pandas tables.

    from dtsim_trace import load
    t = load("run.h5")
    t.summary["step_time_s"], t.events.groupby("op").duration_s.sum(), t.ranks, t.memory

Event codes (stream, category, phase, op) are turned into their names using the attributes the
file stores, so nothing here has to be kept in step with the C++ enums.
"""
from dataclasses import dataclass

import h5py
import pandas as pd

FORMAT = "dtsim-trace"
FORMAT_VERSION = 2


@dataclass
class Trace:
    scenario: str
    summary: dict
    events: pd.DataFrame
    memory: pd.DataFrame
    ranks: pd.DataFrame
    devices: pd.DataFrame
    links: pd.DataFrame


def _table(dataset) -> pd.DataFrame:
    frame = pd.DataFrame(dataset[:])
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].map(lambda v: v.decode() if isinstance(v, bytes) else v)
    return frame


def _names(dataset, attribute):
    value = dataset.attrs[attribute]
    return (value.decode() if isinstance(value, bytes) else value).split(",")


def load(path: str) -> Trace:
    with h5py.File(path, "r") as f:
        if f.attrs.get("format") != FORMAT or int(f.attrs.get("format_version", -1)) != FORMAT_VERSION:
            raise ValueError(f"{path}: not a {FORMAT} version {FORMAT_VERSION} file")
        events = _table(f["events"])
        for column, attribute in (("stream", "stream_names"), ("category", "category_names"),
                                  ("phase", "phase_names"), ("op", "op_names")):
            names = _names(f["events"], attribute)
            events[column] = pd.Categorical.from_codes(events[column].astype(int), categories=names)
        events["duration_s"] = (events["end_ns"] - events["start_ns"]) * 1e-9
        return Trace(
            scenario=f.attrs["scenario"],
            summary={k: (v.item() if hasattr(v, "item") else v) for k, v in f["summary"].attrs.items()},
            events=events,
            memory=_table(f["memory"]),
            ranks=_table(f["ranks"]),
            devices=_table(f["topology/devices"]),
            links=_table(f["links"]),
        )


def time_by_op(trace: Trace) -> pd.DataFrame:
    """Seconds per op kind and phase on the compute stream of each traced rank."""
    compute = trace.events[trace.events["stream"] == "compute"]
    return compute.groupby(["rank", "phase", "op"], observed=True)["duration_s"].sum().unstack("phase")
