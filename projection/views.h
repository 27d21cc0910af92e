#pragma once
// Views: the RocksDB read models under <data-dir>/views (wallets with balances, transactions,
// accounts and keys), built by the Projector from the log and read by query-api.
//
// Every read is scoped to a Scope: a key sees only its own business's records in its own mode.
// A read that fails (an I/O error under the views, a corrupt block) is an operating error: every
// read returns a Result, and query-api answers a failed one 503, never aborting. Not finding a
// record is not an error: it is an empty optional.
// Thread safety: all const methods may be called from any thread concurrently with the
// projector's writes; a read sees whole commands only (one command is one WriteBatch).

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/assert.h"
#include "common/result.h"
#include "common/time.h"
#include "events/types.h"
#include "projection/render.h"

namespace rocksdb {
class DB;
class Env;
class MergeOperator;
class WriteBatch;
}  // namespace rocksdb

namespace kobo {

class ViewRecords;

struct Scope {
  std::string business;
  bool live = false;
};

// Who a secret key belongs to.
struct KeyOwner {
  std::string business;
  std::string account;
  bool live = false;          // the key's mode
  bool account_live = false;  // whether the account has live mode enabled; read for live keys only
  UnixMs expires_at = 0;      // a rolled key is refused from then on; 0: no end (rows.h KeyRow)
};

struct PageRequest {
  std::uint64_t page = 1;  // from 1
  std::uint64_t per_page = 10;
};

// A page of a list of the views: its records as the API shows them (render.h), newest first, and the exact
// count of the records the filters match.
struct Page {
  std::vector<std::string> items;
  std::uint64_t total_count = 0;
};

struct AccountFilter {
  std::optional<std::string> name;
  std::optional<bool> is_default;
  std::optional<bool> live;  // the account's live-mode flag
};

struct BankAccountFilter {
  std::optional<std::string> account_name;
  std::optional<std::string> beneficiary_type;
  std::optional<bool> live;
};

struct WalletFilter {
  std::optional<std::string> category;
  std::optional<bool> is_favourite;
  std::optional<bool> live;
};

struct HoldFilter {
  std::optional<std::string> source;  // vba-…
  std::optional<std::string> status;  // pending | captured | voided | expired
};

struct TransactionFilter {
  std::optional<std::string> entry;
  std::optional<std::string> status;
  std::optional<std::int64_t> amount;
  std::optional<bool> live;
  std::optional<UnixMs> created_from;   // inclusive
  std::optional<UnixMs> created_until;  // exclusive
};

// One webhook event of an account and mode (docs/webhooks.md), rendered from its row.
struct WebhookEvent {
  std::uint64_t sequence = 0;
  std::string id;  // evt-…: x-kobo-event-id and webhook-id
  WebhookEventType type = WebhookEventType::account_credit;
  std::string account;
  UnixMs time = 0;   // the event's
  std::string body;  // render::webhook_body: what a delivery sends
};

// An account's webhook settings in one mode, as its record shows them (render::account).
struct WebhookSettings {
  std::vector<std::string> urls;
  std::optional<std::vector<std::string>> events;  // WebhookEventType names; nullopt: every type
};

// Where the projector is in one partition of the log.
struct ViewPosition {
  Offset next_offset{0};
  Seq last_seq{0};
  std::string last_hash;
  Epoch epoch{0};
  bool operator==(const ViewPosition&) const = default;
};

// A change the views are given: `key` gets `value`.
struct ViewChange {
  std::string_view key;
  std::string_view value;
};

// How the views' writes reach the disk.
enum class ViewWrites {
  logged,    // through RocksDB's write-ahead log: a write survives a crash once written
  unlogged,  // into memory until flush(): for views being rebuilt, which a crash discards whole
};

class Views {
 public:
  // `env`: the RocksDB environment the views' files are written through; null: the machine's own.
  // Fault tests give one whose file system fails on demand (tests/support/faulty_fs.h).
  [[nodiscard]] static Result<std::unique_ptr<Views>> open(const std::string& path, std::uint32_t partitions,
                                                           rocksdb::Env* env = nullptr,
                                                           ViewWrites writes = ViewWrites::logged);
  ~Views();

