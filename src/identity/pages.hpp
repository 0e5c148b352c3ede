#pragma once
// The identity service's HTML pages (login + consent, sign-up, errors) in French and
// English. Self-contained: inline CSS, no script, no external asset.
#include <string>
#include <string_view>
#include <vector>

#include "core/i18n.hpp"
#include "web/message.hpp"

namespace sika::identity::pages {

// HTML-escapes text for element content and attribute values.
std::string escape(std::string_view text);

struct LoginView {
  i18n::Locale locale = i18n::Locale::fr;
  std::string action;  // form action (absolute path)
  std::string client_name;
  std::vector<std::string> scopes;
  bool signed_in = false;  // true: only the consent part is shown
  std::string user_email;
  std::string email;  // prefills the e-mail field (login_hint, or what a refused attempt typed)
  struct Language {
    i18n::Locale locale;
    std::string url;  // this page's request in that language
  };
  std::vector<Language> languages;  // the language switch (none: not shown)
  std::string error;                // message shown above the form ("" for none)
  web::Fields hidden;               // hidden inputs (authorization parameters, csrf)
  std::string signup_url;           // "" when sign-up is disabled
  std::string logout_url;
};
std::string login(const LoginView& v);

struct SignupView {
  i18n::Locale locale = i18n::Locale::fr;
  std::string action;
  std::string error;
  std::string email;
  std::string name;
  std::string phone;
  web::Fields hidden;
};
std::string signup(const SignupView& v);

// A page explaining an error that cannot be sent back to the client (bad redirect_uri, CSRF...).
std::string error(i18n::Locale locale, std::string_view error_code, std::string_view description);
// A page with a title and one paragraph.
std::string message(i18n::Locale locale, std::string_view title_key, std::string_view text_key);

// The text of a page string in `locale` (keys are listed in pages.cpp).
std::string_view text(i18n::Locale locale, std::string_view key);

// Security headers for every page (CSP without scripts, no framing, no caching).
void secure_headers(web::Response& res);

}  // namespace sika::identity::pages
