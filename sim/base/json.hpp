// The one JSON writer of dtsim: every --json printer and the Chrome export build their text with
// these, so strings are escaped (quote, backslash, control characters) and non-finite numbers are
// written as null. A finite number is formatted exactly as fmt formats the double, with the same
// format spec (`{}`, `{:.6f}`), so JsonNumber can wrap a value in an existing format string.
#pragma once
#include <fmt/format.h>

#include <cmath>
#include <string>

namespace dtsim {

// `text` escaped for the inside of a JSON string: `"` and `\` backslashed, newline as \n, every
// other control character (below 0x20) as \u00XX; other bytes (UTF-8) unchanged.
inline std::string json_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out;
}

// `text` as a JSON string literal, quotes included.
inline std::string json_string(const std::string& text) {
  std::string out(1, '"');  // built by appending: GCC 12 warns falsely on "\"" + std::string&& (PR 105651)
  out += json_escape(text);
  out += '"';
  return out;
}

// A number for a JSON document: formatted as the double (with the format spec given), or null
// when it is NaN or infinite.
struct JsonNumber {
  double value;
};

// "[a, b, ...]" of already formatted JSON values.
class JsonList {
 public:
  void add(const std::string& value) { body_ += (body_.empty() ? "" : ", ") + value; }
  std::string str() const { return "[" + body_ + "]"; }

 private:
  std::string body_;
};

}  // namespace dtsim

template <>
struct fmt::formatter<dtsim::JsonNumber> : fmt::formatter<double> {
  auto format(dtsim::JsonNumber n, format_context& ctx) const {
    if (!std::isfinite(n.value)) return fmt::format_to(ctx.out(), "null");
    return fmt::formatter<double>::format(n.value, ctx);
  }
};