  [[nodiscard]] Result<std::optional<KeyOwner>> key_owner(std::string_view secret_key_hash) const;

  // Why `business` is suspended (the admin's words, may be empty) while it is; nullopt while it is not.
  [[nodiscard]] Result<std::optional<std::string>> suspension(std::string_view business) const;
  // The business's own rate limits as the admin last set them; nullopt when never (the
  // deployment's apply).
  [[nodiscard]] Result<std::optional<BusinessRateLimitsSet>> rate_limits(std::string_view business) const;
  // Whether the views have business `id`.
  [[nodiscard]] Result<bool> has_business(std::string_view id) const;
  // The business of account `public_id` (the admin's reads); nullopt when no business has it.
  [[nodiscard]] Result<std::optional<std::string>> account_business(std::string_view public_id) const;

  // Accounts belong to a business, not to a mode; their webhook settings are of one mode, and a
  // key of mode `live` is shown its own (render::account).
  // The webhook settings of account `public_id`'s mode `live` in effect at event `seq` of its
  // business's partition: those of the row that the first change after `seq` replaced (`H`), else
  // the row's own; nullopt when `business` has no such account. For the webhook consumer, which
  // reads the views at or past its event, and maybe past later changes (docs/webhooks.md, "Which
  // settings apply").
  [[nodiscard]] Result<std::optional<WebhookSettings>> webhook_settings_at(std::string_view business,
                                                                           std::string_view public_id,
                                                                           bool live, Seq seq) const;
  // The account as the API shows it (render.h); nullopt when `business` has none such.
  [[nodiscard]] Result<std::optional<std::string>> account_text(std::string_view business,
                                                                std::string_view public_id, bool live) const;
  [[nodiscard]] Result<Page> accounts(std::string_view business, bool live, const AccountFilter& filter,
                                      const PageRequest& page) const;

  // Single records are answered as their text, rendered from the views' rows (rows.h) by
  // render.h: keys sorted, compact, UTF-8 as is.
  // The scope check compares the business and mode of the event that created the record.
  [[nodiscard]] Result<std::optional<std::string>> bank_account_text(const Scope& scope,
                                                                     std::string_view public_id) const;
  [[nodiscard]] Result<Page> bank_accounts(const Scope& scope, const BankAccountFilter& filter,
                                           const PageRequest& page) const;

  [[nodiscard]] Result<std::optional<std::string>> wallet_text(const Scope& scope,
                                                               std::string_view public_id) const;
  // Any wallet of the service's own bank with this account number, in any business: name
  // enquiry resolves account numbers the way a bank does. Callers must not reveal more than
  // the name.
  [[nodiscard]] Result<std::optional<nlohmann::json>> wallet_by_account_number(std::string_view number) const;
  [[nodiscard]] Result<Page> wallets(const Scope& scope, const WalletFilter& filter,
                                     const PageRequest& page) const;

  // By publicId (trx-…), integer id, or the reference of the caller's account.
  [[nodiscard]] Result<std::optional<std::string>> transaction_text(const Scope& scope,
                                                                    std::string_view account,
                                                                    std::string_view id_or_reference) const;
  // The facts of bulk transfer `id` (blk-…) of `scope`: its BulkTransferAccepted, then its
  // accepted items' events, in log order; nullopt when the scope has none.
  [[nodiscard]] Result<std::optional<std::vector<Event>>> bulk_events(const Scope& scope,
                                                                      std::string_view id) const;
  [[nodiscard]] Result<std::optional<nlohmann::json>> transaction(const Scope& scope,
                                                                  std::string_view account,
                                                                  std::string_view id_or_reference) const;
  [[nodiscard]] Result<std::optional<std::string>> transaction_by_reference_text(
      const Scope& scope, std::string_view account, std::string_view reference) const;
  // Any combination of the filters, page 1 or any later one, with the exact totalCount, from the
  // list's bitmaps (list_index.h): no record is read but the page's.
  [[nodiscard]] Result<Page> transactions(const Scope& scope, const TransactionFilter& filter,
                                          const PageRequest& page) const;

