// RetrySchedule and forbidden_address_reason (policy.h): the pure rules of delivery.
#include <boost/asio/ip/address.hpp>
#include <charconv>

#include "webhooks/policy.h"

namespace kobo {

namespace {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  std::int64_t n = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, n);
  if (ec != std::errc() || p == text.data() || n < 0 || n > 1'000'000'000) return std::nullopt;
  const std::string_view unit(p, static_cast<std::size_t>(end - p));
  if (unit == "ms") return std::chrono::milliseconds(n);
  if (unit == "s") return std::chrono::seconds(n);
  if (unit == "m") return std::chrono::minutes(n);
  if (unit == "h") return std::chrono::hours(n);
  return std::nullopt;
}

}  // namespace

Result<RetrySchedule> RetrySchedule::parse(std::string_view delays, std::string_view window) {
  RetrySchedule s;
  s.delays.clear();
  while (!delays.empty()) {
    const auto comma = delays.find(',');
    const auto item = delays.substr(0, comma);
    const auto d = parse_duration(item);
    if (!d || d->count() == 0)
      return Status::error("--webhook-retry-schedule wants positive durations like 10s,1m,5m,30m,1h; got '" +
                           std::string(item) + "'");
    s.delays.push_back(*d);
    delays = comma == std::string_view::npos ? std::string_view() : delays.substr(comma + 1);
  }
  if (s.delays.empty()) return Status::error("--webhook-retry-schedule is empty");
  const auto w = parse_duration(window);
  if (!w)
    return Status::error("--webhook-retry-window wants a duration like 24h; got '" + std::string(window) +
                         "'");
  s.window = *w;
  return s;
}

std::chrono::milliseconds RetrySchedule::delay_after(std::uint32_t failed_attempts) const {
  KOBO_ASSERT(failed_attempts >= 1 && !delays.empty(), "a delay follows a failed attempt");
  return delays[std::min<std::size_t>(failed_attempts - 1, delays.size() - 1)];
}

namespace {

std::optional<std::string> v4_reason(const boost::asio::ip::address_v4& a) {
  const std::uint32_t v = a.to_uint();
  auto in = [v](std::uint32_t net, int bits) { return (v >> (32 - bits)) == (net >> (32 - bits)); };
  if (in(0x00000000, 8)) return "unspecified";  // 0.0.0.0/8 "this network"
  if (in(0x7f000000, 8)) return "loopback";     // 127.0.0.0/8
  if (in(0x0a000000, 8) || in(0xac100000, 12) || in(0xc0a80000, 16)) return "private";  // RFC 1918
  if (in(0x64400000, 10)) return "shared address space (CGNAT)";                        // 100.64.0.0/10
  if (in(0xa9fe0000, 16)) return "link-local";                      // 169.254.0.0/16 (cloud metadata)
  if (in(0xc0000000, 24) || in(0xc6120000, 15)) return "reserved";  // 192.0.0.0/24, 198.18.0.0/15
  if (in(0xe0000000, 4)) return "multicast";                        // 224.0.0.0/4
  if (in(0xf0000000, 4)) return "reserved";                         // 240.0.0.0/4, broadcast included
  return std::nullopt;
}

}  // namespace

std::optional<std::string> forbidden_address_reason(std::string_view address) {
  boost::system::error_code ec;
  const auto a = boost::asio::ip::make_address(address, ec);
  if (ec) return "not an IP address";
  if (a.is_v4()) return v4_reason(a.to_v4());
  const auto v6 = a.to_v6();
  if (v6.is_v4_mapped()) return v4_reason(boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6));
  const auto b = v6.to_bytes();
  // 64:ff9b::/96, NAT64: the IPv4 address is in the last four bytes.
  static constexpr std::array<unsigned char, 12> kNat64{0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::equal(kNat64.begin(), kNat64.end(), b.begin()))
    return v4_reason(boost::asio::ip::address_v4({b[12], b[13], b[14], b[15]}));
  if (v6.is_unspecified()) return "unspecified";
  if (v6.is_loopback()) return "loopback";
  if ((b[0] & 0xfe) == 0xfc) return "unique-local";  // fc00::/7
  if (v6.is_link_local()) return "link-local";       // fe80::/10
  if (v6.is_site_local()) return "private";          // fec0::/10, deprecated site-local
  if (v6.is_multicast()) return "multicast";         // ff00::/8
  return std::nullopt;
}

std::optional<DeliveryStatus> delivery_status_from_string(std::string_view s) {
  for (const auto status : {DeliveryStatus::pending, DeliveryStatus::succeeded, DeliveryStatus::failed})
    if (to_string(status) == s) return status;
  return std::nullopt;
}

DeliveryState next_delivery_state(const RetrySchedule& schedule, UnixMs created, std::uint32_t attempts,
                                  bool ok, bool manual, UnixMs now) {
  KOBO_ASSERT(attempts >= 1, "a delivery's state moves when an attempt ends");
  if (ok) return {DeliveryStatus::succeeded, std::nullopt};
  if (manual) return {DeliveryStatus::failed, std::nullopt};  // one attempt, not a new schedule
  const UnixMs due = now + schedule.delay_after(attempts).count();
  if (attempts >= schedule.attempts_max || due > created + schedule.window.count())
    return {DeliveryStatus::failed, std::nullopt};
  return {DeliveryStatus::pending, due};
}

RetriedState retried_delivery_state(DeliveryStatus status, bool manual, UnixMs now) {
  return {{DeliveryStatus::pending, now}, status == DeliveryStatus::pending ? manual : true};
}

std::string_view to_string(DeliveryStatus s) {
  switch (s) {
    case DeliveryStatus::pending:
      return "pending";
    case DeliveryStatus::succeeded:
      return "succeeded";
    case DeliveryStatus::failed:
      return "failed";
  }
  KOBO_ASSERT(false, "unknown delivery status");
  return {};
}

}  // namespace kobo
