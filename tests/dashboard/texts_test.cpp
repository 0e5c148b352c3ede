// Every page's texts table (web/texts.hpp) linked into this binary is registered and says every
// text in both languages (web::texts::table refuses an incomplete table when compiling, so tables
// of files this test does not link are checked there).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "web/texts.hpp"

using namespace sika;

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
  for (const char* expected : {"dashboard/billing_pages", "dashboard/checkout_pages", "dashboard/merchant_pages",
                               "dashboard/operator_pages", "dashboard/tools_pages", "dashboard/service"})
    EXPECT_TRUE(names.contains(expected)) << expected << " is not registered";
}
