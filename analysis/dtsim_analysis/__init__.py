"""dtsim_analysis: read dtsim traces and sweeps into pandas and plot them (README "Folders").

    import dtsim_analysis as dta
    t = dta.load("bloom.h5")
    dta.plot_timeline(t); dta.plot_breakdown(t); dta.plot_memory(t); dta.plot_links(t)
"""
from . import colors
from .advise import load_advise
from .breakdown import plot_breakdown, stage_breakdown
from .formats import FormatError
from .links_plot import link_utilisation, plot_links
from .memory_plot import capacity_gib, memory_timeline, peak_rank, plot_memory
from .runner import dtsim_binary, run_dtsim
from .states import STATES, compute_states, state_seconds
from .sweep import load_sweep
from .sweep_plot import plot_sweep, plot_sweep_heatmap, sweep_grid
from .timeline import plot_timeline, timeline_rows
from .trace import Trace, load, time_by_op

__all__ = ["FormatError", "STATES", "Trace", "capacity_gib", "colors", "compute_states", "dtsim_binary",
           "link_utilisation", "load", "load_advise", "load_sweep", "memory_timeline", "peak_rank", "plot_breakdown",
           "plot_links", "plot_memory", "plot_sweep", "plot_sweep_heatmap", "plot_timeline", "run_dtsim",
           "stage_breakdown", "state_seconds", "sweep_grid", "time_by_op", "timeline_rows"]
