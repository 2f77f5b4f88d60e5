"""Reads a dtsim HDF5 file into pandas tables: a trace ("dtsim-trace" version 2) or a sweep
("dtsim-sweep" version 1, see sweep.py).

    import dtsim_analysis as dta
    t = dta.load("run.h5")
    t.summary["step_time_s"], t.events.groupby("op").duration_s.sum(), t.ranks, t.memory

Event codes (stream, category, phase, op) are turned into their names using the attributes the
file stores, so nothing here has to be kept in step with the C++ enums.
"""
from dataclasses import dataclass, field

import pandas as pd

from .formats import SWEEP_FORMAT, open_checked
from .sweep import read_sweep
from .tables import decoded, text


def _empty() -> pd.DataFrame:
    return pd.DataFrame()


@dataclass
class Trace:
    path: str
    scenario: str = ""                                     # resolved scenario, one `key = value` a line
    summary: pd.Series = field(default_factory=lambda: pd.Series(dtype=object))  # /summary attributes by name
    events: pd.DataFrame = field(default_factory=_empty)
    memory: pd.DataFrame = field(default_factory=_empty)
    ranks: pd.DataFrame = field(default_factory=_empty)
    devices: pd.DataFrame = field(default_factory=_empty)
    links: pd.DataFrame = field(default_factory=_empty)
    sweep: pd.DataFrame = field(default_factory=_empty)    # the /sweep table when the file has one

    def scenario_value(self, key: str) -> str:
        """The resolved value of a scenario key such as "cluster.gpu"."""
        section, name = key.split(".", 1)
        current = ""
        for line in self.scenario.splitlines():
            line = line.strip()
            if line.startswith("[") and line.endswith("]"):
                current = line[1:-1]
            elif "=" in line:
                k, v = (part.strip() for part in line.split("=", 1))
                if current == section and k == name:
                    return v
        raise KeyError(f"{self.path}: scenario has no key '{key}'")


def _events(dataset) -> pd.DataFrame:
    events = decoded(dataset[:])
    for column, attribute in (("stream", "stream_names"), ("category", "category_names"),
                              ("phase", "phase_names"), ("op", "op_names")):
        names = text(dataset.attrs[attribute]).split(",")
        events[column] = pd.Categorical.from_codes(events[column].astype(int), categories=names)
    events["duration_s"] = (events["end_ns"] - events["start_ns"]) * 1e-9
    return events


def load(path: str) -> Trace:
    """Loads a trace or a sweep file; raises FormatError on anything else or another version."""
    f, kind = open_checked(path)
    with f:
        sweep = read_sweep(f["sweep"], path) if "sweep" in f else _empty()
        if kind == SWEEP_FORMAT:
            return Trace(path=path, sweep=sweep)
        return Trace(
            path=path,
            scenario=text(f.attrs["scenario"]),
            summary=pd.Series({k: (v.item() if hasattr(v, "item") else v) for k, v in f["summary"].attrs.items()},
                              dtype=object),
            events=_events(f["events"]),
            memory=decoded(f["memory"][:]),
            ranks=decoded(f["ranks"][:]),
            devices=decoded(f["topology/devices"][:]),
            links=decoded(f["links"][:]),
            sweep=sweep,
        )


def time_by_op(trace: Trace) -> pd.DataFrame:
    """Seconds per op kind and phase on the compute stream of each traced rank."""
    compute = trace.events[trace.events["stream"] == "compute"]
    return compute.groupby(["rank", "phase", "op"], observed=True)["duration_s"].sum().unstack("phase")
