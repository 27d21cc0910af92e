#pragma once
// Render: the API's records (API document sections 2.x, docs/architecture.md section 7) from the
// ledger's facts (events/event.h). The one place a record's shape is written: the projector stores
// what it renders, and query-api answers a write with the record its command's events render, so
// the answer and a later GET cannot disagree.
//
// An event holds only what the writer decided; the rest of a record is either a pure function
// of the event (`_id`, derived references, session ids: events/ledger.h) or read from records
// the views already hold (a wallet's name and number for a transaction's snapshots, a payout's
// beneficiary for its reversal), through a RecordSource. So views rebuilt from the log render
// byte-identical records.
//
// Records are rendered as their JSON text in the form the views store (dump_json()'s: compact,
// members in key order; record_text.h writes it without building a tree), and read the same way.
//
// Pure functions of their inputs; thread-safe.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "events/event.h"
#include "events/ledger.h"

namespace kobo::render {

// The payment processor every record names (the service is its own processor).
inline constexpr std::string_view kProcessor = "kobo";

// The records an event refers to but does not hold, as the views store them (their text).
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  // A wallet, transit or collection wallet record (vba-…); nullopt when unknown.
  virtual std::optional<std::string> wallet(std::string_view public_id) const = 0;
  // A transaction record (trx-…); nullopt when unknown.
  virtual std::optional<std::string> transaction(std::string_view public_id) const = 0;
};

// ---- records an event opens ------------------------------------------------------------------

struct BusinessRecords {
  std::string business;
  std::string account;
};
BusinessRecords business_records(const Event& e, const BusinessRegistered& x);
// The account record after `x`: `account` as it was (decoded: an update is rare), changed.
void update_account(nlohmann::json& account, const Event& e, const AccountUpdated& x);

std::string wallet(const Event& e, const WalletOpened& x);
std::string transit_wallet(const Event& e, const TransitWalletOpened& x);
// `destination` is the destination wallet's record (its account number is shown).
std::string collection_wallet(const Event& e, const CollectionWalletOpened& x, std::string_view destination);
std::string bank_account(const Event& e, const BeneficiarySaved& x);

// ---- transactions ----------------------------------------------------------------------------

// The transaction records `e` creates, in transactions_created() order (events/ledger.h), as
// created (a payout pending, everything else success). Wallets and the payout a reversal
// answers are read from `records`; a missing one is a broken log and asserts.
std::vector<std::string> transactions(const Event& e, const RecordSource& records);

// A payout's record after the rail moved it to `status` at `time` (meta.verify as the rail
// reported it): `payout` as it was (decoded: a payout moves a few times at most), changed.
void advance_payout(nlohmann::json& payout, TransactionStatus status, UnixMs time);

// ---- answers ---------------------------------------------------------------------------------

// The records rendering `e` reads from its RecordSource.
struct RecordsRead {
  std::vector<std::string> wallets;       // vba-…
  std::vector<std::string> transactions;  // trx-…
};
RecordsRead records_read(const Event& e);
// Whether `records` holds everything rendering `events` reads.
bool can_render(const std::vector<Event>& events, const RecordSource& records);

// The record with publicId `id` among those `events` (one command's, as appended) create: the
// answer to the command. Nullopt when none of them creates it.
std::optional<std::string> created_record(const std::vector<Event>& events, std::string_view id,
                                          const RecordSource& records);
// Whether the record with publicId `id` that `events` create is a transaction settled when it is
// created (a wallet transfer's, a credit's): no later event changes it, so the views' copy, once
// they applied `events`, is the created record itself and needs no rendering.
bool settled_when_created(const std::vector<Event>& events, std::string_view id);
// A transfer's answer shows it `pending` whatever its record says (docs/architecture.md section 7):
// the created transaction record `record`, so changed.
void answer_pending(std::string& record);

}  // namespace kobo::render
