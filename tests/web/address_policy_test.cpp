#include "web/address_policy.hpp"

#include <gtest/gtest.h>

namespace sika::web {
namespace {

TEST(AddressPolicy, RefusesNonPublicIpv4) {
  for (const char* ip :
       {"0.0.0.0",      "0.1.2.3",      "10.0.0.1",        "10.255.255.255",  "100.64.0.1", "100.127.255.255",
        "127.0.0.1",    "127.8.9.10",   "169.254.169.254", "169.254.0.1",     "172.16.0.1", "172.31.255.255",
        "192.0.0.8",    "192.0.2.1",    "192.88.99.1",     "192.168.1.1",     "198.18.0.1", "198.19.255.255",
        "198.51.100.7", "203.0.113.9",  "224.0.0.1",       "239.255.255.250", "240.0.0.1",  "255.255.255.255",
        "192.31.196.1", "192.52.193.1", "192.175.48.6"})
    EXPECT_FALSE(is_public_address(ip)) << ip;
}

TEST(AddressPolicy, AcceptsPublicIpv4) {
  for (const char* ip : {"1.1.1.1", "8.8.8.8", "93.184.216.34", "100.63.255.255", "100.128.0.0", "172.15.255.255",
                         "172.32.0.0", "169.253.255.255", "192.169.0.1", "198.20.0.1", "223.255.255.255", "11.0.0.1"})
    EXPECT_TRUE(is_public_address(ip)) << ip;
}

TEST(AddressPolicy, RefusesNonPublicIpv6) {
  for (const char* ip : {"::",
                         "::1",
                         "fe80::1",
                         "febf::1",
                         "fc00::1",
                         "fd12:3456::1",
                         "ff02::1",
                         "ff0e::1",
                         "::ffff:127.0.0.1",
                         "::ffff:10.1.2.3",
                         "::ffff:169.254.169.254",
                         "::ffff:192.168.0.1",
                         "::127.0.0.1",
                         "2001:db8::1",
                         "2001::1",
                         "2002:7f00:1::1",
                         "2001:10::1",
                         "2001:20::1",
                         "3fff::1",
                         "3fff:fff::1",
                         "64:ff9b::10.0.0.1",
                         "64:ff9b::7f00:1",
                         "100::1",
                         "4000::1"})
    EXPECT_FALSE(is_public_address(ip)) << ip;
}

TEST(AddressPolicy, AcceptsPublicIpv6) {
  for (const char* ip : {"2606:4700:4700::1111", "2a00:1450:4007:80a::200e", "2001:4860::8888", "::ffff:8.8.8.8",
                         "64:ff9b::808:808", "3ffe::1", "3fff:1000::1"})
    EXPECT_TRUE(is_public_address(ip)) << ip;
}

TEST(AddressPolicy, JudgesIpv4InsideIpv6AsIpv4) {
  EXPECT_TRUE(is_public_address("2002:808:808::1"));  // 6to4 of 8.8.8.8
  EXPECT_FALSE(is_public_address("2002:a00:1::1"));   // 6to4 of 10.0.0.1
  EXPECT_FALSE(is_public_address("64:ff9b::a9fe:a9fe"));
}

TEST(AddressPolicy, RawBytesFollowTheSameRules) {
  EXPECT_TRUE(is_public_bytes(std::string_view("\x08\x08\x08\x08", 4)));
  EXPECT_FALSE(is_public_bytes(std::string_view("\x7f\x00\x00\x01", 4)));
  EXPECT_FALSE(is_public_bytes(std::string_view("\xa9\xfe\xa9\xfe", 4)));
  std::string loopback6(16, '\0');
  loopback6[15] = 1;
  EXPECT_FALSE(is_public_bytes(loopback6));
  EXPECT_FALSE(is_public_bytes("abc"));  // neither 4 nor 16 bytes
}

TEST(AddressPolicy, RefusesWhatIsNotALiteral) {
  for (const char* s : {"", "localhost", "example.com", "[::1]", "1.2.3", "fe80::1%eth0", "0x7f.0.0.1", "2130706433"})
    EXPECT_FALSE(is_public_address(s)) << s;
}

}  // namespace
}  // namespace sika::web
