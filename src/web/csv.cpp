#include "web/csv.hpp"

#include "core/json.hpp"
#include "core/reason.hpp"

namespace sika::web::csv {

std::string cell(std::string_view v, char separator) {
  std::string s(v);
  if (!s.empty() && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@')) s.insert(0, "'");
  if (s.find_first_of("\"\n\r") == std::string::npos && s.find(separator) == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

Result<Format> format(const Request& req, bool bom_with_semicolon) {
  Format f;
  json::FieldErrors errors;
  if (auto sep = req.query_param("separator"); sep && !sep->empty()) {
    if (*sep == "comma")
      f.separator = ',';
    else if (*sep == "semicolon")
      f.separator = ';';
    else
      errors.add("separator", Problem(Reason::either_of, {{"first", "comma"}, {"second", "semicolon"}}));
  }
  f.bom = bom_with_semicolon && f.separator == ';';
  if (auto bom = req.query_param("bom"); bom && !bom->empty()) {
    if (*bom == "1" || *bom == "true")
      f.bom = true;
    else if (*bom == "0" || *bom == "false")
      f.bom = false;
    else
      errors.add("bom", Problem(Reason::either_of, {{"first", "1"}, {"second", "0"}}));
  }
  SIKA_TRY(errors.status());
  return f;
}

}  // namespace sika::web::csv
