// Errors as values: the library never throws (the WebAssembly build has no exceptions).
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace g4 {

enum class StatusCode { kOk = 0, kInvalidArgument, kNotFound, kDataLoss, kOutOfRange, kResourceExhausted,
                        kFailedPrecondition, kUnimplemented, kInternal };

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Prefixes the message with where it happened: "file x: tensor y: ...".
  Status WithContext(const std::string& context) const {
    return ok() ? *this : Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
inline Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status DataLoss(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }
inline Status OutOfRange(std::string m) { return Status(StatusCode::kOutOfRange, std::move(m)); }
inline Status ResourceExhausted(std::string m) { return Status(StatusCode::kResourceExhausted, std::move(m)); }
inline Status FailedPrecondition(std::string m) { return Status(StatusCode::kFailedPrecondition, std::move(m)); }
inline Status Unimplemented(std::string m) { return Status(StatusCode::kUnimplemented, std::move(m)); }
inline Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Internal("Result constructed from an OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace g4

#define G4_CONCAT_INNER(a, b) a##b
#define G4_CONCAT(a, b) G4_CONCAT_INNER(a, b)

#define G4_RETURN_IF_ERROR(expr)            \
  do {                                      \
    ::g4::Status g4_status_ = (expr);       \
    if (!g4_status_.ok()) return g4_status_; \
  } while (0)

#define G4_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

#define G4_ASSIGN_OR_RETURN(lhs, expr) G4_ASSIGN_OR_RETURN_IMPL(G4_CONCAT(g4_result_, __LINE__), lhs, expr)
