#pragma once
// JSON helpers over Boost.JSON: strict parsing and typed field access that report
// precise, per-field problems for error.details.
#include <boost/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace sika::json {

namespace bj = boost::json;

// Parses a JSON document; on failure returns empty_data with a description.
Result<bj::value> parse(std::string_view text);

// Parses a body that must be a JSON object (empty body -> empty_data "body is empty").
Result<bj::object> parse_object(std::string_view text);

// Serializes compactly.
std::string dump(const bj::value& v);

// Collects per-field validation problems; becomes error.details {field: problem}.
class FieldErrors {
 public:
  void add(std::string_view field, std::string_view problem);
  bool empty() const { return errors_.empty(); }
  const bj::object& details() const { return errors_; }
  // Returns empty_data(details) if any problem was recorded.
  Status status() const;

 private:
  bj::object errors_;
};

// Typed readers. A missing or null field gives nullopt; a field of the wrong type records
// a problem in `errors` and gives nullopt.
std::optional<std::string> get_string(const bj::object& o, std::string_view key, FieldErrors& errors,
                                      bool required = false);
std::optional<std::int64_t> get_int(const bj::object& o, std::string_view key, FieldErrors& errors,
                                    bool required = false);
std::optional<double> get_number(const bj::object& o, std::string_view key, FieldErrors& errors,
                                 bool required = false);
std::optional<bool> get_bool(const bj::object& o, std::string_view key, FieldErrors& errors,
                             bool required = false);
const bj::object* get_object(const bj::object& o, std::string_view key, FieldErrors& errors,
                             bool required = false);
const bj::array* get_array(const bj::object& o, std::string_view key, FieldErrors& errors,
                           bool required = false);

}  // namespace sika::json
