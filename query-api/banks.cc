#include "query-api/banks.h"

#include <nlohmann/json.hpp>

#include "common/assert.h"

namespace kobo {

extern const char* const kBanksJson;  // generated from banks.json by CMake

const std::vector<Bank>& banks() {
  static const std::vector<Bank> list = [] {
    std::vector<Bank> out;
    for (const auto& b : nlohmann::json::parse(kBanksJson)) {
      Bank bank{b.at("bankName"), b.at("bankCode"), b.at("nibssBankCode"), std::nullopt, b.at("slug")};
      if (b.at("nubanCode").is_string()) bank.nuban_code = b.at("nubanCode").get<std::string>();
      out.push_back(std::move(bank));
    }
    KOBO_ASSERT(!out.empty(), "the bank list is empty");
    return out;
  }();
  return list;
}

const Bank* find_bank(std::string_view code) {
  for (const Bank& b : banks())
    if (b.bank_code == code || b.nibss_code == code) return &b;
  return nullptr;
}

}  // namespace kobo
