#include "cli/args.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace g4::cli {

int Fail(const Status& s) {
  std::fprintf(stderr, "gemma4: %s\n", s.message().c_str());
  return 1;
}

Result<Args> Args::Parse(const std::vector<std::string>& argv, const std::set<std::string>& value_flags,
                         const std::set<std::string>& switch_flags) {
  Args a;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    // One-letter flags take one dash (-o OUT); the rest two.
    const bool short_flag = arg.size() == 2 && arg[0] == '-' && arg[1] != '-';
    if (arg.rfind("--", 0) != 0 && !short_flag) return InvalidArgument("unexpected argument '" + arg + "'");
    std::string name = arg.substr(short_flag ? 1 : 2), value;
    bool has_inline = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_inline = true;
    }
    if (switch_flags.count(name)) {
      if (has_inline) return InvalidArgument("--" + name + " takes no value");
      a.switches_.insert(name);
    } else if (value_flags.count(name)) {
      if (!has_inline) {
        if (i + 1 >= argv.size()) return InvalidArgument("--" + name + " needs a value");
        value = argv[++i];
      }
      if (a.values_.count(name)) return InvalidArgument("--" + name + " given twice");
      a.values_[name] = value;
    } else {
      return InvalidArgument("unknown flag --" + name);
    }
  }
  return a;
}

std::string Args::Get(const std::string& flag, const std::string& fallback) const {
  auto it = values_.find(flag);
  return it == values_.end() ? fallback : it->second;
}

Result<long long> Args::GetInt(const std::string& flag, long long fallback, long long min, long long max) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (errno || end == it->second.c_str() || *end) return InvalidArgument("--" + flag + ": not an integer: " + it->second);
  if (v < min || v > max) {
    return InvalidArgument("--" + flag + ": " + it->second + " is outside [" + std::to_string(min) + ", " +
                           std::to_string(max) + "]");
  }
  return v;
}

Result<double> Args::GetDouble(const std::string& flag, double fallback) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (errno || end == it->second.c_str() || *end || !std::isfinite(v)) {
    return InvalidArgument("--" + flag + ": not a number: " + it->second);
  }
  return v;
}

Result<std::vector<int>> Args::GetIntList(const std::string& flag) const {
  std::vector<int> out;
  const std::string s = Get(flag);
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    const std::string item = s.substr(pos, comma - pos);
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || errno || *end || v < 0 || v > 0x7fffffff) {
      return InvalidArgument("--" + flag + ": '" + item + "' is not a token id");
    }
    out.push_back(static_cast<int>(v));
    pos = comma + 1;
  }
  return out;
}

}  // namespace g4::cli
