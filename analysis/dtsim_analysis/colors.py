"""One colour per state and memory category, shared by every plot (and matching the categories
the Chrome export colours: compute green, memory-bound orange, communication blue)."""

STATE_COLORS = {
    "compute": "#2ca02c",
    "memory": "#ff7f0e",
    "communication": "#1f77b4",
    "exposed_comm": "#9ecae1",
    "bubble": "#d62728",
    "idle": "#c7c7c7",
}
STATE_LABELS = {
    "compute": "compute-bound",
    "memory": "memory-bound",
    "communication": "communication",
    "exposed_comm": "waiting on communication",
    "bubble": "pipeline bubble",
    "idle": "idle",
}
MEMORY_CATEGORIES = ["weights", "gradients", "optimizer", "activations", "buffers"]
MEMORY_COLORS = dict(zip(MEMORY_CATEGORIES, ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"]))
