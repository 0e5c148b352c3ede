#pragma once
// Messages to people (SMS, e-mail). Components send through the Notifier interface; the
// transport is chosen in app/context.cpp. Today the only transport is the sandbox outbox: every
// message is stored in notify_outbox, where the admin CLI (`sika admin outbox list`), the
// dashboard and tests read it. Real SMS and e-mail transports implement the same interface.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "store/db.hpp"

namespace sika::notify {

enum class Channel { sms, email };
std::string_view to_string(Channel c);
// "sms" or "email"; nullopt otherwise.
std::optional<Channel> parse_channel(std::string_view text);

struct Message {
  Channel channel = Channel::sms;
  std::string to;       // E.164-like number for SMS, address for e-mail
  std::string subject;  // e-mail only
  std::string body;
  std::string tag;  // what sent it, e.g. "otp:collection" (never the code itself)
  // The environment (sandbox, prod) of the merchant or partner the message is about; "" when
  // none. GET /sandbox/messages shows sandbox merchants only the messages of "sandbox".
  std::string environment;
};

class Notifier {
 public:
  virtual ~Notifier() = default;
  // Hands the message to the transport. Ok means accepted for delivery, not delivered.
  // Never called inside a write unit (a transport may do network I/O).
  virtual Status send(const Message& message) = 0;

  Status send_sms(std::string to, std::string body, std::string tag = {});
  Status send_email(std::string to, std::string subject, std::string body, std::string tag = {});
};

// A stored outbox message.
struct OutboxMessage {
  std::int64_t id = 0;
  std::string message_id;  // "msg_" + 24 random base64url characters
  Channel channel = Channel::sms;
  std::string to;
  std::string subject;
  std::string body;
  std::string tag;
  std::string environment;
  std::int64_t created_at = 0;
};

// The sandbox transport: each message is one row of notify_outbox, committed before send returns.
class SandboxNotifier final : public Notifier {
 public:
  explicit SandboxNotifier(store::Db& db, std::function<std::int64_t()> clock = {});
  Status send(const Message& message) override;

 private:
  store::Db& db_;
  std::function<std::int64_t()> clock_;
};

struct OutboxFilter {
  std::optional<std::string> to;           // exact recipient
  std::optional<std::string> environment;  // exact environment
  std::int64_t limit = 50;                 // newest first
};

// Lists outbox messages, newest first.
Result<std::vector<OutboxMessage>> list_outbox(store::Conn& c, const OutboxFilter& filter);

}  // namespace sika::notify
