"""Runs dtsim on the tiny scenario and reads the trace back with analysis/dtsim_trace.py."""
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "analysis"))
from dtsim_trace import load, time_by_op  # noqa: E402

binary = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "tiny.h5")
    subprocess.run([binary, "run", os.path.join(here, "..", "scenarios", "tests", "tiny-pipeline.ini"),
                    "--output", path, "--output.trace_detail=all"], check=True, stdout=subprocess.DEVNULL)
    t = load(path)
    assert t.summary["num_gpus"] == 8, t.summary
    assert len(t.ranks) == 8
    assert set(t.events["rank"]) == set(range(8))
    assert {"qkv_proj", "tp_all_reduce", "pp_send", "optimizer_step"} <= set(t.events["op"].astype(str))
    assert (t.events["duration_s"] >= 0).all()
    # The compute stream's busy time of a rank cannot exceed the step time.
    busy = t.events[t.events["stream"] == "compute"].groupby("rank")["duration_s"].sum()
    assert (busy <= t.summary["step_time_s"] * (1 + 1e-9)).all(), busy
    assert not time_by_op(t).empty
    assert "tp = 2" in t.scenario
print("analysis trace reader: ok")
