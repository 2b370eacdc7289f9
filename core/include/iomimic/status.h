// iomimic plugin SDK: error values.
//
// Errors are values in iomimic. Every fallible operation returns a Status (no
// payload) or a Result<T> (a T or an error Status). No exception may cross a
// plugin boundary: plugin code that calls throwing libraries must catch and
// convert (the IOMIMIC_DEFINE_PLUGIN macro does so for factories).
//
// A Status message is meant for a person: it names the object (file, offset,
// plugin, manifest key) and says what went wrong, in one line. Layers add
// context with WithContext() rather than replacing the message.

#pragma once

#include <cerrno>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "iomimic/enum_names.h"

namespace iomimic {

enum class StatusCode : int {
  kOk = 0,
  kNotFound = 1,           // file, key or plugin does not exist
  kAlreadyExists = 2,      // refusing to replace something that exists
  kInvalidArgument = 3,    // bad option, bad manifest value, bad request
  kIOError = 4,            // the storage system failed an operation
  kCorruption = 5,         // data read back does not parse or checksum
  kNotSupported = 6,       // the back end or format cannot do this
  kOutOfRange = 7,         // offset or index beyond the end
  kResourceExhausted = 8,  // memory, file descriptors, disk space
  kAborted = 9,            // stopped because another part failed
  kInternal = 10,          // a bug in iomimic or a plugin
  kVersionMismatch = 11,   // plugin ABI or format version does not match
};

namespace status_internal {
// StatusCodeName's table, in the order of StatusCode's values.
inline constexpr std::string_view kCodeNames[] = {
    "ok",
    "not found",
    "already exists",
    "invalid argument",
    "io error",
    "corruption",
    "not supported",
    "out of range",
    "resource exhausted",
    "aborted",
    "internal error",
    "version mismatch",
};
static_assert(std::size(kCodeNames) == static_cast<std::size_t>(StatusCode::kVersionMismatch) + 1);
}  // namespace status_internal

// Returns a short lower-case name for `code`, e.g. "io error".
constexpr std::string_view StatusCodeName(StatusCode code) {
  return EnumName(code, status_internal::kCodeNames, "unknown");
}

class [[nodiscard]] Status {
 public:
  // An OK status. Cheap to create and copy.
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) {
    return {StatusCode::kAlreadyExists, std::move(msg)};
  }
  static Status InvalidArgument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status IOError(std::string msg) { return {StatusCode::kIOError, std::move(msg)}; }
  static Status Corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
  static Status NotSupported(std::string msg) {
    return {StatusCode::kNotSupported, std::move(msg)};
  }
  static Status OutOfRange(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
  static Status ResourceExhausted(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg)};
  }
  static Status Aborted(std::string msg) { return {StatusCode::kAborted, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
  static Status VersionMismatch(std::string msg) {
    return {StatusCode::kVersionMismatch, std::move(msg)};
  }

  // Translates an errno value from a system call into a Status. `context`
  // names the operation and object, e.g. "pread /data/x.npz at offset 4096".
  static Status FromErrno(int err, std::string_view context) {
    StatusCode code = StatusCode::kIOError;
    switch (err) {
      case ENOENT:
        code = StatusCode::kNotFound;
        break;
      case EEXIST:
        code = StatusCode::kAlreadyExists;
        break;
      case EINVAL:
        code = StatusCode::kInvalidArgument;
        break;
      case ENOSPC:
      case ENOMEM:
      case EMFILE:
      case ENFILE:
      case EDQUOT:
        code = StatusCode::kResourceExhausted;
        break;
      case ENOTSUP:
        code = StatusCode::kNotSupported;
        break;
      default:
        break;
    }
    std::string msg(context);
    msg += ": ";
    char buf[128];
    // GNU strerror_r returns a pointer that may or may not be `buf`.
    msg += ::strerror_r(err, buf, sizeof(buf));
    return {code, std::move(msg)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  bool IsNotFound() const { return code_ == StatusCode::kNotFound; }
  bool IsAlreadyExists() const { return code_ == StatusCode::kAlreadyExists; }

  // Returns a copy whose message is "<context>: <message>". OK stays OK.
  Status WithContext(std::string_view context) const {
    if (ok()) return *this;
    std::string msg(context);
    msg += ": ";
    msg += message_;
    return {code_, std::move(msg)};
  }

  // "OK", or the message (the code name is left out: messages say what happened).
  std::string ToString() const { return ok() ? std::string("OK") : message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value of type T or an error Status. Never holds an OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design
  // Accepts anything convertible to T, e.g. a unique_ptr<Derived> for a
  // Result<unique_ptr<Base>>.
  template <typename U>
  requires(!std::is_same_v<std::remove_cvref_t<U>, T> &&
           !std::is_same_v<std::remove_cvref_t<U>, Status> && std::is_convertible_v<U&&, T>)
      Result(U&& value)
      : data_(T(std::forward<U>(value))) {}           // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(data_).ok()) {
      data_ = Status::Internal("Result constructed from an OK Status");
    }
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  // The error, or OK when a value is held.
  Status status() const { return ok() ? Status::OK() : std::get<Status>(data_); }

  // Precondition: ok().
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T value_or(T fallback) const& { return ok() ? std::get<T>(data_) : std::move(fallback); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace iomimic

#define IOMIMIC_CONCAT_INNER_(a, b) a##b
#define IOMIMIC_CONCAT_(a, b) IOMIMIC_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define IOMIMIC_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::iomimic::Status iomimic_status_ = (expr);        \
    if (!iomimic_status_.ok()) return iomimic_status_; \
  } while (false)

// Evaluates `rexpr` (a Result<T>); on error returns its Status, otherwise
// move-assigns the value to `lhs` (which may be a declaration).
#define IOMIMIC_ASSIGN_OR_RETURN(lhs, rexpr) \
  IOMIMIC_ASSIGN_OR_RETURN_IMPL_(IOMIMIC_CONCAT_(iomimic_result_, __LINE__), lhs, rexpr)
#define IOMIMIC_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                   \
  if (!tmp.ok()) return tmp.status();                   \
  lhs = std::move(tmp).value()
