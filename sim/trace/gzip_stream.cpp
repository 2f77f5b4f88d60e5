// GzipStreambuf (see gzip_stream.hpp): input gathered in 1 MiB, deflated at zlib's default level
// with a gzip wrapper (windowBits 15 + 16) into 1 MiB output chunks written to the sink.
#include "sim/trace/gzip_stream.hpp"

#include <stdexcept>

namespace dtsim {
namespace {
constexpr std::size_t kChunk = 1 << 20;
}  // namespace

GzipStreambuf::GzipStreambuf(std::ostream& sink) : sink_(sink), in_(kChunk), out_(kChunk) {
  if (deflateInit2(&z_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("zlib: deflateInit2 failed");
  setp(in_.data(), in_.data() + in_.size());
}

GzipStreambuf::~GzipStreambuf() { deflateEnd(&z_); }

void GzipStreambuf::deflate_pending(int flush) {
  z_.next_in = reinterpret_cast<Bytef*>(pbase());
  z_.avail_in = static_cast<uInt>(pptr() - pbase());
  int status = Z_OK;
  do {
    z_.next_out = reinterpret_cast<Bytef*>(out_.data());
    z_.avail_out = static_cast<uInt>(out_.size());
    status = deflate(&z_, flush);
    if (status == Z_STREAM_ERROR) throw std::runtime_error("zlib: deflate failed");
    sink_.write(out_.data(), static_cast<std::streamsize>(out_.size() - z_.avail_out));
  } while (z_.avail_out == 0 || (flush == Z_FINISH && status != Z_STREAM_END));
  setp(in_.data(), in_.data() + in_.size());
}

GzipStreambuf::int_type GzipStreambuf::overflow(int_type ch) {
  if (finished_) return traits_type::eof();
  deflate_pending(Z_NO_FLUSH);
  if (!traits_type::eq_int_type(ch, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(ch);
    pbump(1);
  }
  return sink_ ? traits_type::not_eof(ch) : traits_type::eof();
}

int GzipStreambuf::sync() { return sink_ ? 0 : -1; }

void GzipStreambuf::finish() {
  if (finished_) return;
  deflate_pending(Z_FINISH);
  finished_ = true;
  sink_.flush();
}

}  // namespace dtsim
