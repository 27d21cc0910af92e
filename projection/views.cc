#include "projection/views.h"

#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/merge_operator.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>

#include <charconv>
#include <filesystem>
#include <mutex>
#include <shared_mutex>

#include "common/json_dump.h"
#include "events/fact_codec.h"
#include "events/partitioner.h"
#include "events/rocksdb_logger.h"
#include "projection/rebuild.h"
#include "projection/rows.h"
#include "projection/view_keys.h"

namespace kobo {

using nlohmann::json;

Views::DbLock::DbLock() {
  pthread_rwlockattr_t attr;
  pthread_rwlockattr_init(&attr);
  pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_READER_NP);
  pthread_rwlock_init(&lock_, &attr);
  pthread_rwlockattr_destroy(&attr);
}
Views::DbLock::~DbLock() { pthread_rwlock_destroy(&lock_); }

Views::Views(std::unique_ptr<rocksdb::DB> db, std::string path, std::uint32_t partitions, rocksdb::Env* env,
             ViewWrites writes)
    : path_(std::move(path)), env_(env), writes_(writes), db_(std::move(db)), partitions_(partitions) {}
Views::~Views() = default;

namespace {

std::optional<std::int64_t> decimal(const rocksdb::Slice& text) {
  std::int64_t n = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, n);
  if (ec != std::errc() || p != end) return std::nullopt;
  return n;
}

class CounterAdd final : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice&, const rocksdb::Slice* existing, const rocksdb::Slice& delta,
             std::string* sum, rocksdb::Logger*) const override {
    const auto before = existing != nullptr ? decimal(*existing) : std::optional<std::int64_t>(0);
    const auto change = decimal(delta);
    std::int64_t after = 0;
    if (!before || !change || __builtin_add_overflow(*before, *change, &after) || after < 0) return false;
    *sum = std::to_string(after);
    return true;
  }
  const char* Name() const override { return "kobo.CounterAdd"; }
};

}  // namespace

std::shared_ptr<rocksdb::MergeOperator> view_counter_merge() {
  static const auto op = std::make_shared<CounterAdd>();
  return op;
}

namespace {

rocksdb::Options views_options(rocksdb::Env* env) {
  rocksdb::Options o;
  if (env != nullptr) o.env = env;
  o.create_if_missing = true;
  o.merge_operator = view_counter_merge();
  // Records are JSON that repeats its member names and ids: LZ4 while they are still being
  // compacted, zstd where they come to rest (the log's choice, events/embedded_log.cc). A block
  // holds only a few records, so zstd gets a dictionary trained on each file's records, and
  // blocks of 16 KiB: on 205k transfers compacted, 838 B of views each instead of 1,678 B.
  o.compression = rocksdb::kLZ4Compression;
  o.bottommost_compression = rocksdb::kZSTD;
  o.bottommost_compression_opts.enabled = true;
  // Level 1, not zstd's default 3: on the views of 205k transfers compacted, 35% less CPU for
  // 1.3% more bytes; compaction shares the two cores with everything else.
  o.bottommost_compression_opts.level = 1;
  o.bottommost_compression_opts.max_dict_bytes = 16 << 10;
  o.bottommost_compression_opts.zstd_max_train_bytes = 100 * (16 << 10);
  // Most records in the last level, where zstd is: with the level sizes fixed from L1 down, a
  // compaction leaves most of them in upper levels, in LZ4, for a long time.
  o.level_compaction_dynamic_level_bytes = true;
  rocksdb::BlockBasedTableOptions t;
  t.block_size = 16 << 10;
  t.block_cache = rocksdb::NewLRUCache(64 << 20);
  // A Bloom filter per file: the projector asks for keys that do not exist yet (the counter of a
  // transaction list's new filter value, an amount never seen) and, without one, reads and
  // decompresses a block of every level to learn it.
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  // The projector writes a flush's keys in key order. With a hint kept per key tag (view_keys.h),
  // a memtable insert starts its search where the previous key of that tag went instead of at
  // the top of the skip list.
  o.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(1));
  // RocksDB's file logger would write beside the views and abort once a full disk failed it.
  o.info_log = rocksdb_logger("views");
  o.max_bgerror_resume_count = 0;  // reopen() clears a write error
  return o;
}

