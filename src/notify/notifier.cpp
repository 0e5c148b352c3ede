#include "notify/notifier.hpp"

#include <algorithm>

#include "core/random.hpp"
#include "core/time.hpp"

namespace sika::notify {

std::string_view to_string(Channel c) { return c == Channel::email ? "email" : "sms"; }

std::optional<Channel> parse_channel(std::string_view text) {
  if (text == "sms") return Channel::sms;
  if (text == "email") return Channel::email;
  return std::nullopt;
}

Status Notifier::send_sms(std::string to, std::string body, std::string tag) {
  return send(Message{Channel::sms, std::move(to), {}, std::move(body), std::move(tag)});
}

Status Notifier::send_email(std::string to, std::string subject, std::string body, std::string tag) {
  return send(Message{Channel::email, std::move(to), std::move(subject), std::move(body), std::move(tag)});
}

SandboxNotifier::SandboxNotifier(store::Db& db, std::function<std::int64_t()> clock)
    : db_(db), clock_(std::move(clock)) {}

Status SandboxNotifier::send(const Message& m) {
  if (m.to.empty()) return empty_data(boost::json::object{{"to", "is required"}});
  const std::string message_id = "msg_" + random_token(18);
  const std::int64_t t = clock_ ? clock_() : now_ms();
  return db_.write([&](store::Conn& c) -> Status {
    SIKA_TRY(
        c.exec("INSERT INTO notify_outbox (message_id, channel, recipient, subject, body, tag, environment, "
               "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               {message_id, std::string(to_string(m.channel)), m.to, m.subject, m.body, m.tag, m.environment, t}));
    return {};
  });
}

Result<std::vector<OutboxMessage>> list_outbox(store::Conn& c, const OutboxFilter& f) {
  std::string sql =
      "SELECT id, message_id, channel, recipient, subject, body, tag, created_at, environment FROM notify_outbox";
  store::Params params;
  const char* glue = " WHERE ";
  if (f.to) {
    sql += std::string(glue) + "recipient = ?";
    params.emplace_back(*f.to);
    glue = " AND ";
  }
  if (f.environment) {
    sql += std::string(glue) + "environment = ?";
    params.emplace_back(*f.environment);
  }
  sql += " ORDER BY id DESC LIMIT ?";
  params.emplace_back(std::clamp<std::int64_t>(f.limit, 1, 1000));
  SIKA_ASSIGN_OR_RETURN(auto rows, c.query(sql, params));
  std::vector<OutboxMessage> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    OutboxMessage m;
    m.id = r.i64(0);
    m.message_id = r.str(1);
    m.channel = parse_channel(r.str(2)).value_or(Channel::sms);
    m.to = r.str(3);
    m.subject = r.str(4);
    m.body = r.str(5);
    m.tag = r.str(6);
    m.created_at = r.i64(7);
    m.environment = r.str(8);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace sika::notify
