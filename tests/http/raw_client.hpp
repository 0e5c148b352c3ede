#pragma once
// A deliberately dumb HTTP/1.1 client over a POSIX socket, to drive the server byte by byte.
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace sika::http::test {

struct RawResponse {
  int status = 0;
  std::string status_line;
  std::map<std::string, std::string> headers;  // lower-cased names
  std::string body;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

class RawClient {
 public:
  explicit RawClient(unsigned short port);
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  // Returns false when the peer refused the bytes (closed connection).
  bool send(std::string_view bytes);
  // Reads one response; the body is read per Content-Length (none for HEAD / 1xx / 204 / 304).
  std::optional<RawResponse> read_response(bool head = false, int timeout_ms = 5000);
  // Returns true iff the peer closes the connection (EOF or reset) within timeout_ms;
  // bytes received meanwhile are kept for read_response.
  bool wait_closed(int timeout_ms);
  // Everything received until the peer closes or timeout_ms passes.
  std::string read_until_close(int timeout_ms);

 private:
  // Reads more bytes into buf_; false on EOF, error or timeout.
  bool fill(int timeout_ms);
  int fd_ = -1;
  std::string buf_;
  bool eof_ = false;
};

// A request line + headers helper: "GET /x HTTP/1.1\r\nHost: t\r\n<extra>\r\n" + body.
std::string request(std::string_view method, std::string_view target, std::string_view extra_headers = "",
                    std::string_view body = "");

// A port on 127.0.0.1 that nothing listens on (bound then released).
unsigned short unused_port();

}  // namespace sika::http::test
