// One simulated inference batch from a scenario (dtsim serve): builds the cluster and the
// inference program (prefill, then decode iterations at a few context lengths), runs it on the
// engine that runs training steps, and turns the traced rank's ops into latency, throughput, the
// KV-cache capacity and where decode time goes.
#pragma once
#include <string>
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/scenario/scenario.hpp"

namespace dtsim {

// A pass's time and its parts (seconds): weights streamed by the linear layers, the KV cache read
// by attention, TP communication, kernel launch gaps, and the other kernels (norms, rotary,
// activations, residuals, embedding; also any wait between ops).
struct PassTime {
  int context = 0;  // tokens attended to (decode), 0 for the prefill
  double total_s = 0, weights_s = 0, kv_s = 0, comm_s = 0, launch_s = 0, other_s = 0;
};

struct ServeResult {
  int gpus = 0;
  int tp = 1, pp = 1;           // TP inside each of pp pipeline stages (tp x pp = gpus)
  PassTime prefill;             // launch gaps included as an eager prefill pays them
  std::vector<PassTime> decode;  // the simulated decode iterations per token (one CUDA-graph launch each when on)
  std::vector<double> step_s;    // their whole steps: with speculation, drafts and verification
  double tokens_per_step = 1;    // tokens a step yields per sequence (speculative decoding: above 1)
  PassTime tpot;                // decode steps integrated over the output (trapezoid rule), per token
  double ttft_s = 0;            // the prefill pass, which yields the first token
  double request_s = 0;         // ttft + (output - 1) x tpot
  double decode_tokens_per_s = 0;  // batch / tpot, all GPUs
  double request_tokens_per_s = 0;  // batch x output / request_s, all GPUs
  double weight_floor_s = 0;     // weights a decode step streams on a GPU / its HBM rate, per token: no token is faster
  MemoryNeed memory;             // per GPU: weights, kv_cache (the batch's), activations, overhead
  double gpu_bytes = 0;          // one GPU's memory
  double kv_token_bytes = 0;     // KV cache of one token on one GPU
  double kv_capacity_tokens = 0;     // tokens the memory left after weights, activations and overhead holds
  double kv_capacity_sequences = 0;  // of prompt + output tokens each
  bool fits = true;              // the batch's KV cache fits in that memory
  EngineResult engine;           // the whole program's run (links, ranks, summary)
};

// Runs the scenario's [inference] setup (sc.inference; load it with Workload::inference) over all
// the cluster's GPUs: parallel.pp pipeline stages (default 1), TP inside each. Writes the HDF5
// trace to trace_path when it is not empty. Throws InputError on bad input (dp above 1, tp x pp not
// the GPU count, a model it cannot split).
ServeResult run_serve(Scenario& sc, const std::string& trace_path, int threads = 1);

}  // namespace dtsim
