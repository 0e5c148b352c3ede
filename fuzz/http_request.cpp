// Raw bytes off a connection -> requests, framed as the server frames them: Beast's request
// parser with the server's default header and body limits, several requests per connection
// (keep-alive and pipelining), bytes arriving in pieces of a size the input chooses, the Host
// rule, then the target split and the Accept-Language negotiation the server applies.
#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/i18n.hpp"
#include "web/message.hpp"

namespace http = boost::beast::http;

namespace {

constexpr std::uint32_t kHeaderLimit = 16384;  // http.max_header_bytes
constexpr std::uint64_t kBodyLimit = 1 << 20;  // http.max_body_bytes

// Takes one parsed request through what the server does before routing.
void accept(http::request<http::string_body>& msg) {
  sika::web::Request req;
  req.method = std::string(msg.method_string());
  for (char& c : req.method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  req.target = std::string(msg.target());
  for (const auto& f : msg) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    req.headers.emplace_back(std::move(name), std::string(f.value()));
  }
  req.body = std::move(msg.body());
  if (msg.version() >= 11 && msg.count(http::field::host) != 1) return;  // 400 in the server
  req.locale = sika::i18n::negotiate(req.header("accept-language"), sika::i18n::Locale::fr);
  (void)sika::web::parse_target(req.target, req);
  (void)req.content_type();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte picks how many bytes each read delivers (1 to 256), as TCP segments would.
  const std::size_t piece = 1 + data[0];
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  while (!in.empty()) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kHeaderLimit);
    parser.body_limit(kBodyLimit);
    parser.eager(true);
    boost::beast::error_code ec;
    std::size_t available = std::min(piece, in.size());  // bytes "received" and not yet consumed
    while (!parser.is_done()) {
      std::size_t used = parser.put(boost::asio::buffer(in.data(), available), ec);
      in.remove_prefix(used);
      available -= used;
      if (ec && ec != http::error::need_more) return 0;  // the server answers 4xx and closes
      if (ec || used == 0) {
        ec = {};
        if (available == in.size()) {  // the peer closed: nothing more will come
          parser.put_eof(ec);
          if (ec || !parser.is_done()) return 0;
          break;
        }
        available = std::min(in.size(), available + piece);
      }
    }
    auto msg = parser.release();
    bool keep_alive = msg.keep_alive();
    accept(msg);
    if (!keep_alive) return 0;
  }
  return 0;
}
