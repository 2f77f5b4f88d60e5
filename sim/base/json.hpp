// Small helpers for the JSON the commands print: string escaping and comma-joined lists.
#pragma once
#include <string>

namespace dtsim {

inline std::string json_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// "[a, b, ...]" of already formatted JSON values.
class JsonList {
 public:
  void add(const std::string& value) { body_ += (body_.empty() ? "" : ", ") + value; }
  std::string str() const { return "[" + body_ + "]"; }

 private:
  std::string body_;
};

}  // namespace dtsim
