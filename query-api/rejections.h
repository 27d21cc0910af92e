#pragma once
// The one table from domain rejections (command/commands.h Rejection) to HTTP answers: every
// route's rejected command, a bulk transfer's refused items, name enquiry's refusals.
// Pure functions; thread-safe.

#include <optional>
#include <string_view>

#include "command/commands.h"
#include "query-api/message.h"

namespace kobo {

// The status and message of a rejection's answer (a bulk transfer's items show them).
struct RejectionAnswer {
  unsigned status;
  std::string_view message;
};
RejectionAnswer rejection_answer(Rejection r);

// The error envelope of that answer.
http::Response rejection_response(Rejection r);

// The routes on one account (/v1/accounts/{id}/...): an account the caller's business does not
// have is `Data not found`, as a record is (the table's `Account not found` is an incoming
// credit's account number). A route's CommandRoute::rejected.
std::optional<http::Response> account_rejected(const Outcome& o);

}  // namespace kobo
