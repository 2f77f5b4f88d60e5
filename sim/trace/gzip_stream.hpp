// A gzip (RFC 1952) compressing output stream over another stream, with zlib: what is written to
// it reaches the underlying stream deflated; finish() writes the end of the gzip member. Used by
// `dtsim export` for OUT.json.gz (Perfetto opens gzip'd JSON traces).
#pragma once
#include <zlib.h>

#include <ostream>
#include <streambuf>
#include <vector>

namespace dtsim {

class GzipStreambuf final : public std::streambuf {
 public:
  explicit GzipStreambuf(std::ostream& sink);
  ~GzipStreambuf() override;
  GzipStreambuf(const GzipStreambuf&) = delete;
  GzipStreambuf& operator=(const GzipStreambuf&) = delete;
  // Compresses what is buffered and ends the gzip member; nothing may be written after it.
  void finish();

 protected:
  int_type overflow(int_type ch) override;
  int sync() override;

 private:
  // Deflates the pending input with `flush` (Z_NO_FLUSH or Z_FINISH) into the sink.
  void deflate_pending(int flush);

  std::ostream& sink_;
  z_stream z_{};
  std::vector<char> in_, out_;
  bool finished_ = false;
};

}  // namespace dtsim
