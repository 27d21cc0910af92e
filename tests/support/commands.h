#pragma once
// Commands as the unit tests build them (header-only, for any test binary that links command/).

#include <string>

#include "command/commands.h"

namespace kobo::testing {

// A payout of `amount` from wallet `source` to a valid Access Bank account (0123456784), as the
// API would hand it to the writer after name enquiry.
inline BankTransfer bank_transfer(const Caller& caller, std::string source, Kobo amount,
                                  std::string bank_account_id = "bka-x") {
  BankTransfer b;
  b.caller = caller;
  b.source = std::move(source);
  b.bank_account_id = std::move(bank_account_id);
  b.account_number = "0123456784";
  b.account_name = "Ada";
  b.bank_code = "044";
  b.bank_name = "Access Bank";
  b.name_enquiry_ref = "ne";
  b.amount = amount;
  b.narration = "out";
  return b;
}

}  // namespace kobo::testing