// New views get the key layout's version (view_keys.h); views of another layout are refused, as
// their keys mean something else. Views without a version are of the first layout.
Status check_format(rocksdb::DB& db, const std::string& path, ViewWrites writes) {
  std::string stored;
  const auto s = db.Get(rocksdb::ReadOptions(), view_keys::kFormatKey, &stored);
  if (!s.ok() && !s.IsNotFound()) return Status::error("views read: " + s.ToString());
  if (s.IsNotFound()) {
    std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions()));
    it->SeekToFirst();
    if (!it->status().ok()) return Status::error("views read: " + it->status().ToString());
    if (!it->Valid()) {  // new views
      rocksdb::WriteOptions options;
      options.disableWAL = writes == ViewWrites::unlogged;  // as every write of these views (write())
      const auto w = db.Put(options, view_keys::kFormatKey, view_keys::kFormat);
      if (!w.ok())
        return Status::error("views write: " + w.ToString(),
                             w.IsNoSpace() ? ErrorKind::no_space : ErrorKind::other);
      return {};
    }
    stored = view_keys::kFirstFormat;
  }
  if (stored == view_keys::kFormat) return {};
  return Status::error("the views in " + path + " have key layout " + stored + ", this kobo reads layout " +
                           std::string(view_keys::kFormat) + ": rebuild them from the log (kobo replay)",
                       ErrorKind::other_format);
}

}  // namespace

Result<std::unique_ptr<Views>> Views::open(const std::string& path, std::uint32_t partitions,
                                           rocksdb::Env* env, ViewWrites writes) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::error("create " + path + ": " + ec.message());
  rocksdb::DB* raw = nullptr;
  const auto s = rocksdb::DB::Open(views_options(env), path, &raw);
  if (!s.ok()) return Status::error("open views " + path + ": " + s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  if (auto f = check_format(*db, path, writes); !f) return f;
  return std::unique_ptr<Views>(new Views(std::move(db), path, partitions, env, writes));
}

Status Views::write(rocksdb::WriteBatch& batch) {
  std::shared_lock lock(db_lock_);
  rocksdb::WriteOptions options;
  // A rebuild's write-ahead log would hold everything the memtables do, only to be thrown away
  // at flush(): on 205k transfers, a tenth of the rebuild's time.
  options.disableWAL = writes_ == ViewWrites::unlogged;
  const auto s = db_->Write(options, &batch);
  if (!s.ok())
    return Status::error("views write: " + s.ToString(),
                         s.IsNoSpace() ? ErrorKind::no_space : ErrorKind::other);
  return {};
}

Status Views::flush() {
  std::shared_lock lock(db_lock_);
  const auto s = db_->Flush(rocksdb::FlushOptions());  // waits
  if (!s.ok())
    return Status::error("views flush: " + s.ToString(),
                         s.IsNoSpace() ? ErrorKind::no_space : ErrorKind::other);
  return {};
}

Result<std::optional<std::string>> Views::read(const std::string& key) const {
  std::shared_lock lock(db_lock_);
  std::string value;
  const auto s = db_->Get(rocksdb::ReadOptions(), key, &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return Status::error("views read: " + s.ToString());
  return std::optional<std::string>(std::move(value));
}

Status Views::reopen() {
  std::unique_lock lock(db_lock_);
  // Reads go on meanwhile against what is on disk: a read-only instance, opened before the
  // failed one is closed. When even that cannot open, the failed instance stays (RocksDB serves
  // reads in its error state) and the reopen is tried again later: db_ is never left empty.
  rocksdb::DB* ro = nullptr;
  if (const auto r = rocksdb::DB::OpenForReadOnly(views_options(env_), path_, &ro); !r.ok())
    return Status::error("reopen views: cannot open them to read meanwhile: " + r.ToString());
  std::unique_ptr<rocksdb::DB> reader(ro);
  db_.reset();
  rocksdb::DB* raw = nullptr;
  const auto s = rocksdb::DB::Open(views_options(env_), path_, &raw);
  if (!s.ok()) {
    db_ = std::move(reader);
    return Status::error("reopen views: " + s.ToString(),
                         s.IsNoSpace() ? ErrorKind::no_space : ErrorKind::other);
  }
  db_.reset(raw);
  return {};
}

Result<std::optional<json>> Views::get_json(const std::string& key) const {
  auto value = read(key);
  if (!value) return value.status();
  if (!value.value()) return std::optional<json>();
  return std::optional<json>(json::parse(*value.value()));
}

namespace {

// A record belongs to the scope's business and mode: those of the event that created it.
bool in_scope(const Event& e, const Scope& scope) {
  return e.business == scope.business && e.live == scope.live;
}

// Walks keys with `prefix` from the highest (newest) to the lowest, stopping at `lower` or when
// `fn` returns false. An error is the iterator's (a read of the views that failed).
template <typename Fn>
Status scan_newest_first(rocksdb::DB& db, const std::string& prefix, const std::string& upper_exclusive,
                         const std::string& lower_inclusive, Fn&& fn) {
  std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions()));
  for (it->SeekForPrev(upper_exclusive); it->Valid(); it->Prev()) {
    const auto key = it->key();
    if (!key.starts_with(prefix)) break;
    if (key.compare(upper_exclusive) >= 0) continue;
    if (key.compare(lower_inclusive) < 0) break;
    if (!fn(std::string_view(key.data(), key.size()),
            std::string_view(it->value().data(), it->value().size())))
      break;
  }
  if (!it->status().ok()) return Status::error("views scan: " + it->status().ToString());
  return {};
}

