#pragma once
// The spec's envelopes, produced in exactly one place:
//   success: {code, success:true, locale, message, meta, data}
//   error:   {success:false, code, message, locale, error:{details, text}}
// `message` is the message code; the human text in the request's locale is added as
// meta.text (success) and error.text (error).
#include <boost/json.hpp>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "web/message.hpp"

namespace sika::web {

Response ok(const Request& req, boost::json::value data, boost::json::object meta = {}, std::string_view message = "ok",
            int status = 200);
// The HTTP status of an error kind: the one place where kinds become statuses.
int http_status(ErrorKind kind);

Response error(const Request& req, const Error& err);
Response error(i18n::Locale locale, const Error& err);

// A handler's outcome as the router answers it: the response, or the error envelope of its error.
inline Response respond(const Request& req, Result<Response> r) {
  if (!r) return error(req, r.error());
  return std::move(r).value();
}

// Maps a Result holding the data to an envelope.
inline Response reply(const Request& req, Result<boost::json::value> r, std::string_view message = "ok") {
  if (!r) return error(req, r.error());
  return ok(req, std::move(r).value(), {}, message);
}

// Sends the answer `make` writes (for a request in `locale`) through `reply`, a request's later
// answer (web::answer_later); an exception from `make` is logged naming `what` and answered as a
// 500 envelope, so the request is answered whatever happens.
void reply_with(const Reply& reply, i18n::Locale locale, std::string_view what,
                const std::function<Response(const Request&)>& make);

// Pagination parameters of list routes: page >= 1 (default 1), limit 1..100 (default given).
struct Page {
  std::int64_t page = 1;
  std::int64_t limit = 25;
  std::int64_t offset() const { return (page - 1) * limit; }
};
// Reads page/limit from the query, recording problems in `errors` (field -> problem).
Page parse_page(const Request& req, boost::json::object& errors, std::int64_t default_limit = 25);
// meta.pagination object.
boost::json::object pagination(const Page& page, std::int64_t total);
// The query parameter `name` when it is one of `allowed` (exact match); nullopt when it is absent,
// or when it is anything else, which records "must be A, B or C" under `name` in `errors`.
std::optional<std::string> choice_param(const Request& req, std::string_view name,
                                        std::initializer_list<std::string_view> allowed, boost::json::object& errors);

// Parses the body as a JSON object, or as application/x-www-form-urlencoded fields (as strings).
// Other content types are refused with 415 unless `allow_form` is false and the type is JSON.
Result<boost::json::object> body_object(const Request& req, bool allow_form = false);

}  // namespace sika::web
