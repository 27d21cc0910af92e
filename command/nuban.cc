#include "command/nuban.h"

#include <array>
#include <cstdio>

#include "common/assert.h"

namespace kobo::nuban {
namespace {

bool all_digits(std::string_view s, std::size_t n) {
  if (s.size() != n) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

std::optional<char> check_digit(std::string_view institution_code, std::string_view serial) {
  if (!all_digits(institution_code, 6) || !all_digits(serial, 9)) return std::nullopt;
  static constexpr std::array<int, 15> kWeights{3, 7, 3, 3, 7, 3, 3, 7, 3, 3, 7, 3, 3, 7, 3};
  int sum = 0;
  for (std::size_t i = 0; i < 6; ++i) sum += (institution_code[i] - '0') * kWeights[i];
  for (std::size_t i = 0; i < 9; ++i) sum += (serial[i] - '0') * kWeights[6 + i];
  const char digit = static_cast<char>('0' + (10 - sum % 10) % 10);
  KOBO_ASSERT(digit >= '0' && digit <= '9', "a check digit is a digit");
  return digit;
}

bool is_valid(std::string_view institution_code, std::string_view account_number) {
  if (!all_digits(account_number, 10)) return false;
  const auto d = check_digit(institution_code, account_number.substr(0, 9));
  return d && *d == account_number[9];
}

std::string account_number(std::string_view institution_code, std::uint64_t n) {
  KOBO_ASSERT(n < 1'000'000'000ULL, "NUBAN serial space exhausted");
  char serial[10];
  std::snprintf(serial, sizeof serial, "%09llu", static_cast<unsigned long long>(n));
  const auto d = check_digit(institution_code, serial);
  KOBO_ASSERT(d.has_value(), "institution code must be 6 digits");
  std::string number = std::string(serial) + *d;
  KOBO_ASSERT(is_valid(institution_code, number), "a NUBAN issued passes its own check");
  return number;
}

}  // namespace kobo::nuban