std::uint64_t count_value(std::string_view text) {
  std::uint64_t n = 0;
  KOBO_ASSERT(std::from_chars(text.data(), text.data() + text.size(), n).ptr == text.data() + text.size(),
              "a view counter is not a number");
  return n;
}

// The index of a page's first item; past the end of every list when it does not fit in 64 bits
// (a page number far beyond the end, which the API allows up to 2^63 - 1).
std::uint64_t first_index(const PageRequest& page) {
  std::uint64_t first = 0;
  if (__builtin_mul_overflow(page.page - 1, page.per_page, &first)) return UINT64_MAX;
  return first;
}

bool in_page(std::uint64_t index, const PageRequest& page) {
  const std::uint64_t first = first_index(page);
  return index >= first && index < first + page.per_page;
}

}  // namespace

Result<std::optional<KeyOwner>> Views::key_owner(std::string_view secret_key_hash) const {
  const auto read_owner = read(view_keys::key_owner(secret_key_hash));
  if (!read_owner) return read_owner.status();
  if (!read_owner.value()) return std::optional<KeyOwner>();
  auto row = rows::decode_key(*read_owner.value());
  if (!row) return row.status();
  KeyOwner k{std::move(row.value().business), std::move(row.value().account), row.value().live, false,
             row.value().expires_at};
  // Only a live key needs the account's live flag; test keys, most requests, skip that read.
  if (!k.live) return std::optional<KeyOwner>(std::move(k));
  const auto account = get_json(view_keys::account(k.account));
  if (!account) return account.status();
  if (account.value()) k.account_live = account.value()->value("live", false);
  return std::optional<KeyOwner>(std::move(k));
}

Result<std::optional<std::string>> Views::suspension(std::string_view business) const {
  return read(view_keys::suspended(business));
}

Result<bool> Views::has_business(std::string_view id) const {
  const auto b = read(view_keys::business(id));
  if (!b) return b.status();
  return b.value().has_value();
}

Result<std::optional<json>> Views::any_account(std::string_view public_id) const {
  return get_json(view_keys::account(public_id));
}

Result<std::optional<json>> Views::account(std::string_view business, std::string_view public_id) const {
  auto a = get_json(view_keys::account(public_id));
  if (!a || !a.value() || a.value()->value("business", "") == business) return a;
  return std::optional<json>();
}

Result<Page> Views::accounts(std::string_view business, const AccountFilter& filter,
                             const PageRequest& page) const {
  Page out;
  Status failed;
  const std::string prefix = view_keys::account_list_prefix(business);
  std::shared_lock lock(db_lock_);
  const Status scanned = scan_newest_first(
      *db_, prefix, prefix + std::string(9, '\xff'), prefix, [&](std::string_view, std::string_view id) {
        auto read_account = get_json(view_keys::account(id));
        if (!read_account) {
          failed = read_account.status();
          return false;
        }
        auto& a = read_account.value();
        KOBO_ASSERT(a.has_value(), "account index points at a missing account");
        if (filter.name && a->value("name", "") != *filter.name) return true;
        if (filter.is_default && a->value("isDefault", false) != *filter.is_default) return true;
        if (filter.live && a->value("live", false) != *filter.live) return true;
        if (in_page(out.total_count, page)) out.items.push_back(std::move(*a));
        ++out.total_count;
        return true;
      });
  if (!failed) return failed;
  if (!scanned) return scanned;
  return out;
}

Result<std::optional<Event>> Views::fact(const std::string& key, const Scope* scope) const {
  const auto bytes = read(key);
  if (!bytes) return bytes.status();
  if (!bytes.value()) return std::optional<Event>();
  auto e = decode_fact(*bytes.value());
  if (!e) return Status::error("views read " + describe_view_key(key) + ": " + e.status().message());
  if (scope != nullptr && !in_scope(e.value(), *scope)) return std::optional<Event>();
  return std::optional<Event>(std::move(e).value());
}

Result<std::optional<std::string>> Views::render_wallet(std::string_view public_id,
                                                        const Scope* scope) const {
  const auto opening = fact(view_keys::wallet(public_id), scope);
  if (!opening) return opening.status();
  if (!opening.value()) return std::optional<std::string>();
  const auto row_bytes = read(view_keys::wallet_row(public_id));
  if (!row_bytes) return row_bytes.status();
  if (!row_bytes.value())
    return Status::error("views: wallet " + std::string(public_id) + " has no balance row");
  const auto row = rows::decode_wallet(*row_bytes.value());
  if (!row) return row.status();
  const ViewRecords records(*this);
  if (!render::can_render({*opening.value()}, records)) {
    if (!records.status()) return records.status();
    return Status::error("views: wallet " + std::string(public_id) + " names a wallet they do not have");
  }
  const auto limits = tier_limits(partition_for(opening.value()->business, partitions_));
  if (!limits) return limits.status();
  return std::optional<std::string>(
      render::wallet(*opening.value(), row.value(), records, render::TierShown{&limits.value(), now_ms()}));
}

