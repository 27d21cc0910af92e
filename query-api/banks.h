#pragma once
// The Nigerian bank list the service serves (query-api/banks.json, taken from shared/data),
// compiled into the binary so the service needs no data files at run time.
//
// Immutable after first use; thread-safe.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kobo {

struct Bank {
  std::string name;
  std::string bank_code;                  // what clients send: CBN code, or NIBSS code
  std::string nibss_code;                 // 6-digit NIP institution code
  std::optional<std::string> nuban_code;  // 6-digit NUBAN institution code, when known
  std::string slug;
};

const std::vector<Bank>& banks();
// By bankCode or nibssBankCode.
const Bank* find_bank(std::string_view code);

}  // namespace kobo