  // A hold (hld-…) of `scope`, rendered from its rows; the list, newest first.
  [[nodiscard]] Result<std::optional<std::string>> hold_text(const Scope& scope,
                                                             std::string_view public_id) const;
  [[nodiscard]] Result<Page> holds(const Scope& scope, const HoldFilter& filter,
                                   const PageRequest& page) const;

  // The webhook event transaction `transaction` (trx-…) had, when it had one and the event is of
  // `scope`.
  [[nodiscard]] Result<std::optional<WebhookEvent>> webhook_event_of(const Scope& scope,
                                                                     std::string_view transaction) const;
  // The webhook events of `account` in mode `live` numbered after `after`, at most `limit`, in
  // order (GET /v1/events).
  [[nodiscard]] Result<std::vector<WebhookEvent>> webhook_events(std::string_view account, bool live,
                                                                 std::uint64_t after,
                                                                 std::uint64_t limit) const;
  // The account's keys of mode `live` (rows.h AccountKeysRow): its current and rolled keys and the
  // current one wrapped for signing; nullopt for an account the views do not have.
  [[nodiscard]] Result<std::optional<rows::AccountKeysRow>> account_keys(std::string_view account,
                                                                         bool live) const;
  // The account's webhook row of mode `live` (rows.h): an empty one before its first event or secret.
  [[nodiscard]] Result<rows::WebhookRow> webhook(std::string_view account, bool live) const;
  // Where the views are in the log, read when the projector starts (and starts again after a
  // read failed) and by offline tools (kobo audit, kobo replay).
  [[nodiscard]] Result<std::vector<ViewPosition>> positions() const;
  std::uint32_t partitions() const {
    KOBO_ASSERT(partitions_ > 0, "views of a log with no partition");
    return partitions_;
  }

  // The projector's access: changes written at once (one WriteBatch), and a key read for them.
  // `changes` in strict key order.
  [[nodiscard]] Status write(std::span<const ViewChange> changes);
  // The rebuild's: changes in strict key order written as sorted files that the views ingest at
  // once (RocksDB's SstFileWriter and IngestExternalFile), never through the memtable. A run of
  // keys (view_keys::insert_run: a scope's events) of `run_file_bytes` or more is a file of its
  // own: a run that grows at its end only then lies past the files of earlier batches, and goes
  // straight to the last level, never merged again (docs/architecture.md, "Rebuilds write files").
  [[nodiscard]] Status ingest(std::span<const ViewChange> changes, std::size_t run_file_bytes);
  // Everything written so far onto the disk, waited for (what ViewWrites::unlogged defers).
  [[nodiscard]] Status flush();
  // The value of `key`; nullopt when there is none. A read error is an error, never a crash.
  // The reading thread keeps what it read, and reads it again only once a write may have
  // changed it (stripes_ below).
  [[nodiscard]] Result<std::optional<std::string>> read(const std::string& key) const;
  // The same, for a row the caller reads to change and write back (the projector's): from the
  // database each time, and not kept, as the caller's own write would make the copy useless.
  [[nodiscard]] Result<std::optional<std::string>> read_to_change(const std::string& key) const;
  // After a failed write (a full disk, an I/O error): closes the database and opens it again,
  // which clears RocksDB's background error (its Resume() stays "busy" after a failed WAL
  // write). Reads in flight finish first; reads that come meanwhile wait for the new one.
  [[nodiscard]] Status reopen();
  // A copy of the views as written so far, in `dir` (which must not exist): a RocksDB
  // checkpoint, its memtables flushed first and its files linked where the disk allows. Each
  // partition's position is in it with the rows it reflects (one WriteBatch), so the copy is of
  // whole commands. For a peer that joins the cluster (docs/architecture.md, "A new node").
  [[nodiscard]] Status checkpoint(const std::string& dir) const;
  // For offline tools only (rebuild and compare): no reopen may run meanwhile. Whoever takes the
  // database may write it past write(), so no row kept from before is used again.
  rocksdb::DB& db() const {
    KOBO_ASSERT(db_ != nullptr, "the views always have a database (reopen() never leaves none)");
    all_changed();
    return *db_;
  }