Result<TierLimits> Views::tier_limits(Partition p) const {
  const auto bytes = read(view_keys::tier_limits(p.value));
  if (!bytes) return bytes.status();
  // Views of a log written before tiers: its wallets have none, and the writer decides with the CBN's.
  if (!bytes.value()) return cbn_tier_limits();
  return rows::decode_tier_limits(*bytes.value());
}

Result<std::optional<std::string>> Views::render_transaction(std::string_view public_id,
                                                             const Scope* scope) const {
  const auto row_bytes = read(view_keys::transaction(public_id));
  if (!row_bytes) return row_bytes.status();
  if (!row_bytes.value()) return std::optional<std::string>();
  const auto row = rows::decode_transaction(*row_bytes.value());
  if (!row) return row.status();
  const auto e = fact(view_keys::event_fact(row.value().partition.value, row.value().seq.value), nullptr);
  if (!e) return e.status();
  if (!e.value())
    return Status::error("views: transaction " + std::string(public_id) + " names an event they do not have");
  if (scope != nullptr && !in_scope(*e.value(), *scope)) return std::optional<std::string>();
  const ViewRecords records(*this);
  if (!render::can_render({*e.value()}, records)) {
    if (!records.status()) return records.status();
    return Status::error("views: transaction " + std::string(public_id) + " names a record they do not have");
  }
  return std::optional<std::string>(
      render::transaction(*e.value(), row.value().index, row.value().steps, records));
}

Result<WebhookEvent> Views::render_webhook_event(std::string_view account, std::uint64_t sequence,
                                                 const rows::WebhookEventRow& row) const {
  auto text = render_transaction(row.transaction, nullptr);
  if (!text) return text.status();
  if (!text.value())
    return Status::error("views: webhook event " + std::to_string(sequence) + " names transaction " +
                         row.transaction + ", which they do not have");
  return WebhookEvent{sequence, render::webhook_event_id(row.hash, row.transaction),
                      row.type, std::string(account),
                      row.time, render::webhook_body(row.type, sequence, *text.value())};
}

Result<std::optional<WebhookEvent>> Views::webhook_event_of(const Scope& scope,
                                                            std::string_view transaction) const {
  // Whose it is: the event that created the transaction must be of `scope`.
  const auto t = read(view_keys::transaction(transaction));
  if (!t) return t.status();
  if (!t.value()) return std::optional<WebhookEvent>();
  const auto created_at = rows::decode_transaction(*t.value());
  if (!created_at) return created_at.status();
  const auto created =
      fact(view_keys::event_fact(created_at.value().partition.value, created_at.value().seq.value), &scope);
  if (!created) return created.status();
  if (!created.value()) return std::optional<WebhookEvent>();
  const auto numbered = read(view_keys::webhook_event_of(transaction));
  if (!numbered) return numbered.status();
  if (!numbered.value()) return std::optional<WebhookEvent>();
  const std::string& n = *numbered.value();
  if (n.size() <= 8) return Status::error("views: a webhook event index is malformed");
  const std::uint64_t sequence = view_keys::get_be(n, 0);
  const std::string_view account = std::string_view(n).substr(8);
  const auto bytes = read(view_keys::webhook_event(account, scope.live, sequence));
  if (!bytes) return bytes.status();
  if (!bytes.value()) return Status::error("views: a webhook event index names an event they do not have");
  const auto row = rows::decode_webhook_event(*bytes.value());
  if (!row) return row.status();
  auto event = render_webhook_event(account, sequence, row.value());
  if (!event) return event.status();
  return std::optional<WebhookEvent>(std::move(event).value());
}

Result<std::vector<WebhookEvent>> Views::webhook_events(std::string_view account, bool live,
                                                        std::uint64_t after, std::uint64_t limit) const {
  std::vector<WebhookEvent> out;
  // The numbers are gapless from 1: point reads until the first one missing, no scan.
  for (std::uint64_t n = after + 1; n - after <= limit && n > after; ++n) {
    const auto bytes = read(view_keys::webhook_event(account, live, n));
    if (!bytes) return bytes.status();
    if (!bytes.value()) break;
    const auto row = rows::decode_webhook_event(*bytes.value());
    if (!row) return row.status();
    auto event = render_webhook_event(account, n, row.value());
    if (!event) return event.status();
    out.push_back(std::move(event).value());
  }
  return out;
}

