#include "core/json.hpp"

#include <cmath>

namespace sika::json {

Result<bj::value> parse(std::string_view text) {
  boost::system::error_code ec;
  bj::parse_options opts;
  opts.max_depth = 64;
  bj::value v = bj::parse(text, ec, {}, opts);
  if (ec) return empty_data(bj::string("malformed JSON: " + ec.message()));
  return v;
}

Result<bj::object> parse_object(std::string_view text) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return empty_data("request body is empty");
  auto v = parse(text);
  if (!v) return v.take_error();
  if (!v->is_object()) return empty_data("request body must be a JSON object");
  return std::move(v->as_object());
}

std::string dump(const bj::value& v) { return bj::serialize(v); }

void FieldErrors::add(std::string_view field, std::string_view problem) {
  if (!errors_.contains(field)) errors_[field] = problem;
}

Status FieldErrors::status() const {
  if (errors_.empty()) return {};
  return empty_data(errors_);
}

namespace {
const bj::value* present(const bj::object& o, std::string_view key, FieldErrors& errors, bool required) {
  auto it = o.find(key);
  if (it == o.end() || it->value().is_null()) {
    if (required) errors.add(key, "is required");
    return nullptr;
  }
  return &it->value();
}
}  // namespace

std::optional<std::string> get_string(const bj::object& o, std::string_view key, FieldErrors& errors,
                                      bool required) {
  const bj::value* v = present(o, key, errors, required);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    errors.add(key, "must be a string");
    return std::nullopt;
  }
  return std::string(v->get_string());
}

std::optional<std::int64_t> get_int(const bj::object& o, std::string_view key, FieldErrors& errors,
                                    bool required) {
  const bj::value* v = present(o, key, errors, required);
  if (!v) return std::nullopt;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) {
    if (v->get_uint64() > static_cast<std::uint64_t>(INT64_MAX)) {
      errors.add(key, "is too large");
      return std::nullopt;
    }
    return static_cast<std::int64_t>(v->get_uint64());
  }
  errors.add(key, "must be an integer");
  return std::nullopt;
}

std::optional<double> get_number(const bj::object& o, std::string_view key, FieldErrors& errors, bool required) {
  const bj::value* v = present(o, key, errors, required);
  if (!v) return std::nullopt;
  if (v->is_int64()) return static_cast<double>(v->get_int64());
  if (v->is_uint64()) return static_cast<double>(v->get_uint64());
  if (v->is_double() && std::isfinite(v->get_double())) return v->get_double();
  errors.add(key, "must be a number");
  return std::nullopt;
}

std::optional<bool> get_bool(const bj::object& o, std::string_view key, FieldErrors& errors, bool required) {
  const bj::value* v = present(o, key, errors, required);
  if (!v) return std::nullopt;
  if (!v->is_bool()) {
    errors.add(key, "must be a boolean");
    return std::nullopt;
  }
  return v->get_bool();
}

const bj::object* get_object(const bj::object& o, std::string_view key, FieldErrors& errors, bool required) {
  const bj::value* v = present(o, key, errors, required);
  if (!v) return nullptr;
  if (!v->is_object()) {
    errors.add(key, "must be an object");
    return nullptr;
  }
  return &v->get_object();
}

const bj::array* get_array(const bj::object& o, std::string_view key, FieldErrors& errors, bool required) {
  const bj::value* v = present(o, key, errors, required);
  if (!v) return nullptr;
  if (!v->is_array()) {
    errors.add(key, "must be an array");
    return nullptr;
  }
  return &v->get_array();
}

}  // namespace sika::json
