#pragma once
// The pure rules of delivery: when to try again, which addresses a webhook may not reach, and how
// a delivery's status moves. Below both the delivery database (webhooks.h) and the HTTP client (http_post.h),
// which apply them.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/time.h"

namespace kobo {

// When to try again. delays[i] is the wait after the (i+1)-th failed attempt; the last one
// repeats. A delivery fails for good when the next attempt would fall later than `window` after
// the delivery was recorded, or after attempts_max attempts.
struct RetrySchedule {
  std::vector<std::chrono::milliseconds> delays{std::chrono::seconds(10), std::chrono::minutes(1),
                                                std::chrono::minutes(5), std::chrono::minutes(30),
                                                std::chrono::hours(1)};
  std::chrono::milliseconds window = std::chrono::hours(24);
  std::uint32_t attempts_max = 40;  // the default schedule makes ~28 in 24 h

  // "10s,1m,5m,30m,1h" and "24h": integers with a unit of ms, s, m or h.
  [[nodiscard]] static Result<RetrySchedule> parse(std::string_view delays, std::string_view window);
  // The wait after `failed_attempts` (>= 1) failures.
  std::chrono::milliseconds delay_after(std::uint32_t failed_attempts) const;
};

// Why a webhook may not be sent to `address` (server-side request forgery): "loopback",
// "private", "link-local", "shared address space (CGNAT)", "unique-local", "unspecified",
// "multicast", "reserved"; nullopt for a public address. IPv4-mapped and NAT64 IPv6 addresses
// are judged by the IPv4 address they carry. `address` is numeric ("10.0.0.1", "::1").
std::optional<std::string> forbidden_address_reason(std::string_view address);

// Delivery statuses. pending -> succeeded | failed (the schedule ran out); a manual retry moves
// succeeded or failed back to pending for one attempt.
enum class DeliveryStatus { pending, succeeded, failed };
std::string_view to_string(DeliveryStatus s);
std::optional<DeliveryStatus> delivery_status_from_string(std::string_view s);

// Where a delivery stands after an attempt ended: its status and, while pending, when it is next
// attempted.
struct DeliveryState {
  DeliveryStatus status = DeliveryStatus::pending;
  std::optional<UnixMs> next_attempt;
  bool operator==(const DeliveryState&) const = default;
};
// The transition of an attempt that ended at `now`: the `attempts`-th (>= 1) of a delivery
// recorded at `created`. A 2xx (`ok`) succeeds; a failed manual retry (`manual`) is one attempt
// and fails; otherwise the next attempt is due after the schedule's delay, unless that falls past
// the window or the attempts are used up, and then the delivery fails. Pure.
DeliveryState next_delivery_state(const RetrySchedule& schedule, UnixMs created, std::uint32_t attempts,
                                  bool ok, bool manual, UnixMs now);
// A manual retry at `now`: a pending delivery is due now and stays as manual as it was; a
// finished one is pending again for one attempt (manual). Pure.
struct RetriedState {
  DeliveryState state;
  bool manual = false;
  bool operator==(const RetriedState&) const = default;
};
RetriedState retried_delivery_state(DeliveryStatus status, bool manual, UnixMs now);

}  // namespace kobo
