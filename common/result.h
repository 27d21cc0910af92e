#pragma once
// Operating errors (disk, network, corrupt data) as values: `Status` and `Result<T>`.
// Domain rejections are not errors in this sense; they have their own enum in command/.

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "common/assert.h"

namespace kobo {

// What kind of operating error a Status is, where a caller acts on the kind: a full disk is
// answered 507 and clears by itself when space returns; anything else is 503.
enum class ErrorKind {
  other,
  no_space,
  other_format,  // data written in a layout this build does not read (derived data: rebuild it)
  unavailable,   // a service the log depends on cannot be reached now (a Kafka broker): try again later
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status error(std::string message, ErrorKind kind = ErrorKind::other) {
    return Status(std::move(message), kind);
  }

  bool ok() const { return !message_.has_value(); }
  explicit operator bool() const { return ok(); }
  const std::string& message() const {
    KOBO_ASSERT(!ok(), "message() of an ok Status");
    return *message_;
  }
  ErrorKind kind() const { return kind_; }

 private:
  Status(std::string message, ErrorKind kind) : message_(std::move(message)), kind_(kind) {}
  std::optional<std::string> message_;
  ErrorKind kind_ = ErrorKind::other;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    KOBO_ASSERT(!std::get<Status>(v_).ok(), "Result built from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  T& value() & {
    KOBO_ASSERT(ok(), "value() of a failed Result");
    return std::get<T>(v_);
  }
  T&& value() && {
    KOBO_ASSERT(ok(), "value() of a failed Result");
    return std::get<T>(std::move(v_));
  }
  const T& value() const& {
    KOBO_ASSERT(ok(), "value() of a failed Result");
    return std::get<T>(v_);
  }
  const Status& status() const {
    KOBO_ASSERT(!ok(), "status() of an ok Result");
    return std::get<Status>(v_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace kobo
