#pragma once
// Name enquiry: which bank a code names, whether an account number is valid there, and whose
// it is. The sandbox rail resolves a valid number at another bank to a deterministic name;
// a number at the service's own bank resolves to that wallet's name.
//
// Thread-safe (reads the views only).

#include <string>
#include <string_view>
#include <variant>

#include "command/decide.h"
#include "projection/views.h"
#include "query-api/message.h"

namespace kobo {

struct ResolvedAccount {
  std::string bank_code;  // the bank's canonical code (CBN code, or its NIBSS code)
  std::string bank_name;
  std::string nibss_code;
  std::string account_number;
  std::string account_name;
  bool own_bank = false;
};

// The account, or why not: Rejection::bank_not_found, invalid_account_number, account_not_found
// (a number of our own bank that no wallet of this mode has), or unavailable when the views
// cannot be read (logged).
std::variant<ResolvedAccount, Rejection> look_up_account(const Views& views, const LedgerConfig& config,
                                                         bool live, std::string_view bank_code,
                                                         std::string_view account_number);

// look_up_account() with its refusal as the answer (rejection_response(): 400 `Bank not found`,
// 400 `Invalid account number`, 404 `Account not found`, 503).
std::variant<ResolvedAccount, http::Response> resolve_account(const Views& views, const LedgerConfig& config,
                                                              bool live, std::string_view bank_code,
                                                              std::string_view account_number);

// The publicId of a saved beneficiary: one per business, mode, bank and account number.
std::string bank_account_id(std::string_view business, bool live, std::string_view bank_code,
                            std::string_view account_number);

}  // namespace kobo
