#pragma once
// ViewBatch: the view changes of whole commands, not written yet. Internal to projection/: the
// Projector writes a batch as one RocksDB WriteBatch with the log positions it reflects (the
// live views), and a rebuild writes it as a sorted file that RocksDB ingests (rebuild.h). Either
// way the batch is the one pure function from events to rows (docs/architecture.md section 5),
// so views rebuilt from the log are byte-identical to the ones kept up to date event by event.
//
// Rows that a later event of the batch may read back (wallet rows, accounts, account keys, hold
// rows, list rows, bitmap chunks, webhook rows, and the transaction and event rows of a payout not
// final yet) are kept by key, decoded where they change often; everything else is appended, key
// and value, to one buffer. changes() gives every change once, in key order, which makes
// RocksDB's inserts (or the file's writing) cheap.
// The rows read back stay after a batch is written (clear()), up to kCarriedBytes, as what the
// views hold: the next batch reads a busy wallet's row, or a list's newest chunk, from memory,
// not from RocksDB. That holds because one batch (one projector lane) writes every key of the
// partitions it applies, and nothing else writes the views; a batch that fails, or that is
// dropped, forgets them (forget()).
// Not thread-safe: one batch per thread; its reads go to the Views it was made for.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "events/event.h"
#include "events/ledger.h"
#include "projection/bitmap.h"
#include "projection/rows.h"
#include "projection/view_keys.h"
#include "projection/views.h"

namespace kobo {

class ViewBatch {
 public:
  explicit ViewBatch(Views& views) : views_(views) {}
  ViewBatch(const ViewBatch&) = delete;
  ViewBatch& operator=(const ViewBatch&) = delete;

  // Applies `e`. A read of the views that fails, or a row that does not decode, is an error: the
  // batch then forgets everything it held (forget()), the events applied before `e` too, which
  // the projector applies again from the views' positions.
  [[nodiscard]] Status apply(const Event& e);
  // The position of partition `p` the batch's changes bring the views to.
  void put_position(std::uint32_t p, const ViewPosition& position);

  bool empty() const { return times_.empty() && changed_ == 0 && appended_.empty(); }
  std::size_t events() const { return times_.size(); }
  // About how many bytes the batch holds: a rebuild writes a file when it is large enough.
  std::size_t bytes() const { return bytes_.size() + changed_bytes_; }
  // Event::time of each event applied since the last clear(), in order (the projection's lag).
  const std::vector<UnixMs>& times() const { return times_; }

  using Change = ViewChange;
  // Every change of the batch, each key once, in key order: valid until the batch changes.
  std::vector<Change> changes();
  // After the changes were written: the batch starts again, still holding the rows read back.
  void clear();
  // After a failure, or when the views may hold other rows than the batch believes: the batch
  // starts again holding nothing.
  void forget();
  // For a batch whose views held nothing of its partitions when it began (a rebuild's lane): from
  // then on the batch knows which bitmap chunks the views can hold, those it wrote, and asks the
  // views for those only. Most chunks a rebuild looks up are a new amount's, which no file holds;
  // asking RocksDB for them (a Bloom filter per file ingested) was a sixth of a rebuild's apply.
  void began_on_empty_views() { written_chunks_.emplace(); }

 private:
  class Records;
  struct Created;
  // A row whose tag is read back (read_back()) is held, unless the caller knows no later event
  // reads it: `held` false appends it as any other row.
  void put(std::string key, std::string value, bool held = true);
  std::string& edit(const std::string& key, const char* missing);
  std::optional<std::string> find(const std::string& key) const;
  bitmap::Chunk& chunk(const std::string& bitmap, std::uint64_t number);
  void mark(const std::string& bitmap, std::uint64_t number, bool on);
  rows::ListRow& list(char kind, const std::string& scope);
  // Numbers `records` new records of list `kind` of `scope` at time `time` (0 for the lists not
  // ordered by time): the first one's number, and how much earlier `time` is than the list's latest.
  std::pair<std::uint64_t, UnixMs> add_to_list(char kind, const std::string& scope, std::uint32_t records,
                                               UnixMs time);
  rows::WebhookRow& webhook_row(const std::string& account, bool live);
  std::string owner_account(const Event& e, const Records& records) const;

  std::vector<Created> put_transactions(const Event& e, const std::string& scope, const Records& records);
  void apply_postings(const Event& e, const std::vector<Posting>& postings,
                      const std::vector<Created>& created);
  void advance_transaction(const Event& e, const StatusChange& change, const Records& records);
  void number_webhook_events(const Event& e, const std::string& scope, const std::vector<Created>& created,
                             const Records& records);
  void change_wallet(const WalletId& id, const std::function<void(rows::WalletRow&)>& change);
  void open_wallet(const Event& e, const WalletId& id, const std::string& account_number);
  void close_collection(const WalletId& id, CollectionStatus status, UnixMs time);
  void list_record(char kind, const Event& e, std::string_view public_id,
                   std::initializer_list<std::pair<char, std::string>> filters);
  void place_hold(const Event& e, const HoldPlaced& x);
  void change_hold(const Event& e, const HoldId& id, std::optional<HoldStatus> ended,
                   const std::vector<Created>* capture);
  void add_held(const std::string& wallet, Kobo delta, UnixMs time);
  void register_business(const Event& e, const BusinessRegistered& x);
  void update_account(const Event& e, const AccountUpdated& x);
  void configure_webhooks(const Event& e, const WebhooksConfigured& x);
  void change_account_keys(const std::string& account, bool live,
                           const std::function<void(rows::AccountKeysRow&)>& change);
  void roll_key(const Event& e, const SecretKeyRolled& x);
  void revoke_key(const Event& e, const SecretKeyRevoked& x);
  void apply_event(const Event& e);

