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

// Parses a JSON document strictly: malformed JSON, nesting deeper than 64, a key repeated in
// one object (at any depth) and a NUL character in a string or key are refused with empty_data.
// The details name the member ("channel", "metadata.note", "lines[1].reference") when there is one.
Result<bj::value> parse(std::string_view text);

// Parses a body that must be a JSON object (empty body -> empty_data "body is empty").
Result<bj::object> parse_object(std::string_view text);

// Serializes compactly. Numbers are written as people and clients expect them: integral doubles
// without exponent or fraction (3, 10000), others in their shortest round-trip form (0.25);
// exponent form only where it is shorter (1e+21). Non-finite doubles become null.
std::string dump(const bj::value& v);
// Appends the serialization of `v` to `out`.
void dump_to(const bj::value& v, std::string& out);
// Appends `s` as a JSON string literal (quoted, escaped) to `out`.
void dump_string_to(std::string_view s, std::string& out);

// The decimal text of a JSON number as it was sent: integers as written, doubles in their
// shortest round-trip form ("10.5"); nullopt for any other type.
std::optional<std::string> number_text(const bj::value& v);

// Collects per-field validation problems (the first of each field counts); becomes an empty_data
// error carrying them, with error.details {field: English text} in the order they were added.
class FieldErrors {
 public:
  void add(std::string_view field, Problem problem);
  // Adds each problem of `other` as prefix + its field.
  void add_all(std::string_view prefix, const FieldErrors& other);
  // Adds the problems of `e` (its typed problems, else the texts of its details); `field` names a
  // problem of the whole request, or a details that names no field ("is invalid" when not a text).
  void add_error(const Error& e, std::string_view field);
  bool empty() const { return problems_.empty(); }
  bool has(std::string_view field) const { return details_.contains(field); }
  const std::vector<FieldProblem>& problems() const { return problems_; }
  // The English details: {field: text}.
  const bj::object& details() const { return details_; }
  // Returns the empty_data error of the problems if any was recorded.
  Status status() const;

 private:
  std::vector<FieldProblem> problems_;
  bj::object details_;
};

// Typed readers. A missing or null field gives nullopt; a field of the wrong type records
// a problem in `errors` and gives nullopt.
std::optional<std::string> get_string(const bj::object& o, std::string_view key, FieldErrors& errors,
                                      bool required = false);
std::optional<std::int64_t> get_int(const bj::object& o, std::string_view key, FieldErrors& errors,
                                    bool required = false);
std::optional<double> get_number(const bj::object& o, std::string_view key, FieldErrors& errors, bool required = false);
std::optional<bool> get_bool(const bj::object& o, std::string_view key, FieldErrors& errors, bool required = false);
const bj::object* get_object(const bj::object& o, std::string_view key, FieldErrors& errors, bool required = false);
const bj::array* get_array(const bj::object& o, std::string_view key, FieldErrors& errors, bool required = false);

}  // namespace sika::json
