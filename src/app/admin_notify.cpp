#include <memory>
#include <optional>

#include "app/admin.hpp"
#include "core/time.hpp"
#include "notify/notifier.hpp"

namespace sika::app {

void add_notify_admin(CLI::App& admin, AdminEnv& env) {
  CLI::App* group = admin.add_subcommand("outbox", "Messages (SMS, e-mail) the sandbox notifier stored");
  group->require_subcommand(1);
  auto* cmd = add_command(*group, env, "list", "List outbox messages, newest first");
  auto to = std::make_shared<std::string>();
  auto limit = std::make_shared<std::int64_t>(50);
  cmd->add_option("--to", *to, "only messages to this phone number or e-mail address");
  cmd->add_option("--limit", *limit, "most messages shown (1 to 1000)")->check(CLI::Range(1, 1000));
  cmd->callback([&env, to, limit] {
    Context& ctx = env.context();
    notify::OutboxFilter filter;
    if (!to->empty()) filter.to = *to;
    filter.limit = *limit;
    std::vector<notify::OutboxMessage> messages;
    check(ctx.db->read([&](store::Conn& c) -> Status {
      auto l = notify::list_outbox(c, filter);
      if (!l) return l.take_error();
      messages = std::move(l).value();
      return {};
    }));
    boost::json::array out;
    std::string human;
    for (const auto& m : messages) {
      out.push_back({{"message_id", m.message_id},
                     {"channel", notify::to_string(m.channel)},
                     {"to", m.to},
                     {"subject", m.subject},
                     {"body", m.body},
                     {"tag", m.tag},
                     {"created_at", iso8601(m.created_at)}});
      human += iso8601(m.created_at) + "\t" + std::string(notify::to_string(m.channel)) + "\t" + m.to + "\t" + m.tag +
               "\t" + m.body + "\n";
    }
    if (!human.empty()) human.pop_back();
    print_result(env, out, human.empty() ? "no messages" : human);
  });
}

}  // namespace sika::app
