"""Runs the dtsim binary from Python (notebooks make the traces they need with it):
`run_dtsim("run.h5", "scenarios/gpt2-xl-2x3090.ini", {"cluster.gpu": "H100"})` runs one step,
writes the trace and returns the summary `dtsim run --json` prints (`oom` tells whether it fit).

The binary is `binary`, else $DTSIM_BINARY, else build/dtsim of this repository."""
import json
import os
import subprocess

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def dtsim_binary(binary=None) -> str:
    path = binary or os.environ.get("DTSIM_BINARY") or os.path.join(REPO, "build", "dtsim")
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"dtsim binary '{path}' not found; build it (README Quick start) or set DTSIM_BINARY")
    return path


def run_dtsim(output, scenario=None, overrides=None, binary=None) -> dict:
    """Simulates `scenario` (a path; None: the built-in BLOOM default) with `overrides`
    ({"section.key": value}) and writes the trace to `output`. Raises RuntimeError with dtsim's
    message on bad input."""
    command = [dtsim_binary(binary), "run"] + ([scenario] if scenario else [])
    command += [f"--{key}={value}" for key, value in (overrides or {}).items()]
    command += ["--output", output, "--json"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {done.stderr.strip()}")
    return json.loads(done.stdout)
