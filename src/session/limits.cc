#include "session/limits.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#ifdef __wasi__
#include <unistd.h>  // getentropy: WASI's random_get
#else
#include <random>
#endif

namespace g4 {

const Limit* FindLimit(const std::string& key) {
  for (const Limit* l : limits::kAllLimits) {
    if (key == l->key) return l;
  }
  return nullptr;
}

std::string FormatNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (v == 0) return "0";
  // The fewest significant digits that read back as v: d.ddd x 10^e.
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*e", precision - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  const char* e = std::strchr(buf, 'e');
  std::string digits;
  for (const char* c = buf; c < e; ++c) {
    if (*c >= '0' && *c <= '9') digits += *c;
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  // ECMAScript's Number::toString: v = 0.digits x 10^n, k digits.
  const int n = std::atoi(e + 1) + 1, k = static_cast<int>(digits.size());
  std::string out = v < 0 ? "-" : "";
  if (k <= n && n <= 21) return out + digits + std::string(n - k, '0');
  if (0 < n && n <= 21) return out + digits.substr(0, n) + "." + digits.substr(n);
  if (-6 < n && n <= 0) return out + "0." + std::string(-n, '0') + digits;
  out += digits.substr(0, 1);
  if (k > 1) out.append(".").append(digits, 1);
  return out + "e" + (n - 1 >= 0 ? "+" : "-") + std::to_string(std::abs(n - 1));
}

std::vector<std::string> Choices(const Limit& limit) {
  std::vector<std::string> out;
  const std::string all = limit.choices;
  for (size_t at = 0; at <= all.size();) {
    const size_t bar = std::min(all.find('|', at), all.size());
    out.push_back(all.substr(at, bar - at));
    at = bar + 1;
  }
  return out;
}

std::string RangeText(const Limit& limit) {
  if (limit.choice()) {
    std::string out = "one of ";
    for (const std::string& c : Choices(limit)) out += (out.size() > 7 ? ", '" : "'") + c + "'";
    return out;
  }
  return std::string(limit.integer() ? "an integer" : "a number") + " in " + (limit.min_open ? "(" : "[") +
         FormatNumber(limit.min) + ", " + FormatNumber(limit.max) + "]";
}

Status CheckLimit(const Limit& limit, double v, const std::string& name) {
  if (limit.Contains(v)) return Status::Ok();
  return InvalidArgument(name + " must be " + RangeText(limit) + ", not " + FormatNumber(v) + Float32Note(limit, v));
}

std::string Float32Note(const Limit& limit, double v) {
  const bool underflows = !limit.integer() && limit.min_open && v > limit.min && v <= limit.max;
  return underflows ? " (which is " + FormatNumber(limit.min) + " as a float32)" : std::string();
}

Status CheckChoice(const Limit& limit, const std::string& v, const std::string& name) {
  for (const std::string& c : Choices(limit)) {
    if (v == c) return Status::Ok();
  }
  return InvalidArgument(name + " must be " + RangeText(limit) + ", not '" + v + "'");
}

nlohmann::json LimitJson(const Limit& l) {
  nlohmann::json j = {{"flag", l.flag}, {"js", l.js}, {"default_text", l.default_text}, {"range", RangeText(l)},
                      {"meaning", l.meaning}};
  if (l.choice()) {
    const std::vector<std::string> choices = Choices(l);
    j["choices"] = choices;
    j["default"] = choices[0];
    return j;
  }
  j["integer"] = l.integer();
  j["min"] = l.min;
  j["max"] = l.max;
  j["min_open"] = l.min_open;
  j["default"] = l.has_fallback() ? nlohmann::json(l.fallback) : nlohmann::json(nullptr);
  return j;
}

nlohmann::json LimitsJson() {
  nlohmann::json j = nlohmann::json::object();
  for (const Limit* l : limits::kAllLimits) j[l->key] = LimitJson(*l);
  return j;
}

Result<uint64_t> RandomSeed() {
  uint64_t bits = 0;
#ifdef __wasi__
  if (getentropy(&bits, sizeof(bits)) != 0) return Internal("seed: the host's random source (random_get) failed");
#else
  std::random_device source;
  bits = (static_cast<uint64_t>(source()) << 32) ^ source();
#endif
  // Kept inside the seed's range, so a seed drawn here can be given back to reproduce a run.
  return bits & ((uint64_t{1} << 53) - 1);
}

}  // namespace g4
