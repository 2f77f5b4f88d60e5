"""Tests of analysis/dtsim_analysis on the tiny scenario (every rank traced): loading and the
format check, the compute-stream states against /ranks, and the numbers the plots draw against
the summary. Run by CTest as analysis_package with the dtsim binary as argument."""
import os
import shutil
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import h5py  # noqa: E402
import numpy as np  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "analysis"))
import dtsim_analysis as dta  # noqa: E402


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-30)


def check_load(t):
    assert t.summary["num_gpus"] == 8, t.summary
    assert len(t.ranks) == 8
    assert set(t.events["rank"]) == set(range(8))
    assert {"qkv_proj", "tp_all_reduce", "pp_send", "optimizer_step"} <= set(t.events["op"].astype(str))
    assert (t.events["duration_s"] >= 0).all()
    assert len(t.events) == t.summary["events"]
    assert t.scenario_value("parallel.tp") == "2" and t.scenario_value("cluster.gpu") == "A100-SXM4-80GB"
    assert not dta.time_by_op(t).empty
    assert t.sweep.empty


def check_format_errors(path, tmp):
    wrong = os.path.join(tmp, "wrong.h5")
    shutil.copy(path, wrong)
    with h5py.File(wrong, "r+") as f:
        f.attrs["format_version"] = 1
    try:
        dta.load(wrong)
        raise AssertionError("a version 1 file loaded")
    except dta.FormatError as e:
        assert wrong in str(e) and "format_version 1" in str(e) and "version 2" in str(e), e
    other = os.path.join(tmp, "other.h5")
    with h5py.File(other, "w") as f:
        f.attrs["format"] = "something-else"
    try:
        dta.load(other)
        raise AssertionError("a foreign file loaded")
    except dta.FormatError as e:
        assert other in str(e) and "something-else" in str(e), e


def check_states(t):
    # The compute-stream states rebuilt from the events equal the engine's per-rank accounting.
    seconds = dta.state_seconds(dta.compute_states(t))
    ranks = t.ranks.set_index("rank")
    for state, column in (("compute", "compute_s"), ("memory", "memory_bound_s"), ("exposed_comm", "exposed_comm_s"),
                          ("bubble", "bubble_s"), ("idle", "idle_s")):
        for rank in ranks.index:
            assert abs(seconds.loc[rank, state] - ranks.loc[rank, column]) < 1e-9, (rank, state)
    assert seconds.loc[4, "bubble"] > 0  # the tiny pipeline has a bubble


def check_breakdown_plot(t):
    ax = dta.plot_breakdown(t)
    stages = sorted(t.ranks["pp"].unique())
    heights = {}
    for patch in ax.patches:
        stage = int(round(patch.get_x() + patch.get_width() / 2))
        heights.setdefault(stage, []).append(patch.get_height())
    step = t.summary["step_time_s"]
    assert sorted(heights) == stages
    for stage in stages:  # each stacked bar is one step
        assert close(sum(heights[stage]), step, 1e-6), (stage, heights[stage], step)
    # The compute segments, weighted by ranks per stage, give the summary's compute fraction.
    compute = [ax.patches[i].get_height() for i in range(len(stages))]
    per_stage = t.ranks.groupby("pp").size().to_numpy()
    assert close(float(np.dot(compute, per_stage)) / (step * len(t.ranks)), t.summary["compute"], 1e-6)
    matplotlib.pyplot.close(ax.figure)


def check_memory_plot(t):
    ax = dta.plot_memory(t)
    capacity = [line for line in ax.lines if line.get_linestyle() == "--"][0]
    assert close(capacity.get_ydata()[0], t.summary["oom_capacity_gib"])
    peak = [line for line in ax.lines if line.get_marker() == "v"][0]
    assert close(peak.get_ydata()[0], t.summary["peak_memory_gib"], 1e-9), (peak.get_ydata(), t.summary)
    matplotlib.pyplot.close(ax.figure)


def check_timeline_plot(t):
    ax = dta.plot_timeline(t)
    assert ax.get_xlim() == (0, t.summary["step_time_s"])
    rows = dta.timeline_rows(t)
    bubble_color = matplotlib.colors.to_rgba(dta.colors.STATE_COLORS["bubble"])
    bubbles = [c for c in ax.collections if tuple(c.get_facecolor()[0]) == bubble_color][0]
    widths = {}
    for path in bubbles.get_paths():
        x, y = path.vertices[:, 0], path.vertices[:, 1]
        row = int(round(y.mean()))
        widths[row] = widths.get(row, 0) + x.max() - x.min()
    ranks = t.ranks.set_index("rank")
    for row, width in widths.items():
        rank, stream = rows[row]
        assert stream == "compute"
        assert abs(width - ranks.loc[rank, "bubble_s"]) < 1e-9, (rank, width)
    assert len(widths) == len(ranks)
    matplotlib.pyplot.close(ax.figure)


def check_links_plot(t):
    ax = dta.plot_links(t, top=5)
    links = t.links
    hottest = (links["bytes"] / links["bandwidth_bytes_per_s"]).max() / t.summary["step_time_s"] * 100
    assert close(ax.patches[0].get_width(), hottest)
    assert len(ax.patches) == 5
    matplotlib.pyplot.close(ax.figure)


binary = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "tiny.h5")
    summary = dta.run_dtsim(path, os.path.join(here, "..", "scenarios", "tests", "tiny-pipeline.ini"),
                            {"output.trace_detail": "all"}, binary=binary)
    t = dta.load(path)
    assert close(summary["step_time_s"], t.summary["step_time_s"])
    check_load(t)
    check_format_errors(path, tmp)
    check_states(t)
    check_breakdown_plot(t)
    check_memory_plot(t)
    check_timeline_plot(t)
    check_links_plot(t)
    try:
        dta.run_dtsim(path, "no-such.ini", binary=binary)
        raise AssertionError("a missing scenario ran")
    except RuntimeError as e:
        assert "no-such.ini" in str(e), e
print("analysis package: ok")
