// The annotated starting scenario `dtsim run --template` prints: Llama-3-8B on 2 nodes of 8
// H100 with Megatron-Core, every key a newcomer changes first, each with what it means. A test
// runs it.
#pragma once

namespace dtsim {

constexpr const char* kScenarioTemplate =
    "# A starting scenario (dtsim run --template > my.ini; dtsim run my.ini). Every key not written\n"
    "# here takes its default: `dtsim run --help` lists them all, docs/scenario-keys.md explains them.\n"
    "\n"
    "[model]\n"
    "name = llama3-8b              # a catalog model (dtsim catalog models), or `custom` with layers, hidden, ...\n"
    "\n"
    "[training]\n"
    "framework = megatron-core     # how the step executes (dtsim catalog frameworks)\n"
    "global_batch = 256            # sequences per step, a multiple of micro_batch x dp\n"
    "micro_batch = 1               # sequences per forward/backward pass\n"
    "precision = bf16              # fp16, bf16 or fp8\n"
    "recompute = selective         # none, selective or full activation recomputation\n"
    "\n"
    "[parallel]\n"
    "tp = 2                        # tensor parallel: GPUs splitting each layer (within a node)\n"
    "pp = 2                        # pipeline stages (layers split evenly; stage_layers to choose)\n"
    "dp = 4                        # data parallel replicas: tp x pp x dp = the cluster's GPUs\n"
    "zero_stage = 1                # 0-3: what data parallelism shards (optimizer, gradients, weights)\n"
    "\n"
    "[cluster]\n"
    "gpu = H100-SXM5-80GB          # a catalog GPU (dtsim catalog gpus)\n"
    "nodes = 2\n"
    "gpus_per_node = 8\n"
    "node_kind = nvswitch          # nvswitch, pcie, nvlink_pairs, or nvl72 (a rack of 72 GPUs)\n"
    "nics_per_node = 8             # NICs per node, each nic_gbps Gbit/s (fabric: fat_tree, rail, clos3)\n"
    "nic_gbps = 400\n"
    "nic_kind = infiniband         # infiniband, omnipath or ethernet (RoCE)\n";

}  // namespace dtsim
