#pragma once
// Errors are values: a Result<T> holds either a T or an Error that already knows
// its HTTP status, its message code and the details shown in the error envelope.
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace sika {

struct Error {
  int status = 400;            // HTTP status the error maps to
  std::string code;            // message code, e.g. "empty_data"
  boost::json::value details;  // error.details (object, array, string or null)
};

// What error.details holds: a JSON value, or a plain message.
struct Details {
  boost::json::value value;
  Details(boost::json::value v) : value(std::move(v)) {}                // NOLINT
  Details(boost::json::object v) : value(std::move(v)) {}               // NOLINT
  Details(boost::json::array v) : value(std::move(v)) {}                // NOLINT
  Details(boost::json::string v) : value(std::move(v)) {}               // NOLINT
  Details(const std::string& s) : value(boost::json::string(s)) {}      // NOLINT
  Details(std::string_view s) : value(boost::json::string(s)) {}        // NOLINT
  Details(const char* s) : value(boost::json::string(s)) {}             // NOLINT
  Details(std::nullptr_t) : value(nullptr) {}                           // NOLINT
};

inline Error bad_request(std::string code, Details details = nullptr) {
  return Error{400, std::move(code), std::move(details.value)};
}
inline Error empty_data(Details details) { return bad_request("empty_data", std::move(details.value)); }
inline Error unauthorized(Details details = nullptr) {
  return Error{401, "unauthorized", std::move(details.value)};
}
inline Error forbidden(Details details = nullptr) {
  return Error{403, "access_denied", std::move(details.value)};
}
inline Error not_found(Details details = nullptr) {
  return Error{404, "not_found", std::move(details.value)};
}
inline Error conflict(Details details = nullptr) {
  return Error{409, "conflict", std::move(details.value)};
}
inline Error internal_error(Details details = nullptr) {
  return Error{500, "internal_error", std::move(details.value)};
}
inline Error unavailable(Details details = nullptr) {
  return Error{503, "service_unavailable", std::move(details.value)};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  Error&& take_error() { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : e_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *e_; }
  Error&& take_error() { return std::move(*e_); }

 private:
  std::optional<Error> e_;
};

using Status = Result<void>;

}  // namespace sika

// Propagates the error of a Result/Status expression, or binds its value.
#define SIKA_TRY(expr)                             \
  do {                                             \
    auto sika_try_r_ = (expr);                     \
    if (!sika_try_r_.ok()) return sika_try_r_.take_error(); \
  } while (0)

#define SIKA_CONCAT_INNER(a, b) a##b
#define SIKA_CONCAT(a, b) SIKA_CONCAT_INNER(a, b)
#define SIKA_ASSIGN_OR_RETURN(lhs, expr) SIKA_ASSIGN_OR_RETURN_IMPL(SIKA_CONCAT(sika_r_, __LINE__), lhs, expr)
#define SIKA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.take_error();          \
  lhs = std::move(tmp).value()