 private:
  Views(std::unique_ptr<rocksdb::DB> db, std::string path, std::uint32_t partitions, rocksdb::Env* env,
        ViewWrites writes);
  // Shared for every use of db_, exclusive to swap it. Reader-preferring POSIX rwlock: a read
  // that reads again (a list fetching its records) takes it recursively, which POSIX allows and
  // which a waiting reopen() cannot block.
  class DbLock {
   public:
    DbLock();
    ~DbLock();
    DbLock(const DbLock&) = delete;
    DbLock& operator=(const DbLock&) = delete;
    // A lock that fails (a thread that holds it exclusively asks again, or unlocks what it does not
    // hold) is a bug: going on would touch db_ unguarded.
    void lock_shared() const {
      const int r = pthread_rwlock_rdlock(&lock_);
      KOBO_ASSERT(r == 0, "the views' lock is taken shared");
    }
    void unlock_shared() const {
      const int r = pthread_rwlock_unlock(&lock_);
      KOBO_ASSERT(r == 0, "the views' lock is let go by a reader that holds it");
    }
    void lock() const {
      const int r = pthread_rwlock_wrlock(&lock_);
      KOBO_ASSERT(r == 0, "the views' lock is taken exclusively");
    }
    void unlock() const {
      const int r = pthread_rwlock_unlock(&lock_);
      KOBO_ASSERT(r == 0, "the views' lock is let go by the writer that holds it");
    }

   private:
    mutable pthread_rwlock_t lock_;
  };
  mutable DbLock db_lock_;
  const std::string path_;
  rocksdb::Env* const env_;  // null: the machine's own
  const ViewWrites writes_;
  // The fact at `key` (rows.h), when there is one and it is of `scope` (any scope when null).
  Result<std::optional<Event>> fact(const std::string& key, const Scope* scope) const;
  // A record rendered from its rows, when there is one and it is of `scope` (any when null).
  Result<std::optional<std::string>> render_wallet(std::string_view public_id, const Scope* scope) const;
  // The KYC tier limits in force in partition `p` (the last WriterStarted's).
  Result<TierLimits> tier_limits(Partition p) const;
  Result<std::optional<std::string>> render_transaction(std::string_view public_id, const Scope* scope) const;
  // The row of transaction `public_id` (trx-…): its own `T` row, or, for a record whose id
  // derives from its event's first record's and that has none (apply.cc put_transactions), one
  // made from the first's row, once the event is read and names that id. nullopt: no such record.
  Result<std::optional<rows::TransactionRow>> transaction_row(std::string_view public_id) const;
  // Webhook event `sequence` of `account` announcing transaction `transaction` (trx-…), finalized
  // by the event of hash `hash` (hex) at `time`, with the transaction's record as it is now.
  Result<WebhookEvent> webhook_event(std::string_view account, std::uint64_t sequence, WebhookEventType type,
                                     UnixMs time, std::string_view hash, std::string_view transaction) const;
  Result<std::optional<std::string>> render_bank_account(std::string_view public_id,
                                                         const Scope* scope) const;
  Result<std::optional<std::string>> render_hold(std::string_view public_id, const Scope* scope) const;
  // A page of the wallets (kind w), beneficiaries (d) or holds (h) of `scope` whose values of
  // the fields `filters` names are those given (list_index.h).
  Result<Page> listed_records(char kind, const Scope& scope,
                              const std::vector<std::pair<char, std::string>>& filters,
                              const PageRequest& page) const;
  class EventTimes;
  class ListedTimes;
  // The transaction record `at` of `scope` (a scope17), rendered with `records`.
  Result<std::optional<std::string>> render_record(const std::string& scope, const rows::RecordAt& at,
                                                   const ViewRecords& records) const;
  // The same, record `index` of `e`: an event of `scope`'s list that the caller has read already.
  Result<std::optional<std::string>> render_record(const std::string& scope, const Event& e,
                                                   std::uint32_t index, const ViewRecords& records) const;
  // The transaction of integer id `id` in `scope`: a binary search of its events by their ids.
  Result<std::optional<rows::RecordAt>> find_integer_id(const std::string& scope, std::uint64_t id) const;
  // The account (acc-…) that owns the transactions of event `e` (its own, or its payout's).
  Result<std::string> owner_account(const Event& e) const;
  // The webhook event of the record `at` of `scope` that its own event announced, if any.
  Result<std::optional<WebhookEvent>> announced_event(const std::string& scope,
                                                      const rows::RecordAt& at) const;
  Result<WebhookEvent> irregular_event(std::string_view account, bool live, std::uint64_t sequence) const;

