#pragma once
// CSV downloads (RFC 4180 rows, CRLF line ends): one cell writer and the format query parameters
// every export shares (the dashboard's transactions, merchant statements).
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "web/message.hpp"

namespace sika::web::csv {

// A CSV cell: quoted when it holds the separator, a quote or a line break; a leading = + - @ is
// neutralised so spreadsheets do not run it.
std::string cell(std::string_view v, char separator);

// How a CSV is written: `separator=comma|semicolon` (semicolon: what Excel opens in a French
// locale) and `bom=1|0` (a UTF-8 byte order mark, so Excel reads the accents). Without them:
// comma, no BOM (RFC 4180, what scripts expect).
struct Format {
  char separator = ',';
  bool bom = false;
};
// The format of a request's query; 400 naming `separator` or `bom` for another value.
// `bom_with_semicolon`: a semicolon-separated file gets a BOM unless `bom` says otherwise.
Result<Format> format(const Request& req, bool bom_with_semicolon = false);

// The UTF-8 byte order mark.
inline constexpr std::string_view kBom = "\xEF\xBB\xBF";

}  // namespace sika::web::csv
