// A small flag parser for the CLI: --name value pairs and boolean --switches, with clear errors
// for unknown flags, missing values and malformed numbers.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "session/limits.h"

namespace g4::cli {

// Prints the error as "gemma4: ..." on stderr and returns the exit code 1.
int Fail(const Status& s);

// The items of a flag's list split at `sep`, empty ones kept ("" is one empty item).
std::vector<std::string> SplitAt(const std::string& s, char sep);

class Args {
 public:
  // `value_flags` take a value; `switch_flags` do not. Anything else is an error.
  static Result<Args> Parse(const std::vector<std::string>& argv, const std::set<std::string>& value_flags,
                            const std::set<std::string>& switch_flags);

  bool Has(const std::string& flag) const { return values_.count(flag) || switches_.count(flag); }
  std::string Get(const std::string& flag, const std::string& fallback = "") const;
  Result<long long> GetInt(const std::string& flag, long long fallback, long long min, long long max) const;
  Result<double> GetDouble(const std::string& flag, double fallback) const;
  Result<std::vector<int>> GetIntList(const std::string& flag) const;  // "2,105,7"
  // The flag of an option of the limits table (session/limits.h), checked against its range;
  // nullopt, or `fallback`, when not given.
  Result<std::optional<double>> GetOption(const Limit& limit) const;
  Result<double> GetOption(const Limit& limit, double fallback) const;
  // A choice option's flag, checked against its words; its default when not given.
  Result<std::string> GetChoice(const Limit& limit) const;

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> switches_;
};

}  // namespace g4::cli
