#pragma once
// NUBAN (CBN's Nigerian Uniform Bank Account Number): a 9-digit serial plus a check digit
// computed over the 6-digit institution code and the serial (docs/architecture.md section 7).

#include <optional>
#include <string>
#include <string_view>

namespace kobo::nuban {

// The check digit for `institution_code` (6 digits) and `serial` (9 digits); nullopt when
// either is not all digits of that length.
std::optional<char> check_digit(std::string_view institution_code, std::string_view serial);

// True when `account_number` is 10 digits whose last is the check digit for the institution.
bool is_valid(std::string_view institution_code, std::string_view account_number);

// The account number with serial `n` (0 <= n < 1e9) at the institution.
std::string account_number(std::string_view institution_code, std::uint64_t n);

}  // namespace kobo::nuban
