// The MPI sweep (see mpi.hpp). Messages: a worker sends kReady with its last result (empty
// the first time); rank 0 answers kWork with the slot of the next point in `points`, or kStop.
// A result travels as bytes: slot, status, message, then the Summary fields in visit_summary
// order; rank 0 fills in the axis values from the point index.
#include "sim/sweep/mpi.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "sim/trace/hdf5_sink.hpp"

namespace dtsim {
namespace {

constexpr int kReady = 1, kWork = 2, kStop = 3;

template <class T>
void put(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <class T>
T get(const std::string& in, std::size_t& at) {
  T value;
  std::memcpy(&value, in.data() + at, sizeof value);
  at += sizeof value;
  return value;
}

std::string encode(std::int64_t slot, const PointResult& r) {
  std::string out;
  put(out, slot);
  put(out, static_cast<std::int32_t>(r.status));
  put(out, static_cast<std::uint64_t>(r.message.size()));
  out += r.message;
  trace_h5::visit_summary(r.summary, [&](const char*, const auto& value) { put(out, value); });
  return out;
}

std::int64_t decode(const std::string& in, PointResult& r) {
  std::size_t at = 0;
  const auto slot = get<std::int64_t>(in, at);
  r.status = static_cast<PointStatus>(get<std::int32_t>(in, at));
  const auto length = get<std::uint64_t>(in, at);
  r.message = in.substr(at, length);
  at += length;
  trace_h5::visit_summary(r.summary, [&](const char*, auto& value) { value = get<std::decay_t<decltype(value)>>(in, at); });
  return slot;
}

std::vector<PointResult> coordinate(const MpiSession& mpi, const SweepPlan& plan,
                                    const std::vector<std::int64_t>& points, const PointDone& on_done) {
  std::vector<PointResult> results(points.size());
  std::size_t next = 0;
  for (int active = mpi.size() - 1; active > 0;) {
    MPI_Status status;
    MPI_Probe(MPI_ANY_SOURCE, kReady, MPI_COMM_WORLD, &status);
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    std::string message(static_cast<std::size_t>(bytes), '\0');
    MPI_Recv(message.data(), bytes, MPI_BYTE, status.MPI_SOURCE, kReady, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (bytes > 0) {
      PointResult r;
      const std::int64_t slot = decode(message, r);
      r.point = points[static_cast<std::size_t>(slot)];
      r.values = plan.spec.values_at(r.point);
      results[static_cast<std::size_t>(slot)] = std::move(r);
      on_done(results[static_cast<std::size_t>(slot)]);
    }
    if (next < points.size()) {
      const auto slot = static_cast<std::int64_t>(next++);
      MPI_Send(&slot, 1, MPI_INT64_T, status.MPI_SOURCE, kWork, MPI_COMM_WORLD);
    } else {
      MPI_Send(nullptr, 0, MPI_BYTE, status.MPI_SOURCE, kStop, MPI_COMM_WORLD);
      --active;
    }
  }
  return results;
}

void work(const SweepPlan& plan, const std::vector<std::int64_t>& points) {
  std::string result;
  for (;;) {
    MPI_Send(result.data(), static_cast<int>(result.size()), MPI_BYTE, 0, kReady, MPI_COMM_WORLD);
    MPI_Status status;
    MPI_Probe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
    if (status.MPI_TAG == kStop) {
      MPI_Recv(nullptr, 0, MPI_BYTE, 0, kStop, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      return;
    }
    std::int64_t slot = 0;
    MPI_Recv(&slot, 1, MPI_INT64_T, 0, kWork, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    result = encode(slot, run_point(plan, points[static_cast<std::size_t>(slot)]));
  }
}

}  // namespace

MpiSession::MpiSession() {
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

std::vector<PointResult> run_points_mpi(const MpiSession& mpi, const SweepPlan& plan,
                                        const std::vector<std::int64_t>& points, const PointDone& on_done) {
  if (mpi.rank() == 0) return coordinate(mpi, plan, points, on_done);
  try {
    work(plan, points);
  } catch (const std::exception& e) {
    std::cerr << fmt::format("dtsim sweep: MPI rank {}: {}\n", mpi.rank(), e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return {};
}

}  // namespace dtsim
