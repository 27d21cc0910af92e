#pragma once
// KYC tiers and their limits (docs/architecture.md, KYC tiers): the one place that says which debits
// count toward a wallet's daily allowance, which credits its balance cap refuses, and what day a
// time falls on. The writer decides with these, the views show them, the audit checks them.
//
// The table in force is a fact of the log: each WriterStarted records the one its writer was
// started with (`--limits FILE`, else the CBN's), so `kobo audit` and a replay need no flag.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "events/types.h"

namespace kobo {

// A wallet's KYC tier: 1, 2 or 3; a wallet without one has no tier limits.
inline constexpr std::uint64_t kKycTiers = 3;

// What one tier allows: debits per Lagos day, and the balance a credit may reach (none: no cap).
struct TierLimit {
  Kobo daily_debit;
  std::optional<Kobo> max_balance;
  auto operator<=>(const TierLimit&) const = default;
  template <typename Self, typename F>
  static void fields(Self& x, F&& f) {
    f("dailyDebit", x.daily_debit);
    f("maxBalance", x.max_balance);
  }
};

// The limits of tiers 1, 2 and 3, in that order.
using TierLimits = std::vector<TierLimit>;

// The CBN's tiered limits for mobile-money wallets (circular BPS/DIR/GEN/CIR/04/007, 2017).
TierLimits cbn_tier_limits();

// Whether `t` is a table of three tiers with amounts that are not negative.
[[nodiscard]] Status check_tier_limits(const TierLimits& t);

// The `--limits FILE` form, the CBN tier table as JSON:
// {"1": {"dailyDebit": 5000000, "maxBalance": 30000000}, "2": {...}, "3": {..., "maxBalance": null}}.
[[nodiscard]] Result<TierLimits> parse_tier_limits(std::string_view json);

// The limit of `tier` (1..3) in `t`, or null for a wallet without a tier.
const TierLimit* tier_limit(const TierLimits& t, std::uint8_t tier);

// The calendar day in Africa/Lagos (UTC+1, no daylight saving) that `t` falls on, counted from
// 1970-01-01: the day a daily debit allowance is for.
std::int64_t lagos_day(UnixMs t);

// A wallet's debits of one day: what its tier's daily allowance is measured against.
struct DailyDebits {
  std::int64_t day = 0;  // lagos_day() of the last counted debit
  Kobo debited;          // the sum of that day's counted debits
  // What has been debited on `today`: nothing when the last debit was on another day.
  Kobo on(std::int64_t today) const { return day == today ? debited : Kobo(0); }
  // After a counted debit of `amount` at day `today`.
  DailyDebits plus(std::int64_t today, Kobo amount) const { return {today, on(today) + amount}; }
  bool operator==(const DailyDebits&) const = default;
};

}  // namespace kobo
