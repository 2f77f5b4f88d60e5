"""Memory in use on a rank over the step, stacked by category (weights, gradients, optimizer
state, activations, buffers), with the GPU's capacity as a line and the peak marked."""
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .colors import MEMORY_CATEGORIES, MEMORY_COLORS

GIB = 2.0 ** 30


def capacity_gib(trace) -> float:
    """The GPU memory of the run (the /summary attribute oom_capacity_gib, written for every run)."""
    return float(trace.summary["oom_capacity_gib"])


def memory_timeline(trace, rank) -> pd.DataFrame:
    """GiB in use on `rank` by category, indexed by time_s, one row per change (held until the next)."""
    rows = trace.memory[trace.memory["rank"] == rank].sort_values("time_ns", kind="stable")
    if rows.empty:
        raise ValueError(f"{trace.path}: rank {rank} has no memory rows (traced: {sorted(trace.memory['rank'].unique())})")
    frame = rows.set_index(rows["time_ns"] * 1e-9)[MEMORY_CATEGORIES] / GIB
    frame.index.name = "time_s"
    return frame


def peak_rank(trace) -> int:
    """The traced rank with the highest peak memory."""
    traced = trace.ranks[trace.ranks["rank"].isin(trace.memory["rank"].unique())]
    return int(traced.loc[traced["peak_memory_bytes"].idxmax(), "rank"])


def plot_memory(trace, rank=None, ax=None):
    """Stacked step plot of memory_timeline() for `rank` (default: peak_rank()). Returns the Axes."""
    rank = peak_rank(trace) if rank is None else rank
    frame = memory_timeline(trace, rank)
    if ax is None:
        _, ax = plt.subplots(figsize=(12, 4))
    step = trace.summary["step_time_s"]
    # Each value holds until the next change: draw steps by repeating every point.
    t = np.append(frame.index.to_numpy(), step)
    x = np.repeat(t, 2)[1:-1]
    ys = [np.repeat(frame[c].to_numpy(), 2) for c in MEMORY_CATEGORIES]
    ax.stackplot(x, ys, labels=MEMORY_CATEGORIES, colors=[MEMORY_COLORS[c] for c in MEMORY_CATEGORIES], linewidth=0)
    total = frame.sum(axis=1)
    capacity = capacity_gib(trace)
    ax.axhline(capacity, color="black", linestyle="--", linewidth=1, label=f"capacity {capacity:.0f} GiB")
    ax.plot([total.idxmax()], [total.max()], "v", color="black", label=f"peak {total.max():.1f} GiB")
    ax.set_xlim(0, step)
    ax.set_ylim(0, max(capacity, total.max()) * 1.05)
    ax.set_xlabel("time in the step (s)")
    ax.set_ylabel("GiB")
    stage = int(trace.ranks.set_index("rank").loc[rank, "pp"])
    ax.set_title(f"memory of rank {rank} (stage {stage})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1), fontsize=8, frameon=False)
    return ax
