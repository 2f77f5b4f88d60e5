"""What each traced rank's compute stream is doing at every moment of the step, as segments:
`compute` and `memory` (a compute- or memory-bound kernel runs), `bubble` (waiting for a pipeline
receive), `exposed_comm` (waiting for a collective or send), `idle` (after the rank's last op).

The engine attributes a gap before a kernel to the event that let the kernel start: a gap that
ends when a pipeline receive of the rank completes is bubble, any other gap is exposed
communication (README "How the step is modelled"). The same rule is applied here to the events,
so the totals per rank equal the /ranks columns compute_s ... idle_s.
"""
import numpy as np
import pandas as pd

STATES = ["compute", "memory", "exposed_comm", "bubble", "idle"]


def step_ns(trace) -> int:
    return int(round(trace.summary["step_time_s"] * 1e9))


def compute_states(trace) -> pd.DataFrame:
    """Segments (rank, state, start_ns, end_ns) covering [0, step] for every traced rank."""
    events = trace.events
    kernels = events[events["stream"] == "compute"].sort_values(["rank", "start_ns"])
    # A gap ended by a pipeline message (its receive, or the TP all-gather of a scattered one).
    pipeline = events["op"].isin(["pp_recv", "pp_all_gather"])
    recv_ends = set(zip(events.loc[pipeline, "rank"], events.loc[pipeline, "end_ns"]))
    parts = [pd.DataFrame({"rank": kernels["rank"].to_numpy(), "state": kernels["category"].astype(str).to_numpy(),
                           "start_ns": kernels["start_ns"].to_numpy(), "end_ns": kernels["end_ns"].to_numpy()})]
    end = step_ns(trace)
    for rank, ops in kernels.groupby("rank"):
        starts = ops["start_ns"].to_numpy()
        ends = ops["end_ns"].to_numpy()
        gap_from = np.concatenate(([0], ends[:-1]))
        has_gap = starts > gap_from
        gap_to = starts[has_gap]
        state = ["bubble" if (rank, t) in recv_ends else "exposed_comm" for t in gap_to]
        parts.append(pd.DataFrame({"rank": rank, "state": state, "start_ns": gap_from[has_gap], "end_ns": gap_to}))
        if ends[-1] < end:
            parts.append(pd.DataFrame({"rank": [rank], "state": ["idle"], "start_ns": [ends[-1]], "end_ns": [end]}))
    segments = pd.concat(parts, ignore_index=True)
    segments["state"] = pd.Categorical(segments["state"], categories=STATES)
    return segments.sort_values(["rank", "start_ns"], ignore_index=True)


def state_seconds(segments: pd.DataFrame) -> pd.DataFrame:
    """Seconds per rank (rows) and state (columns) of compute_states() segments."""
    seconds = (segments["end_ns"] - segments["start_ns"]) * 1e-9
    return seconds.groupby([segments["rank"], segments["state"]], observed=False).sum().unstack("state")[STATES]
