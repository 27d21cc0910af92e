#pragma once
// The bodies of the money-moving requests, in one place: what a wallet transfer's and a bank
// transfer's body must hold, and the command each becomes. POST /v1/transactions/transfer and
// /bank-transfer (routes/transfers.cc) and the items of a bulk transfer (routes/bulk_transfers.cc)
// read their bodies with these, so a rule of a transfer's body is written once.
//
// Internal to query-api. Pure functions; thread-safe.

#include <nlohmann/json.hpp>

#include "command/commands.h"
#include "query-api/name_enquiry.h"
#include "query-api/validation.h"

namespace kobo::api {

inline constexpr std::int64_t kTransferMin = 10'000;
inline constexpr std::int64_t kTransferMax = 1'000'000'000;
inline constexpr std::size_t kMetadataBytesMax = std::size_t{8} * 1024;

// Declares the constraints of a wallet transfer's body on `v`.
void check_wallet_transfer(http::Validator& v);
// Declares the constraints of a bank transfer's body on `v`.
void check_bank_transfer(http::Validator& v);

// The command of a wallet transfer's body that passed check_wallet_transfer().
WalletTransfer wallet_transfer_of(const Caller& caller, const nlohmann::json& body);
// The command of a bank transfer's body that passed check_bank_transfer(), to the account its
// name enquiry resolved (`to`; a new nameEnquiryRef is drawn). Without `to` (the name enquiry
// failed) the bank code and account number are the body's as given.
BankTransfer bank_transfer_of(const Caller& caller, const nlohmann::json& body, const ResolvedAccount* to);

}  // namespace kobo::api
