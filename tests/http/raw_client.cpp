#include "raw_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace sika::http::test {

namespace {
using Clock = std::chrono::steady_clock;
int remaining_ms(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(ms);
}
}  // namespace

RawClient::RawClient(unsigned short port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd_);
    fd_ = -1;
    return;
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

RawClient::~RawClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawClient::send(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

bool RawClient::fill(int timeout_ms) {
  if (eof_ || fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return false;
  char tmp[65536];
  ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  buf_.append(tmp, static_cast<std::size_t>(n));
  return true;
}

std::optional<RawResponse> RawClient::read_response(bool head, int timeout_ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::size_t end;
  while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
    if (!fill(remaining_ms(deadline))) return std::nullopt;
  RawResponse r;
  std::string head_block = buf_.substr(0, end);
  buf_.erase(0, end + 4);
  std::size_t line_end = head_block.find("\r\n");
  r.status_line = head_block.substr(0, line_end);
  if (r.status_line.size() < 12) return std::nullopt;
  r.status = std::stoi(r.status_line.substr(9, 3));
  std::size_t pos = line_end == std::string::npos ? head_block.size() : line_end + 2;
  while (pos < head_block.size()) {
    std::size_t e = head_block.find("\r\n", pos);
    if (e == std::string::npos) e = head_block.size();
    std::string line = head_block.substr(pos, e - pos);
    pos = e + 2;
    std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    r.headers[name] = value;
  }
  bool bodiless = head || r.status / 100 == 1 || r.status == 204 || r.status == 304;
  if (!bodiless && r.headers.count("content-length")) {
    std::size_t len = std::stoul(r.headers["content-length"]);
    while (buf_.size() < len)
      if (!fill(remaining_ms(deadline))) return std::nullopt;
    r.body = buf_.substr(0, len);
    buf_.erase(0, len);
  }
  return r;
}

bool RawClient::wait_closed(int timeout_ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!eof_) {
    if (Clock::now() >= deadline) return false;
    fill(std::max(1, remaining_ms(deadline)));
  }
  return true;
}

std::string RawClient::read_until_close(int timeout_ms) {
  wait_closed(timeout_ms);
  std::string out;
  out.swap(buf_);
  return out;
}

std::string request(std::string_view method, std::string_view target, std::string_view extra_headers,
                    std::string_view body) {
  std::string r;
  r.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: test\r\n");
  r.append(extra_headers);
  if (!body.empty()) r.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  r.append("\r\n").append(body);
  return r;
}

unsigned short unused_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace sika::http::test
