#include "query-api/rejections.h"

#include "common/assert.h"
#include "query-api/envelope.h"

namespace kobo {

RejectionAnswer rejection_answer(Rejection r) {
  switch (r) {
    case Rejection::none:
      break;
    case Rejection::duplicate_reference:
      return {409, "Duplicate reference"};
    case Rejection::source_not_found:
      return {404, "Source not found"};
    case Rejection::destination_not_found:
      return {404, "Destination not found"};
    case Rejection::same_source_and_destination:
      return {400, "Source and destination cannot be the same"};
    case Rejection::insufficient_funds:
      return {403, "Insufficient fund"};
    case Rejection::daily_limit_exceeded:
      return {403, "Daily limit exceeded"};
    case Rejection::balance_limit_exceeded:
      return {403, "Balance limit exceeded"};
    case Rejection::wallet_not_found:
      return {404, "Data not found"};
    case Rejection::wallet_name_taken:
      return {400, "Virtual Account name already exist"};
    case Rejection::primary_wallet_limit:
      return {400, "Primary wallet limit reached"};
    case Rejection::account_not_found:
      return {404, "Account not found"};
    case Rejection::business_exists:
      return {409, "Business already exists"};
    case Rejection::reference_exists:
      return {400, "Reference already exists"};
    case Rejection::settlement_account_not_found:
      return {404, "Settlement account not found"};
    case Rejection::amount_mismatch:
      return {400, "Amount mismatch"};
    case Rejection::collection_inactive:
      return {400, "Collection account is not active"};
    case Rejection::unavailable:
      return {503, "Service unavailable"};
    case Rejection::storage_full:
      return {507, "Insufficient storage"};
    case Rejection::hold_not_found:
      return {404, "Data not found"};
    case Rejection::hold_not_pending:
      return {409, "Hold is not pending"};
    case Rejection::amount_exceeds_hold:
      return {400, "Amount exceeds hold"};
    case Rejection::out_of_range:
      return {400, "Amount out of range"};
    case Rejection::bank_not_found:
      return {400, "Bank not found"};
    case Rejection::invalid_account_number:
      return {400, "Invalid account number"};
    case Rejection::not_owner:  // a cluster node that does not write the partition (yet)
      return {503, "Service unavailable"};
  }
  KOBO_ASSERT(false, "no HTTP answer for an accepted command");
  return {500, "Internal server error"};
}

http::Response rejection_response(Rejection r) {
  const RejectionAnswer a = rejection_answer(r);
  http::Response res = http::error(a.status, a.message);
  // Another node writes the partition, or will within moments (a takeover): try again soon.
  if (r == Rejection::not_owner) res.headers.emplace_back("Retry-After", "1");
  return res;
}

std::optional<http::Response> account_rejected(const Outcome& o) {
  if (o.rejection == Rejection::account_not_found) return http::error(404, "Data not found");
  return std::nullopt;
}

}  // namespace kobo
