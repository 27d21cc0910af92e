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
#include "query-api/http_server.h"

namespace kobo {

struct ResolvedAccount {
  std::string bank_code;  // the bank's canonical code (CBN code, or its NIBSS code)
  std::string bank_name;
  std::string nibss_code;
  std::string account_number;
  std::string account_name;
  bool own_bank = false;
};

// The account, or the 4xx answer: 400 `Bank not found`, 400 `Invalid account number`,
// 404 `Account not found` (a number of our own bank that no wallet of this mode has); or 503
// when the views cannot be read.
std::variant<ResolvedAccount, http::Response> resolve_account(const Views& views, const LedgerConfig& config,
                                                              bool live, std::string_view bank_code,
                                                              std::string_view account_number);

// The publicId of a saved beneficiary: one per business, mode, bank and account number.
std::string bank_account_id(std::string_view business, bool live, std::string_view bank_code,
                            std::string_view account_number);

}  // namespace kobo
