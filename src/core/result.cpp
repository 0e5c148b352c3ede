#include "core/result.hpp"

namespace sika {

std::string_view kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid: return "invalid";
    case ErrorKind::unauthenticated: return "unauthenticated";
    case ErrorKind::forbidden: return "forbidden";
    case ErrorKind::not_found: return "not_found";
    case ErrorKind::method_not_allowed: return "method_not_allowed";
    case ErrorKind::conflict: return "conflict";
    case ErrorKind::payload_too_large: return "payload_too_large";
    case ErrorKind::headers_too_large: return "headers_too_large";
    case ErrorKind::unsupported_media_type: return "unsupported_media_type";
    case ErrorKind::rate_limited: return "rate_limited";
    case ErrorKind::retryable: return "retryable";
    case ErrorKind::unavailable: return "unavailable";
    case ErrorKind::upstream_failed: return "upstream_failed";
    case ErrorKind::upstream_timeout: return "upstream_timeout";
    case ErrorKind::internal: return "internal";
  }
  return "internal";
}

bool Error::server_side() const {
  switch (kind) {
    case ErrorKind::retryable:
    case ErrorKind::unavailable:
    case ErrorKind::upstream_failed:
    case ErrorKind::upstream_timeout:
    case ErrorKind::internal: return true;
    default: return false;
  }
}

}  // namespace sika