  // The view tags (view_keys.h) of rows a later event of a batch may read back.
  static bool read_back(std::string_view key) {
    return !key.empty() && std::string_view("bTLAWPOUBk").find(key.front()) != std::string_view::npos;
  }
  // Of those, the rows kept for the next batch too (clear()): a wallet's, an account's, a
  // business's, a position. The rows of one record (a transaction's `T`, an event's `L`, a hold's
  // `O` and `U`) are read back within their batch (a payout initiated and settled in it) and
  // seldom after: carried, they would grow with every event until kCarriedBytes forgot them all
  // at once, a stall of tens of milliseconds that the projection's lag showed.
  static bool carried(std::string_view key) {
    return read_back(key) && std::string_view("TLOU").find(key.front()) == std::string_view::npos;
  }

  Views& views_;
  using KeyHash = view_keys::KeyHash;
  // A row read back, and whether this batch changed it (changes() writes those only).
  template <typename T>
  struct Held {
    T row;
    bool changed = false;
    // Kept for the next batch (settle()), decided when the row is first held: a string row by
    // its tag (carried()), a bitmap chunk by whether the views had it.
    bool carried = true;
  };
  template <typename T>
  using Rows = std::unordered_map<std::string, Held<T>, KeyHash, std::equal_to<>>;
  template <typename T>
  using Changed = std::vector<typename Rows<T>::value_type*>;
  // Marks a held row changed by this batch (once in `list`), and returns it.
  template <typename T>
  T& changed(typename Rows<T>::value_type& held, Changed<T>& list, std::size_t bytes);
  // After a batch is written: each row it changed stays held for the next batch if it is carried
  // (Held::carried), else it goes, `bytes(row)` less held.
  template <typename T, typename Bytes>
  void settle(Rows<T>& rows, Changed<T>& list, Bytes bytes);
  // Hashed, not ordered: changes() sorts every change once, and a lookup by a key that shares
  // its scope's 18-byte prefix with its neighbours costs a comparison of that prefix per level
  // of an ordered map. Node-based, so that the pointers of the Changed lists stay valid.
  Rows<std::string> writes_;  // rows read back: key -> value
  Rows<bitmap::Chunk> chunks_;
  Rows<rows::ListRow> lists_;
  Rows<rows::WebhookRow> webhooks_;
  // The rows of each map this batch changed, in the order first changed.
  Changed<std::string> changed_writes_;
  Changed<bitmap::Chunk> changed_chunks_;
  Changed<rows::ListRow> changed_lists_;
  Changed<rows::WebhookRow> changed_webhooks_;
  std::string chunk_key_;  // chunk()'s lookups
  // A Bloom filter of keys by their hash (KeyHash): of fixed size, three bits a key, so that a
  // rebuild's memory does not grow with the log; a false "may hold" costs a read only (about 1 in
  // 1,400 at a million keys, 1 in 5 at ten million).
  class WrittenKeys {
   public:
    WrittenKeys() : words_(kBits / 64) {}
    void add(std::size_t hash) {
      for (int i = 0; i < kProbes; ++i)
        words_[probe(hash, i) / 64] |= std::uint64_t{1} << (probe(hash, i) % 64);
    }
    bool may_hold(std::size_t hash) const {
      for (int i = 0; i < kProbes; ++i)
        if ((words_[probe(hash, i) / 64] & (std::uint64_t{1} << (probe(hash, i) % 64))) == 0) return false;
      return true;
    }

   private:
    static constexpr int kProbes = 3;
    static constexpr std::size_t kBits = std::size_t{1} << 25;  // 4 MiB
    static std::size_t probe(std::size_t hash, int i) {
      return (hash + static_cast<std::size_t>(i) * ((hash >> 32) | 1)) & (kBits - 1);
    }
    std::vector<std::uint64_t> words_;
  };
  // After began_on_empty_views(): every chunk the batch gave to be written, which forget() keeps,
  // as the views keep them.
  std::optional<WrittenKeys> written_chunks_;
  std::size_t changed_ = 0;        // how many rows this batch changed
  std::size_t changed_bytes_ = 0;  // about what those hold
  std::size_t held_bytes_ = 0;     // about what every row held holds, changed or carried
  struct Appended {
    std::size_t at;  // in bytes_: the key, then the value
    std::uint32_t key_size, value_size;
  };
  std::vector<Appended> appended_;    // everything else, in the order changed
  std::string bytes_;                 // appended_'s keys and values
  std::vector<std::string> encoded_;  // what changes() encoded, which its changes point into
  std::vector<UnixMs> times_;
};

}  // namespace kobo