Result<std::optional<rows::AccountKeysRow>> Views::account_keys(std::string_view account, bool live) const {
  const auto bytes = read(view_keys::account_keys(account, live));
  if (!bytes) return bytes.status();
  if (!bytes.value()) return std::optional<rows::AccountKeysRow>();
  auto row = rows::decode_account_keys(*bytes.value());
  if (!row) return row.status();
  return std::optional<rows::AccountKeysRow>(std::move(row).value());
}

Result<rows::WebhookRow> Views::webhook(std::string_view account, bool live) const {
  const auto bytes = read(view_keys::webhook(account, live));
  if (!bytes) return bytes.status();
  if (!bytes.value()) return rows::WebhookRow{};
  return rows::decode_webhook(*bytes.value());
}

Result<std::optional<std::string>> Views::render_bank_account(std::string_view public_id,
                                                              const Scope* scope) const {
  const auto e = fact(view_keys::bank_account(public_id), scope);
  if (!e) return e.status();
  if (!e.value()) return std::optional<std::string>();
  const auto* x = std::get_if<BeneficiarySaved>(&e.value()->data);
  if (x == nullptr)
    return Status::error("views: bank account " + std::string(public_id) + " is not a beneficiary");
  return std::optional<std::string>(render::bank_account(*e.value(), *x));
}

Result<std::optional<std::string>> Views::bank_account_text(const Scope& scope,
                                                            std::string_view public_id) const {
  return render_bank_account(public_id, &scope);
}

namespace {

Result<std::optional<json>> parsed(Result<std::optional<std::string>> text) {
  if (!text) return text.status();
  if (!text.value()) return std::optional<json>();
  return std::optional<json>(json::parse(*text.value()));
}

}  // namespace

Result<Page> Views::listed_records(char kind, const Scope& scope, const std::string& filter,
                                   const PageRequest& page) const {
  Page out;
  std::vector<std::string> ids;
  {
    std::shared_lock lock(db_lock_);
    const auto n = read(view_keys::record_count(kind, scope.business, scope.live, filter));
    if (!n) return n.status();
    out.total_count = n.value() ? count_value(*n.value()) : 0;
    const std::uint64_t first = first_index(page);
    if (first < out.total_count) {
      const std::string prefix = view_keys::record_listed_prefix(kind, scope.business, scope.live, filter);
      std::uint64_t index = 0;
      const Status scanned = scan_newest_first(*db_, prefix, prefix + std::string(9, '\xff'), prefix,
                                               [&](std::string_view, std::string_view id) {
                                                 if (index++ >= first) ids.emplace_back(id);
                                                 return ids.size() < page.per_page;
                                               });
      if (!scanned) return scanned;
    }
  }
  for (const auto& id : ids) {
    auto record = parsed(kind == 'w' ? render_wallet(id, nullptr) : render_bank_account(id, nullptr));
    if (!record) return record.status();
    KOBO_ASSERT(record.value().has_value(), "a listing points at a missing record");
    out.items.push_back(std::move(*record.value()));
  }
  return out;
}

Result<std::optional<std::string>> Views::render_hold(std::string_view public_id, const Scope* scope) const {
  const auto placement = fact(view_keys::hold(public_id), scope);
  if (!placement) return placement.status();
  if (!placement.value()) return std::optional<std::string>();
  if (!std::holds_alternative<HoldPlaced>(placement.value()->data))
    return Status::error("views: hold " + std::string(public_id) + " is not a hold's placement");
  const auto row_bytes = read(view_keys::hold_row(public_id));
  if (!row_bytes) return row_bytes.status();
  if (!row_bytes.value()) return Status::error("views: hold " + std::string(public_id) + " has no row");
  const auto row = rows::decode_hold(*row_bytes.value());
  if (!row) return row.status();
  std::vector<Event> captures;
  captures.reserve(row.value().captures.size());
  for (const Seq seq : row.value().captures) {
    auto e = fact(view_keys::event_fact(row.value().partition.value, seq.value), nullptr);
    if (!e) return e.status();
    if (!e.value() || !std::holds_alternative<HoldCaptured>(e.value()->data))
      return Status::error("views: hold " + std::string(public_id) + " names a capture they do not have");
    captures.push_back(std::move(*e.value()));
  }
  return std::optional<std::string>(render::hold(*placement.value(), row.value(), captures));
}

Result<std::optional<std::string>> Views::hold_text(const Scope& scope, std::string_view public_id) const {
  return render_hold(public_id, &scope);
}

