// Every page's texts table (web/texts.hpp) linked into this binary is registered and says every
// text in both languages (web::texts::table refuses an incomplete table when compiling, so tables
// of files this test does not link are checked there).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "checkout/service.hpp"
#include "links/service.hpp"
#include "payments/service.hpp"
#include "wallets/service.hpp"
#include "web/texts.hpp"

using namespace sika;

// The customer pages are in static libraries: a function of each page file, named here, links that
// file (and so its registered table) into this test.
web::Response (wallets::Service::*linked_wallet_page)(web::Request&) = &wallets::Service::page;
web::Response (payments::Service::*linked_confirm_page)(web::Request&) = &payments::Service::confirm_page;
web::Response (links::Service::*linked_link_page)(web::Request&) = &links::Service::page;
web::Response (checkout::Service::*linked_checkout_page)(web::Request&) = &checkout::Service::page;

TEST(PageTexts, EveryTableOfThePagesHasEveryEntryInBothLanguages) {
  std::set<std::string> names;
  for (const auto& table : web::texts::registered()) {
    names.insert(std::string(table.name));
    EXPECT_FALSE(table.entries.empty()) << table.name;
    EXPECT_EQ(web::texts::first_incomplete(table.entries), "") << table.name;
    for (const auto& e : table.entries) {
      EXPECT_FALSE(e.fr.empty()) << table.name << " " << e.key;
      EXPECT_FALSE(e.en.empty()) << table.name << " " << e.key;
    }
  }
  for (const char* expected : {"dashboard", "wallets/page", "payments/page", "links/page", "checkout/page"})
    EXPECT_TRUE(names.contains(expected)) << expected << " is not registered";
}
