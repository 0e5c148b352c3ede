#pragma once
// Errors are values: a Result<T> holds either a T or an Error: what kind of failure it is, its
// message code, the typed problems of the request's fields and the details shown in the error
// envelope (rendered in English from the problems when there are some). Code decides on the kind,
// the problems' reasons (core/reason.hpp) or a named code (core/codes.hpp), never on a text; the
// HTTP status of each kind is chosen in one place (web::http_status in web/envelope.cpp), the exit
// status of a command in app/cli.cpp.
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace sika {

// What went wrong, as the caller must react to it.
enum class ErrorKind {
  invalid,                 // the request is malformed or breaks a rule: fix it, do not retry as is
  unauthenticated,         // no or bad credentials
  forbidden,               // authenticated, but not allowed
  not_found,               // no such object (or not the caller's)
  method_not_allowed,      // the path exists with other methods
  conflict,                // the request collides with the current state (duplicate, race lost)
  payload_too_large,       // the body is over the limit
  headers_too_large,       // the header block is over the limit
  unsupported_media_type,  // a body in a content type the route does not take
  rate_limited,            // too many requests: retry later
  retryable,               // a transient failure (lost race, serialization failure): the same call may succeed
  unavailable,             // a dependency is down or the service is shutting down
  upstream_failed,         // a remote peer failed (DNS, connect, TLS, protocol)
  upstream_timeout,        // a remote peer did not answer in time
  internal,                // a bug or an unexpected state
};

// Returns the kind's name, for logs ("conflict").
std::string_view kind_name(ErrorKind kind);

// Why a field (or a whole request) is refused; its values and texts: core/reason.hpp, core/i18n.cpp.
enum class Reason : std::uint16_t;

// A reason and the values its text names ({max}, {allowed}...), e.g. {at_most_chars, max=200}.
struct Problem {
  struct Param {
    std::string_view name;  // a placeholder of the reason's texts, without braces
    std::string value;
  };
  Reason reason;
  std::vector<Param> params;

  Problem(Reason r) : reason(r) {}  // NOLINT(google-explicit-constructor)
  Problem(Reason r, std::vector<Param> p) : reason(r), params(std::move(p)) {}
  // The value of a parameter ("" when absent).
  std::string_view param(std::string_view name) const {
    for (const auto& p : params)
      if (p.name == name) return p.value;
    return {};
  }
};

// A problem of one field ("amount", "lines[1].reference"); an empty field is the whole request.
struct FieldProblem {
  std::string field;
  Problem problem;
};

// A message code as a named constant (core/codes.hpp): compared with Error::is, never spelled twice.
struct Code {
  std::string_view name;
};

struct Error {
  ErrorKind kind = ErrorKind::invalid;
  std::string code;                    // message code, e.g. "empty_data"
  boost::json::value details;          // error.details (object, array, string or null)
  std::vector<FieldProblem> problems;  // what details was rendered from, when it names problems

  bool is(ErrorKind k) const { return kind == k; }
  bool is(Code c) const { return code == c.name; }
  // The problem of `field` ("" for the whole request), nullptr when it has none.
  const Problem* problem(std::string_view field) const {
    for (const auto& p : problems)
      if (p.field == field) return &p.problem;
    return nullptr;
  }
  // True when some problem of the error has reason `r`.
  bool has(Reason r) const {
    for (const auto& p : problems)
      if (p.problem.reason == r) return true;
    return false;
  }
  // True for failures of the server or its dependencies (details are logged, not sent).
  bool server_side() const;
};

// What error.details holds: a JSON value, or a plain message.
struct Details {
  boost::json::value value;
  Details(boost::json::value v) : value(std::move(v)) {}            // NOLINT
  Details(boost::json::object v) : value(std::move(v)) {}           // NOLINT
  Details(boost::json::array v) : value(std::move(v)) {}            // NOLINT
  Details(boost::json::string v) : value(std::move(v)) {}           // NOLINT
  Details(const std::string& s) : value(boost::json::string(s)) {}  // NOLINT
  Details(std::string_view s) : value(boost::json::string(s)) {}    // NOLINT
  Details(const char* s) : value(boost::json::string(s)) {}         // NOLINT
  Details(std::nullptr_t) : value(nullptr) {}                       // NOLINT
};

inline Error make_error(ErrorKind kind, std::string code, Details details = nullptr) {
  return Error{kind, std::move(code), std::move(details.value)};
}
inline Error bad_request(std::string code, Details details = nullptr) {
  return make_error(ErrorKind::invalid, std::move(code), std::move(details));
}
inline Error empty_data(Details details) { return bad_request("empty_data", std::move(details)); }
inline Error unauthorized(Details details = nullptr) {
  return make_error(ErrorKind::unauthenticated, "unauthorized", std::move(details));
}
inline Error forbidden(Details details = nullptr) {
  return make_error(ErrorKind::forbidden, "access_denied", std::move(details));
}
inline Error not_found(Details details = nullptr) {
  return make_error(ErrorKind::not_found, "not_found", std::move(details));
}
inline Error conflict(Details details = nullptr) {
  return make_error(ErrorKind::conflict, "conflict", std::move(details));
}
// Too many requests. details may carry "retry_after" (whole seconds): the envelope turns it into
// the Retry-After header.
inline Error rate_limited(Details details = nullptr) {
  return make_error(ErrorKind::rate_limited, "rate_limited", std::move(details));
}
inline Error retryable(Details details = nullptr) {
  return make_error(ErrorKind::retryable, "service_unavailable", std::move(details));
}
inline Error internal_error(Details details = nullptr) {
  return make_error(ErrorKind::internal, "internal_error", std::move(details));
}
inline Error unavailable(Details details = nullptr) {
  return make_error(ErrorKind::unavailable, "service_unavailable", std::move(details));
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}      // NOLINT(google-explicit-constructor)
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
#define SIKA_TRY(expr)                                      \
  do {                                                      \
    auto sika_try_r_ = (expr);                              \
    if (!sika_try_r_.ok()) return sika_try_r_.take_error(); \
  } while (0)

#define SIKA_CONCAT_INNER(a, b) a##b
#define SIKA_CONCAT(a, b) SIKA_CONCAT_INNER(a, b)
#define SIKA_ASSIGN_OR_RETURN(lhs, expr) SIKA_ASSIGN_OR_RETURN_IMPL(SIKA_CONCAT(sika_r_, __LINE__), lhs, expr)
#define SIKA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.take_error();          \
  lhs = std::move(tmp).value()