Result<Page> Views::holds(const Scope& scope, const HoldFilter& filter, const PageRequest& page) const {
  namespace hf = view_keys::hold_filter;
  const std::string key = filter.source && filter.status ? hf::source_status(*filter.source, *filter.status)
                          : filter.source                ? hf::source(*filter.source)
                          : filter.status                ? hf::status(*filter.status)
                                                         : hf::all();
  Page out;
  std::vector<std::string> ids;
  {
    std::shared_lock lock(db_lock_);
    const auto n = read(view_keys::hold_count(scope.business, scope.live, key));
    if (!n) return n.status();
    out.total_count = n.value() ? count_value(*n.value()) : 0;
    const std::uint64_t first = first_index(page);
    if (first < out.total_count) {
      const std::string prefix = view_keys::hold_listed_prefix(scope.business, scope.live, key);
      std::uint64_t index = 0;
      const Status scanned = scan_newest_first(*db_, prefix, prefix + std::string(17, '\xff'), prefix,
                                               [&](std::string_view, std::string_view id) {
                                                 if (index++ >= first) ids.emplace_back(id);
                                                 return ids.size() < page.per_page;
                                               });
      if (!scanned) return scanned;
    }
  }
  for (const auto& id : ids) {
    auto record = parsed(render_hold(id, nullptr));
    if (!record) return record.status();
    KOBO_ASSERT(record.value().has_value(), "a listing points at a missing hold");
    out.items.push_back(std::move(*record.value()));
  }
  return out;
}

Result<Page> Views::bank_accounts(const Scope& scope, const BankAccountFilter& filter,
                                  const PageRequest& page) const {
  namespace rf = view_keys::record_filter;
  Page out;
  if (filter.live && *filter.live != scope.live) return out;
  if (!(filter.account_name && filter.beneficiary_type))
    return listed_records('d', scope,
                          filter.account_name       ? rf::of('n', *filter.account_name)
                          : filter.beneficiary_type ? rf::of('b', *filter.beneficiary_type)
                                                    : rf::all(),
                          page);
  const std::string prefix = view_keys::record_listed_prefix('d', scope.business, scope.live, rf::all());
  Status failed;
  std::shared_lock lock(db_lock_);
  const Status scanned = scan_newest_first(
      *db_, prefix, prefix + std::string(9, '\xff'), prefix, [&](std::string_view, std::string_view id) {
        auto read_record = parsed(render_bank_account(id, nullptr));
        if (!read_record) {
          failed = read_record.status();
          return false;
        }
        auto& b = read_record.value();
        KOBO_ASSERT(b.has_value(), "bank account index points at a missing record");
        if (filter.account_name && b->value("accountName", "") != *filter.account_name) return true;
        if (filter.beneficiary_type && b->value("beneficiaryType", "") != *filter.beneficiary_type)
          return true;
        if (in_page(out.total_count, page)) out.items.push_back(std::move(*b));
        ++out.total_count;
        return true;
      });
  if (!failed) return failed;
  if (!scanned) return scanned;
  return out;
}

Result<std::optional<json>> Views::wallet_by_account_number(std::string_view number) const {
  const auto id = read(view_keys::account_number(number));
  if (!id) return id.status();
  if (!id.value()) return std::optional<json>();
  return parsed(render_wallet(*id.value(), nullptr));
}

Result<std::optional<std::string>> Views::wallet_text(const Scope& scope, std::string_view public_id) const {
  return render_wallet(public_id, &scope);
}

Result<Page> Views::wallets(const Scope& scope, const WalletFilter& filter, const PageRequest& page) const {
  namespace rf = view_keys::record_filter;
  Page out;
  if (filter.live && *filter.live != scope.live) return out;
  if (!(filter.category && filter.is_favourite))
    return listed_records('w', scope,
                          filter.category       ? rf::of('c', *filter.category)
                          : filter.is_favourite ? rf::of('f', *filter.is_favourite ? "true" : "false")
                                                : rf::all(),
                          page);
  const std::string prefix = view_keys::record_listed_prefix('w', scope.business, scope.live, rf::all());
  Status failed;
  std::shared_lock lock(db_lock_);
  const Status scanned = scan_newest_first(
      *db_, prefix, prefix + std::string(9, '\xff'), prefix, [&](std::string_view, std::string_view id) {
        auto read_wallet = parsed(render_wallet(id, nullptr));
        if (!read_wallet) {
          failed = read_wallet.status();
          return false;
        }
        auto& w = read_wallet.value();
        KOBO_ASSERT(w.has_value(), "wallet index points at a missing wallet");
        if (filter.category && w->value("category", "") != *filter.category) return true;
        if (filter.is_favourite && w->value("isFavourite", false) != *filter.is_favourite) return true;
        if (in_page(out.total_count, page)) out.items.push_back(std::move(*w));
        ++out.total_count;
        return true;
      });
  if (!failed) return failed;
  if (!scanned) return scanned;
  return out;
}

