// The client address behind trusted proxies: only a trusted peer's forwarding header counts, it
// is walked right to left past trusted hops, and a client cannot choose its own address.
#include <gtest/gtest.h>

#include "web/client_address.hpp"
#include "web/envelope.hpp"
#include "web/router.hpp"

namespace sika::web {
namespace {

Request with_headers(Fields headers) {
  Request r;
  r.method = "GET";
  r.path = "/whoami";
  r.headers = std::move(headers);
  return r;
}

TrustedProxies proxies(std::string_view list, ForwardedHeader h = ForwardedHeader::x_forwarded_for) {
  auto p = TrustedProxies::parse(list, h);
  EXPECT_TRUE(p.ok()) << list;
  return p.ok() ? *p : TrustedProxies{};
}

TEST(ClientAddress, ParsesAddressesAndBlocksAndNamesABadEntry) {
  TrustedProxies p = proxies("10.0.0.0/8, 192.0.2.7 2001:db8::/32,::1");
  EXPECT_TRUE(p.trusts("10.20.30.40"));
  EXPECT_TRUE(p.trusts("::ffff:10.1.1.1"));  // IPv4-mapped is the same address
  EXPECT_TRUE(p.trusts("192.0.2.7"));
  EXPECT_FALSE(p.trusts("192.0.2.8"));
  EXPECT_TRUE(p.trusts("2001:db8:1::5"));
  EXPECT_FALSE(p.trusts("2001:db9::1"));
  EXPECT_TRUE(p.trusts("::1"));
  EXPECT_FALSE(p.trusts("not-an-ip"));
  EXPECT_TRUE(proxies("").empty());
  EXPECT_TRUE(proxies("0.0.0.0/0").trusts("203.0.113.9"));
  for (std::string_view bad : {"10.0.0.0/33", "2001:db8::/129", "10.0.0.1:80", "proxy.local", "10.0.0.0/x", "[::1]"}) {
    auto r = TrustedProxies::parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(std::string(r.error().details.as_string()).find(bad), std::string::npos);
  }
}

TEST(ClientAddress, AnUntrustedPeerIsTheClientWhateverItSends) {
  TrustedProxies p = proxies("10.0.0.0/8");
  Request r = with_headers({{"x-forwarded-for", "198.51.100.1"}});
  EXPECT_EQ(p.client_address("203.0.113.9", r), "203.0.113.9");
  EXPECT_EQ(TrustedProxies{}.client_address("203.0.113.9", r), "203.0.113.9");
  EXPECT_EQ(p.client_address("::ffff:203.0.113.9", r), "203.0.113.9");
}

TEST(ClientAddress, WalksRightToLeftPastTrustedHops) {
  TrustedProxies p = proxies("10.0.0.0/8");
  // The client forged the leftmost entry; the edge proxy 10.0.0.2 appended the real peer.
  Request forged = with_headers({{"x-forwarded-for", "1.2.3.4, 198.51.100.20, 10.0.0.2"}});
  EXPECT_EQ(p.client_address("10.0.0.1", forged), "198.51.100.20");
  // Several header lines are one list, in order.
  Request split = with_headers({{"x-forwarded-for", "1.2.3.4"}, {"x-forwarded-for", "198.51.100.20"}});
  EXPECT_EQ(p.client_address("10.0.0.1", split), "198.51.100.20");
  // Every hop trusted: the leftmost is the client.
  Request internal = with_headers({{"x-forwarded-for", "10.9.9.9, 10.0.0.2"}});
  EXPECT_EQ(p.client_address("10.0.0.1", internal), "10.9.9.9");
  // No header: the proxy itself.
  EXPECT_EQ(p.client_address("10.0.0.1", with_headers({})), "10.0.0.1");
  // A hop that is not an address stops the walk at the last trusted hop.
  Request unknown = with_headers({{"x-forwarded-for", "198.51.100.20, unknown, 10.0.0.2"}});
  EXPECT_EQ(p.client_address("10.0.0.1", unknown), "10.0.0.2");
  // Ports and IPv6 forms are normalised.
  Request ported = with_headers({{"x-forwarded-for", "198.51.100.20:5555"}});
  EXPECT_EQ(p.client_address("10.0.0.1", ported), "198.51.100.20");
  Request v6 = with_headers({{"x-forwarded-for", "2001:DB8::0:1"}});
  EXPECT_EQ(p.client_address("10.0.0.1", v6), "2001:db8::1");
  // The Forwarded header is ignored unless it is the configured one.
  Request both = with_headers({{"forwarded", "for=192.0.2.99"}, {"x-forwarded-for", "198.51.100.20"}});
  EXPECT_EQ(p.client_address("10.0.0.1", both), "198.51.100.20");
}

TEST(ClientAddress, ReadsRfc7239Forwarded) {
  TrustedProxies p = proxies("10.0.0.0/8, 2001:db8::/32", ForwardedHeader::forwarded);
  Request r = with_headers(
      {{"forwarded", R"(for=192.0.2.43;proto=https, For="[2001:db8:cafe::17]:4711";by=10.0.0.5, for=10.0.0.3)"}});
  EXPECT_EQ(p.client_address("10.0.0.1", r), "192.0.2.43");  // 2001:db8:cafe::17 is trusted too
  Request hidden = with_headers({{"forwarded", "for=198.51.100.20, for=_hidden, for=10.0.0.3"}});
  EXPECT_EQ(p.client_address("10.0.0.1", hidden), "10.0.0.3");
  Request no_for = with_headers({{"forwarded", "proto=https"}});
  EXPECT_EQ(p.client_address("10.0.0.1", no_for), "10.0.0.1");
  Request xff_only = with_headers({{"x-forwarded-for", "198.51.100.20"}});
  EXPECT_EQ(p.client_address("10.0.0.1", xff_only), "10.0.0.1");
}

TEST(ClientAddress, TheRouterSetsItOnceForEveryRoute) {
  Router router;
  router.trust_proxies(proxies("127.0.0.1"));
  router.add({Surface::system, "GET", "/whoami",
              [](Request& req) { return Response::text(200, req.remote_ip + " via " + req.peer_ip); }, open_access()});
  Request behind = with_headers({{"x-forwarded-for", "203.0.113.9"}});
  behind.remote_ip = "127.0.0.1";
  EXPECT_EQ(router.dispatch(behind).body, "203.0.113.9 via 127.0.0.1");
  Request direct = with_headers({{"x-forwarded-for", "203.0.113.9"}});
  direct.remote_ip = "192.0.2.1";
  EXPECT_EQ(router.dispatch(direct).body, "192.0.2.1 via 192.0.2.1");
}

}  // namespace
}  // namespace sika::web
