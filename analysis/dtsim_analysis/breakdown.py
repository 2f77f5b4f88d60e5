"""Where the step goes, per pipeline stage: the mean seconds a rank of each stage spends in each
compute-stream state (from /ranks, so every rank counts, traced or not)."""
import matplotlib.pyplot as plt

from .colors import STATE_COLORS, STATE_LABELS

COLUMNS = {"compute": "compute_s", "memory": "memory_bound_s", "exposed_comm": "exposed_comm_s",
           "bubble": "bubble_s", "idle": "idle_s"}


def stage_breakdown(trace):
    """Mean seconds per rank of each stage (rows: pp) in each state (columns); rows sum to the step time."""
    frame = trace.ranks.groupby("pp")[list(COLUMNS.values())].mean()
    return frame.rename(columns={v: k for k, v in COLUMNS.items()})


def plot_breakdown(trace, ax=None):
    """Stacked bar per pipeline stage of stage_breakdown(). Returns the Axes."""
    frame = stage_breakdown(trace)
    if ax is None:
        _, ax = plt.subplots(figsize=(max(6, 0.6 * len(frame) + 3), 4))
    bottom = 0
    for state in frame.columns:
        ax.bar(frame.index, frame[state], bottom=bottom, color=STATE_COLORS[state], label=STATE_LABELS[state])
        bottom = bottom + frame[state]
    ax.set_xticks(frame.index)
    ax.set_xlabel("pipeline stage")
    ax.set_ylabel("seconds of the step")
    ax.set_title(f"time breakdown per stage (step {trace.summary['step_time_s']:.3f} s)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1), fontsize=8, frameon=False)
    return ax