Result<std::optional<std::string>> Views::transaction_by_reference_text(const Scope& scope,
                                                                        std::string_view account,
                                                                        std::string_view reference) const {
  const auto id = read(view_keys::transaction_reference(account, scope.live, reference));
  if (!id) return id.status();
  if (!id.value()) return std::optional<std::string>();
  return render_transaction(*id.value(), &scope);
}

Result<std::optional<json>> Views::transaction(const Scope& scope, std::string_view account,
                                               std::string_view id_or_reference) const {
  auto text = transaction_text(scope, account, id_or_reference);
  if (!text) return text.status();
  if (!text.value()) return std::optional<json>();
  return std::optional<json>(json::parse(*text.value()));
}

Result<std::optional<std::vector<Event>>> Views::bulk_events(const Scope& scope, std::string_view id) const {
  using Found = std::optional<std::vector<Event>>;
  const auto row_bytes = read(view_keys::bulk(id));
  if (!row_bytes) return row_bytes.status();
  if (!row_bytes.value()) return Found();
  const auto row = rows::decode_bulk(*row_bytes.value());
  if (!row) return row.status();
  std::vector<Event> events;
  events.reserve(row.value().events);
  for (std::uint32_t k = 0; k < row.value().events; ++k) {
    auto e = fact(view_keys::event_fact(row.value().partition.value, row.value().seq.value + k), nullptr);
    if (!e) return e.status();
    if (!e.value()) {
      if (k == 0)
        return Status::error("views: bulk transfer " + std::string(id) + " names an event they do not have");
      continue;  // a BeneficiarySaved of a bank item: its fact is under its bank account
    }
    if (k == 0 && !in_scope(*e.value(), scope)) return Found();
    events.push_back(std::move(*e.value()));
  }
  if (!std::holds_alternative<BulkTransferAccepted>(events.front().data))
    return Status::error("views: bulk transfer " + std::string(id) + " names an event of another kind");
  return Found(std::move(events));
}

Result<std::optional<std::string>> Views::transaction_text(const Scope& scope, std::string_view account,
                                                           std::string_view id_or_reference) const {
  if (id_or_reference.starts_with("trx-")) {
    auto t = render_transaction(id_or_reference, &scope);
    if (!t || t.value()) return t;
  }
  std::uint64_t numeric = 0;
  const auto* end = id_or_reference.data() + id_or_reference.size();
  if (auto [p, ec] = std::from_chars(id_or_reference.data(), end, numeric); ec == std::errc() && p == end) {
    const auto id = read(view_keys::transaction_id(scope.business, scope.live, numeric));
    if (!id) return id.status();
    if (id.value()) {
      auto t = render_transaction(*id.value(), &scope);
      if (!t || t.value()) return t;
    }
  }
  return transaction_by_reference_text(scope, account, id_or_reference);
}

