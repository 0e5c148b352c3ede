#pragma once
// Message codes and their French and English texts. Every code used in an envelope is
// listed here; i18n_test checks that both texts exist for each one.
#include <string>
#include <string_view>
#include <vector>

namespace sika::i18n {

enum class Locale { fr, en };

std::string_view name(Locale l);
// Picks fr or en from an Accept-Language header (q-values honoured); `fallback` otherwise.
Locale negotiate(std::string_view accept_language, Locale fallback);
// Returns the text of `code` in `l`; the code itself when unknown.
std::string_view text(std::string_view code, Locale l);
bool known(std::string_view code);
std::vector<std::string_view> all_codes();

}  // namespace sika::i18n
