#include "web/texts.hpp"

namespace sika::web::texts {

namespace {
std::vector<Registered>& tables() {
  static std::vector<Registered> all;
  return all;
}
}  // namespace

const std::vector<Registered>& registered() { return tables(); }

void Enrolled::enroll(std::string_view name, std::span<const Entry> entries) { tables().push_back({name, entries}); }

}  // namespace sika::web::texts