// A list of one filter, or none, never scans: totalCount is read from the filter's counter (the
// counters of its days, for a createdAt range) and the page walks a listing of matching
// transactions only (view_keys.h). A list of several filters scans the date range, as filters
// combine in too many ways to keep a listing of each.
Result<Page> Views::transactions(const Scope& scope, const TransactionFilter& filter,
                                 const PageRequest& page) const {
  namespace tf = view_keys::transaction_filter;
  Page out;
  if (filter.live && *filter.live != scope.live) return out;
  const bool dated = filter.created_from || filter.created_until;
  const int filters = static_cast<int>(filter.entry.has_value()) +
                      static_cast<int>(filter.status.has_value()) +
                      static_cast<int>(filter.amount.has_value()) + static_cast<int>(dated);
  const auto whole_day = [](const std::optional<UnixMs>& t) {
    return !t || (*t >= 0 && *t % kMsPerDay == 0);
  };
  const std::string list_prefix = view_keys::scoped('t', scope.business, scope.live);
  std::string upper = list_prefix, lower = list_prefix;
  view_keys::put_be(upper, filter.created_until
                               ? static_cast<std::uint64_t>(std::max<UnixMs>(*filter.created_until, 0))
                               : UINT64_MAX);
  if (!filter.created_until) upper += std::string(8, '\xff');
  if (filter.created_from)
    view_keys::put_be(lower, static_cast<std::uint64_t>(std::max<UnixMs>(*filter.created_from, 0)));
  const std::uint64_t first = first_index(page);
  std::vector<std::string> ids;
  Status failed;  // a listing row that does not decode
  std::shared_lock lock(db_lock_);

  if (filters <= 1 && whole_day(filter.created_from) && whole_day(filter.created_until)) {
    std::optional<std::string> single;
    if (filter.entry) single = tf::entry(*filter.entry);
    if (filter.status) single = tf::status(*filter.status);
    if (filter.amount) single = tf::amount(*filter.amount);
    if (dated) {
      const std::string from = view_keys::transaction_count(
          scope.business, scope.live, tf::day(filter.created_from.value_or(0) / kMsPerDay));
      const std::string until = view_keys::transaction_count(
          scope.business, scope.live,
          filter.created_until ? tf::day(*filter.created_until / kMsPerDay) : std::string("d\xff"));
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
      for (it->Seek(from); it->Valid() && it->key().compare(until) < 0; it->Next())
        out.total_count += count_value(std::string_view(it->value().data(), it->value().size()));
      if (!it->status().ok()) return Status::error("views scan: " + it->status().ToString());
    } else {
      const auto n =
          read(view_keys::transaction_count(scope.business, scope.live, single.value_or(tf::all())));
      if (!n) return n.status();
      out.total_count = n.value() ? count_value(*n.value()) : 0;
    }
    if (first < out.total_count) {
      std::uint64_t index = 0;
      const auto take = [&](std::string_view id) {
        if (index++ >= first) ids.emplace_back(id);
        return ids.size() < page.per_page;
      };
      Status scanned;
      if (single) {
        const std::string prefix =
            view_keys::transaction_filtered_prefix(scope.business, scope.live, *single);
        scanned = scan_newest_first(*db_, prefix, prefix + std::string(17, '\xff'), prefix,
                                    [&](std::string_view, std::string_view id) { return take(id); });
      } else {
        scanned =
            scan_newest_first(*db_, list_prefix, upper, lower, [&](std::string_view, std::string_view row) {
              auto listed = rows::decode_listed(row);
              if (!listed) {
                failed = listed.status();
                return false;
              }
              return take(listed.value().public_id);
            });
      }
      if (!failed) return failed;
      if (!scanned) return scanned;
    }
  } else {
    const Status scanned =
        scan_newest_first(*db_, list_prefix, upper, lower, [&](std::string_view, std::string_view value) {
          auto listed = rows::decode_listed(value);
          if (!listed) {
            failed = listed.status();
            return false;
          }
          const rows::ListedRow& row = listed.value();
          if (filter.entry && to_string(row.entry) != *filter.entry) return true;
          if (filter.status && to_string(row.status) != *filter.status) return true;
          if (filter.amount && row.amount != *filter.amount) return true;
          if (in_page(out.total_count, page)) ids.push_back(row.public_id);
          ++out.total_count;
          return true;
        });
    if (!failed) return failed;
    if (!scanned) return scanned;
  }
  for (const auto& id : ids) {
    auto t = parsed(render_transaction(id, nullptr));
    if (!t) return t.status();
    KOBO_ASSERT(t.value().has_value(), "transaction index points at a missing transaction");
    out.items.push_back(std::move(*t.value()));
  }
  return out;
}

Result<std::vector<ViewPosition>> Views::positions() const {
  std::vector<ViewPosition> out(partitions_);
  for (std::uint32_t p = 0; p < partitions_; ++p) {
    out[p].last_hash = std::string(64, '0');
    auto read_position = get_json(view_keys::position(p));
    if (!read_position) return read_position.status();
    if (const auto& j = read_position.value()) {
      out[p].next_offset = Offset(j->at("offset").get<std::uint64_t>());
      out[p].last_seq = Seq(j->at("seq").get<std::uint64_t>());
      out[p].last_hash = j->at("hash").get<std::string>();
      out[p].epoch = Epoch(j->at("epoch").get<std::uint64_t>());
    }
  }
  return out;
}

std::optional<std::string> ViewRecords::read(const std::string& key) const {
  if (const auto it = read_.find(key); it != read_.end()) return it->second;
  auto value = views_.read(key);
  if (!value) {
    if (status_.ok()) status_ = value.status();
    return std::nullopt;  // not kept: a later read may succeed, and status() has said it failed
  }
  return read_.emplace(key, std::move(value).value()).first->second;
}

std::optional<WalletFacts> ViewRecords::wallet(std::string_view public_id) const {
  const auto bytes = read(view_keys::wallet(public_id));
  if (!bytes) return std::nullopt;
  return decoded(decode_fact(*bytes), [](const Event& e) { return render::wallet_facts(e); });
}

std::optional<Event> ViewRecords::payout(std::string_view public_id) const {
  const auto row_bytes = read(view_keys::transaction(public_id));
  if (!row_bytes) return std::nullopt;
  return decoded(rows::decode_transaction(*row_bytes),
                 [&](const rows::TransactionRow& row) -> std::optional<Event> {
                   const auto fact = read(view_keys::event_fact(row.partition.value, row.seq.value));
                   if (!fact) return std::nullopt;
                   return decoded(decode_fact(*fact), [](const Event& e) { return std::optional<Event>(e); });
                 });
}

}  // namespace kobo
