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

namespace {

// Whether `arg` names one of the flags (--name, --name=value, or -n for one-letter names).
bool IsFlag(const std::string& arg, const std::set<std::string>& value_flags, const std::set<std::string>& switch_flags) {
  std::string name;
  if (arg.rfind("--", 0) == 0) {
    name = arg.substr(2, arg.find('=') == std::string::npos ? std::string::npos : arg.find('=') - 2);
  } else if (arg.size() == 2 && arg[0] == '-') {
    name = arg.substr(1);
  } else {
    return false;
  }
  return value_flags.count(name) || switch_flags.count(name);
}

enum class Parsed { kOk, kNotInteger, kTooLarge };

// The decimal integer in `text`; kTooLarge when it does not fit in 64 bits.
Parsed ParseInteger(const std::string& text, long long* v) {
  errno = 0;
  char* end = nullptr;
  *v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end) return Parsed::kNotInteger;
  return errno == ERANGE ? Parsed::kTooLarge : Parsed::kOk;
}

}  // namespace

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
        // A flag of this command where the value should be means the value is missing.
        if (i + 1 >= argv.size() || IsFlag(argv[i + 1], value_flags, switch_flags)) {
          return InvalidArgument("--" + name + " needs a value");
        }
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
  long long v = 0;
  const Parsed p = ParseInteger(it->second, &v);
  if (p == Parsed::kNotInteger) return InvalidArgument("--" + flag + ": not an integer: " + it->second);
  if (p == Parsed::kTooLarge || v < min || v > max) {
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

Result<std::optional<double>> Args::GetOption(const Limit& limit) const {
  auto it = values_.find(limit.flag);
  if (it == values_.end()) return std::optional<double>();
  const std::string name = std::string("--") + limit.flag;
  double v = 0.0;
  bool in_range = true;
  if (limit.integer()) {
    long long i = 0;
    const Parsed p = ParseInteger(it->second, &i);
    if (p == Parsed::kNotInteger) return InvalidArgument(name + ": not an integer: " + it->second);
    // The table's integer ranges are within what a double holds exactly.
    v = static_cast<double>(i);
    in_range = p == Parsed::kOk && limit.Contains(v);
  } else {
    G4_ASSIGN_OR_RETURN(v, GetDouble(limit.flag, 0.0));
    in_range = limit.Contains(v);
  }
  if (!in_range) return InvalidArgument(name + " must be " + RangeText(limit) + ", not " + it->second + Float32Note(limit, v));
  return std::optional<double>(v);
}

Result<double> Args::GetOption(const Limit& limit, double fallback) const {
  G4_ASSIGN_OR_RETURN(const std::optional<double> v, GetOption(limit));
  return v.value_or(fallback);
}

Result<std::string> Args::GetChoice(const Limit& limit) const {
  auto it = values_.find(limit.flag);
  if (it == values_.end()) return Choices(limit)[0];
  G4_RETURN_IF_ERROR(CheckChoice(limit, it->second, std::string("--") + limit.flag));
  return it->second;
}

std::vector<std::string> SplitAt(const std::string& s, char sep) {
  std::vector<std::string> items;
  size_t pos = 0;
  while (true) {
    const size_t at = s.find(sep, pos);
    items.push_back(s.substr(pos, at == std::string::npos ? std::string::npos : at - pos));
    if (at == std::string::npos) return items;
    pos = at + 1;
  }
}

Result<std::vector<int>> Args::GetIntList(const std::string& flag) const {
  std::vector<int> out;
  for (const std::string& item : SplitAt(Get(flag), ',')) {
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || errno || *end || v < 0 || v > 0x7fffffff) {
      return InvalidArgument("--" + flag + ": '" + item + "' is not a token id");
    }
    out.push_back(static_cast<int>(v));
  }
  return out;
}

}  // namespace g4::cli
