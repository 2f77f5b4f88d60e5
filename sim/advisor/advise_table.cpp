// Writing the /advise table (see advise_table.hpp).
#include "sim/advisor/advise_table.hpp"

#include <fmt/format.h>

#include <cstddef>

#include "sim/base/safe_write.hpp"
#include "sim/trace/hdf5_util.hpp"

namespace dtsim {
namespace {

using trace_h5::check;
using trace_h5::Handle;

constexpr const char* kFormat = "dtsim-advise";
constexpr int kFormatVersion = 1;

struct Row {
  std::int32_t rank;
  const char *gpu, *role;
  std::int32_t num_gpus, nodes, gpus_per_node, tp, pp, dp, ep, micro_batch;
  const char* recompute;
  std::int32_t zero_stage;
  const char* node_kind;
  std::int32_t nics_per_node;
  double nic_gbps, fit_gib, estimate_s;
  const char *status, *message;
  double step_time_s, tokens_per_s, mfu, peak_memory_gib, train_days, gpu_hours, cost_usd;
};

Handle row_type() {
  Handle str = trace_h5::string_type();
  Handle t(H5Tcreate(H5T_COMPOUND, sizeof(Row)), H5Tclose);
  const auto i32 = [&](const char* name, std::size_t off) { H5Tinsert(t.get(), name, off, H5T_NATIVE_INT32); };
  const auto f64 = [&](const char* name, std::size_t off) { H5Tinsert(t.get(), name, off, H5T_NATIVE_DOUBLE); };
  const auto s = [&](const char* name, std::size_t off) { H5Tinsert(t.get(), name, off, str.get()); };
  i32("rank", offsetof(Row, rank));
  s("gpu", offsetof(Row, gpu));
  s("role", offsetof(Row, role));
  i32("num_gpus", offsetof(Row, num_gpus));
  i32("nodes", offsetof(Row, nodes));
  i32("gpus_per_node", offsetof(Row, gpus_per_node));
  i32("tp", offsetof(Row, tp));
  i32("pp", offsetof(Row, pp));
  i32("dp", offsetof(Row, dp));
  i32("ep", offsetof(Row, ep));
  i32("micro_batch", offsetof(Row, micro_batch));
  s("recompute", offsetof(Row, recompute));
  i32("zero_stage", offsetof(Row, zero_stage));
  s("node_kind", offsetof(Row, node_kind));
  i32("nics_per_node", offsetof(Row, nics_per_node));
  f64("nic_gbps", offsetof(Row, nic_gbps));
  f64("fit_gib", offsetof(Row, fit_gib));
  f64("estimate_s", offsetof(Row, estimate_s));
  s("status", offsetof(Row, status));
  s("message", offsetof(Row, message));
  f64("step_time_s", offsetof(Row, step_time_s));
  f64("tokens_per_s", offsetof(Row, tokens_per_s));
  f64("mfu", offsetof(Row, mfu));
  f64("peak_memory_gib", offsetof(Row, peak_memory_gib));
  f64("train_days", offsetof(Row, train_days));
  f64("gpu_hours", offsetof(Row, gpu_hours));
  f64("cost_usd", offsetof(Row, cost_usd));
  return t;
}

void write(const AdviseResult& res, hid_t file, const std::string& path) {
  Handle root(check(H5Gopen2(file, "/", H5P_DEFAULT), path, "opening '/'"), H5Gclose);
  trace_h5::write_string_attr(root.get(), "format", kFormat, path);
  trace_h5::write_attr(root.get(), "format_version", H5T_NATIVE_INT, &kFormatVersion, path);
  trace_h5::write_string_attr(root.get(), "dtsim_version", DTSIM_VERSION, path);
  trace_h5::write_string_attr(root.get(), "model", res.model, path);
  trace_h5::write_string_attr(root.get(), "ranked_by", res.ranked_by, path);
  trace_h5::write_attr(root.get(), "tokens", H5T_NATIVE_DOUBLE, &res.tokens, path);
  trace_h5::write_attr(root.get(), "global_batch", H5T_NATIVE_INT, &res.global_batch, path);
  trace_h5::write_attr(root.get(), "seq_len", H5T_NATIVE_INT, &res.seq_len, path);
  std::vector<std::string> recompute, status;
  for (const AdviseRow& r : res.rows) {
    recompute.emplace_back(recompute_name(r.recompute));
    status.emplace_back(point_status_name(r.status));
  }
  std::vector<Row> rows;
  for (std::size_t i = 0; i < res.rows.size(); ++i) {
    const AdviseRow& r = res.rows[i];
    rows.push_back(Row{r.rank, r.gpu.c_str(), r.role.c_str(), r.num_gpus(), r.nodes, r.gpus_per_node, r.tp, r.pp, r.dp,
                       r.ep, r.micro_batch, recompute[i].c_str(), r.zero_stage, r.node_kind.c_str(), r.nics_per_node,
                       r.nic_gbps, r.fit_gib, r.estimate_s, status[i].c_str(), r.message.c_str(), r.summary.step_time_s,
                       r.summary.tokens_per_s, r.summary.mfu, r.summary.peak_memory_gib, r.train_s / 86400,
                       r.gpu_hours, r.cost_usd});
  }
  Handle type = row_type();
  trace_h5::write_table(file, "advise", type.get(), rows.data(), rows.size(), path);
}

}  // namespace

void save_advise_table(const AdviseResult& res, const std::string& path) {
  Handle file;
  TempFile temp(path, fmt::format("HDF5 file '{}'", path), [&](const std::string& name) {
    file = trace_h5::create_file(name, path);
    return file.get() >= 0;
  });
  write(res, file.get(), path);
  check(file.reset(), path, "closing the file");
  temp.commit();
}

}  // namespace dtsim