  std::unique_ptr<rocksdb::DB> db_;  // guarded by db_lock_
  std::uint32_t partitions_;
  // Rows read are kept by each thread that reads them (read()): the wallet, the key's owner, the
  // account and the tier limits that nearly every request reads, mostly unchanged since the last
  // one. Each is kept with the epoch of its key's stripe as it was before the database was read.
  // A write moves the stripes of the keys it wrote to a new epoch once it has landed, and an
  // ingest, a reopen and a hand-out of db() move all of them; epochs are unique in the process.
  // So a row kept is used only while nothing that could have changed it has been written since
  // it was read, and never by other views.
  static constexpr std::size_t kStripes = 4096;
  std::unique_ptr<std::atomic<std::uint64_t>[]> stripes_;
  void all_changed() const;
  friend class ViewRecords;
  friend class Statements;  // projection/statements.h
};

// The views as the facts rendering reads (projection/render.h). Unscoped: for rendering a record
// a caller may see, never to answer a caller directly.
//
// RecordSource has no error path, so a read that fails (or a row that does not decode) is
// answered nullopt and kept: status() says whether every read so far succeeded, and a caller
// checks it before it trusts a nullopt or renders (render asserts on a fact it needs and does not
// get). Each row is read once and kept, so a render::can_render() that succeeded means rendering
// reads nothing that can fail. One per record rendered, on one thread.
class ViewRecords final : public render::RecordSource {
 public:
  explicit ViewRecords(const Views& views) : views_(views) {}
  std::optional<WalletFacts> wallet(std::string_view public_id) const override;
  std::optional<Event> payout(std::string_view public_id) const override;
  const Status& status() const { return status_; }

 private:
  std::optional<std::string> read(const std::string& key) const;
  // fn(the decoded value), or nullopt with the error kept when `r` is one.
  template <typename T, typename Fn>
  auto decoded(Result<T> r, Fn&& fn) const -> decltype(fn(r.value())) {
    if (!r) {
      if (status_.ok()) status_ = r.status();
      // The first failure is kept: a caller that sees a nullopt checks status() before it trusts it.
      KOBO_ASSERT(!status_.ok(), "a read that failed is remembered");
      return std::nullopt;
    }
    return fn(r.value());
  }
  const Views& views_;
  mutable std::map<std::string, std::optional<std::string>, std::less<>> read_;
  mutable Status status_;
};

}  // namespace kobo
