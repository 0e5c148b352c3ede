#include "core/reason.hpp"

#include <array>

#include "core/json.hpp"

namespace sika {

namespace reason {

namespace {
constexpr Reason kAll[] = {
#define SIKA_REASON_VALUE(name) Reason::name,
    SIKA_REASONS(SIKA_REASON_VALUE)
#undef SIKA_REASON_VALUE
};
constexpr std::string_view kNames[] = {"text",
#define SIKA_REASON_NAME(name) #name,
                                       SIKA_REASONS(SIKA_REASON_NAME)
#undef SIKA_REASON_NAME
};
}  // namespace

std::span<const Reason> all() { return kAll; }

std::string_view name(Reason r) {
  const auto i = static_cast<std::size_t>(r);
  return i < std::size(kNames) ? kNames[i] : std::string_view("text");
}

std::string code(Reason r) { return "reason." + std::string(name(r)); }

std::string text(const Problem& p, i18n::Locale l) {
  if (p.reason == Reason::text) return std::string(p.param("text"));
  const std::string key = code(p.reason);
  const std::string_view tmpl = i18n::text(key, l);
  std::string out;
  out.reserve(tmpl.size());
  for (std::size_t i = 0; i < tmpl.size();) {
    const std::size_t open = tmpl.find('{', i);
    const std::size_t close = open == std::string_view::npos ? open : tmpl.find('}', open);
    if (close == std::string_view::npos) {
      out.append(tmpl.substr(i));
      break;
    }
    out.append(tmpl.substr(i, open - i));
    out.append(p.param(tmpl.substr(open + 1, close - open - 1)));
    i = close + 1;
  }
  return out;
}

std::vector<std::string_view> placeholders(std::string_view tmpl) {
  std::vector<std::string_view> out;
  for (std::size_t open = tmpl.find('{'); open != std::string_view::npos; open = tmpl.find('{', open + 1)) {
    const std::size_t close = tmpl.find('}', open);
    if (close == std::string_view::npos) break;
    out.push_back(tmpl.substr(open + 1, close - open - 1));
  }
  return out;
}

}  // namespace reason

Error with_problem(Error e, std::string field, Problem p) {
  std::string english = reason::text(p, i18n::Locale::en);
  if (field.empty())
    e.details = boost::json::string(english);
  else
    e.details = boost::json::object{{field, std::move(english)}};
  e.problems.clear();
  e.problems.push_back(FieldProblem{std::move(field), std::move(p)});
  return e;
}

}  // namespace sika
