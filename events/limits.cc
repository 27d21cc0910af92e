#include "events/limits.h"

#include <nlohmann/json.hpp>

namespace kobo {

TierLimits cbn_tier_limits() {
  TierLimits t{
      TierLimit{Kobo(5'000'000), Kobo(30'000'000)},   // tier 1: N50,000 a day, N300,000 held
      TierLimit{Kobo(20'000'000), Kobo(50'000'000)},  // tier 2: N200,000 a day, N500,000 held
      TierLimit{Kobo(500'000'000), std::nullopt},     // tier 3: N5,000,000 a day, no cap
  };
  KOBO_ASSERT(check_tier_limits(t).ok(), "the CBN's table is a valid table");
  return t;
}

Status check_tier_limits(const TierLimits& t) {
  if (t.size() != kKycTiers) return Status::error("tier limits name tiers 1, 2 and 3");
  for (const TierLimit& l : t)
    if (l.daily_debit.value < 0 || (l.max_balance && l.max_balance->value < 0))
      return Status::error("tier limits are amounts in kobo, not negative");
  // tier_limit() indexes the table by tier.
  KOBO_ASSERT(t.size() == kKycTiers, "a valid table has a limit per tier");
  return {};
}

Result<TierLimits> parse_tier_limits(std::string_view text) {
  const auto json = nlohmann::json::parse(text, nullptr, false);
  const std::string shape =
      R"(want {"1": {"dailyDebit": KOBO, "maxBalance": KOBO|null}, "2": {...}, "3": {...}})";
  if (!json.is_object() || json.size() != kKycTiers) return Status::error("tier limits: " + shape);
  TierLimits out;
  for (std::uint64_t tier = 1; tier <= kKycTiers; ++tier) {
    const auto it = json.find(std::to_string(tier));
    if (it == json.end() || !it->is_object())
      return Status::error("tier limits: no tier " + std::to_string(tier) + "; " + shape);
    const auto daily = it->find("dailyDebit");
    const auto cap = it->find("maxBalance");
    if (daily == it->end() || !daily->is_number_integer() ||
        (cap != it->end() && !cap->is_null() && !cap->is_number_integer()))
      return Status::error("tier limits: tier " + std::to_string(tier) + " " + shape);
    // tier_limit() finds tier t at t - 1.
    KOBO_ASSERT(out.size() == tier - 1, "the tiers are read in order");
    TierLimit l{Kobo(daily->get<std::int64_t>()), std::nullopt};
    if (cap != it->end() && !cap->is_null()) l.max_balance = Kobo(cap->get<std::int64_t>());
    out.push_back(l);
  }
  if (auto s = check_tier_limits(out); !s) return s;
  KOBO_ASSERT(out.size() == kKycTiers, "a parsed table has every tier, in order");
  return out;
}

const TierLimit* tier_limit(const TierLimits& t, std::uint8_t tier) {
  if (tier < 1 || tier > t.size()) return nullptr;
  return &t[tier - 1U];
}

std::int64_t lagos_day(UnixMs t) {
  constexpr UnixMs kLagosOffset = 3'600'000;  // West Africa Time: UTC+1 all year
  const UnixMs local = t + kLagosOffset;
  const std::int64_t day = local >= 0 ? local / kMsPerDay : (local - kMsPerDay + 1) / kMsPerDay;
  KOBO_ASSERT(local - day * kMsPerDay >= 0 && local - day * kMsPerDay < kMsPerDay, "the day is rounded down");
  KOBO_ASSERT((local >= 0) == (day >= 0), "a time after 1970-01-01 in Lagos falls on a day after it");
  return day;
}

}  // namespace kobo
