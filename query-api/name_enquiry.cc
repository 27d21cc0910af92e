#include "query-api/name_enquiry.h"

#include <array>

#include "command/nuban.h"
#include "common/crypto.h"
#include "common/log.h"
#include "events/ledger.h"
#include "query-api/banks.h"
#include "query-api/envelope.h"
#include "query-api/rejections.h"

namespace kobo {
namespace {

constexpr std::array<std::string_view, 16> kFirstNames{
    "Adaeze", "Babatunde", "Chinedu", "Damilola", "Emeka", "Folake", "Garba",   "Halima",
    "Ifeoma", "Jide",      "Kemi",    "Lanre",    "Musa",  "Ngozi",  "Olumide", "Tolu"};
constexpr std::array<std::string_view, 16> kLastNames{
    "Okafor",   "Adeyemi", "Bello",   "Eze",    "Ibrahim", "Nwosu",   "Ogunleye", "Usman",
    "Abubakar", "Okonkwo", "Balogun", "Chukwu", "Danjuma", "Adewale", "Obi",      "Yusuf"};

std::string sandbox_name(std::string_view bank_code, std::string_view number) {
  const Sha256 h = sha256(std::string(bank_code) + ":" + std::string(number));
  return std::string(kFirstNames[h[0] % kFirstNames.size()]) + " " +
         std::string(kLastNames[h[1] % kLastNames.size()]);
}

bool ten_digits(std::string_view s) {
  return s.size() == 10 && s.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

std::variant<ResolvedAccount, Rejection> look_up_account(const Views& views, const LedgerConfig& config,
                                                         bool live, std::string_view bank_code,
                                                         std::string_view account_number) {
  ResolvedAccount r;
  r.account_number = account_number;
  if (bank_code == config.bank_code) {
    if (!nuban::is_valid(config.nuban_code, account_number)) return Rejection::invalid_account_number;
    const auto read_wallet = views.wallet_by_account_number(account_number);
    if (!read_wallet) {
      log::error("a request cannot be answered", {{"error", read_wallet.status().message()}});
      return Rejection::unavailable;
    }
    const std::optional<nlohmann::json>& wallet = read_wallet.value();
    if (!wallet || wallet->value("live", !live) != live) return Rejection::account_not_found;
    r.bank_code = config.bank_code;
    r.bank_name = config.bank_name;
    r.nibss_code = config.bank_code;
    r.account_name = wallet->value("accountName", "");
    r.own_bank = true;
    return r;
  }
  const Bank* bank = find_bank(bank_code);
  if (bank == nullptr) return Rejection::bank_not_found;
  if (!ten_digits(account_number) ||
      (bank->nuban_code && !nuban::is_valid(*bank->nuban_code, account_number)))
    return Rejection::invalid_account_number;
  r.bank_code = bank->bank_code;
  r.bank_name = bank->name;
  r.nibss_code = bank->nibss_code;
  r.account_name = sandbox_name(bank->bank_code, account_number);
  return r;
}

std::variant<ResolvedAccount, http::Response> resolve_account(const Views& views, const LedgerConfig& config,
                                                              bool live, std::string_view bank_code,
                                                              std::string_view account_number) {
  auto found = look_up_account(views, config, live, bank_code, account_number);
  if (const auto* refused = std::get_if<Rejection>(&found)) return rejection_response(*refused);
  return std::get<ResolvedAccount>(std::move(found));
}

std::string bank_account_id(std::string_view business, bool live, std::string_view bank_code,
                            std::string_view account_number) {
  const std::string h =
      sha256_hex(scope_key(business, live) + std::string(bank_code) + "|" + std::string(account_number));
  return "bka-" + h.substr(0, 8) + "-" + h.substr(8, 4) + "-4" + h.substr(13, 3) + "-8" + h.substr(17, 3) +
         "-" + h.substr(20, 12);
}

}  // namespace kobo
