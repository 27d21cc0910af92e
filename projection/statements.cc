#include "projection/statements.h"

#include <rocksdb/db.h>

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "events/fact_codec.h"
#include "projection/view_keys.h"

namespace kobo {

namespace {

// The views' facts as rendering reads them, each decoded once for the lines of one read (a
// statement's lines name the same few wallets again and again). Bounded by the lines of a read.
class CachedRecords final : public render::RecordSource {
 public:
  explicit CachedRecords(const Views& views) : records_(views) {}
  std::optional<WalletFacts> wallet(std::string_view public_id) const override {
    auto it = wallets_.find(public_id);
    if (it == wallets_.end()) it = wallets_.emplace(std::string(public_id), records_.wallet(public_id)).first;
    return it->second;
  }
  std::optional<Event> payout(std::string_view public_id) const override {
    auto it = payouts_.find(public_id);
    if (it == payouts_.end()) it = payouts_.emplace(std::string(public_id), records_.payout(public_id)).first;
    return it->second;
  }
  const Status& status() const { return records_.status(); }

 private:
  ViewRecords records_;
  mutable std::map<std::string, std::optional<WalletFacts>, std::less<>> wallets_;
  mutable std::map<std::string, std::optional<Event>, std::less<>> payouts_;
};

}  // namespace

Result<std::optional<rows::WalletRow>> Statements::wallet_row(const Scope& scope,
                                                              std::string_view wallet) const {
  const auto opening = views_.fact(view_keys::wallet(wallet), &scope);
  if (!opening) return opening.status();
  if (!opening.value()) return std::optional<rows::WalletRow>();
  const auto bytes = views_.read(view_keys::wallet_row(wallet));
  if (!bytes) return bytes.status();
  if (!bytes.value()) return Status::error("views: a wallet without its row: " + std::string(wallet));
  auto row = rows::decode_wallet(*bytes.value());
  if (!row) return row.status();
  return std::optional<rows::WalletRow>(std::move(row).value());
}

Result<rows::StatementRow> Statements::row(std::string_view wallet, std::uint64_t number) const {
  const auto bytes = views_.read(view_keys::statement_line(wallet, number));
  if (!bytes) return bytes.status();
  if (!bytes.value())
    return Status::error("views: statement line " + std::to_string(number) + " of " + std::string(wallet) +
                         " is missing");
  return rows::decode_statement(*bytes.value());
}

Result<std::uint64_t> Statements::movements_before(std::string_view wallet, std::uint64_t movements,
                                                   UnixMs t) const {
  // The first number whose time is at or after t, minus one: times never decrease.
  std::uint64_t lo = 0;  // movements 1..lo are before t
  std::uint64_t hi = movements;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo + 1) / 2;
    const auto r = row(wallet, mid);
    if (!r) return r.status();
    if (r.value().time < t)
      lo = mid;
    else
      hi = mid - 1;
  }
  KOBO_ASSERT(lo <= movements, "no more movements before a time than in all");
  return lo;
}

Result<std::optional<StatementWindow>> Statements::window(const Scope& scope, std::string_view wallet,
                                                          UnixMs from, UnixMs to) const {
  KOBO_ASSERT(from <= to, "a statement window that ends before it starts");
  const auto w = wallet_row(scope, wallet);
  if (!w) return w.status();
  if (!w.value()) return std::optional<StatementWindow>();
  const std::uint64_t n = w.value()->movements;
  const auto before = movements_before(wallet, n, from);
  if (!before) return before.status();
  const auto until = movements_before(wallet, n, to);
  if (!until) return until.status();
  StatementWindow out;
  out.from = from;
  out.to = to;
  KOBO_ASSERT(before.value() <= until.value(),
              "a wallet's movements are in time order: a window counts forward");
  out.first = before.value() + 1;
  out.count = until.value() - before.value();
  // Balance and credits after movement k (0 before any).
  const auto after = [&](std::uint64_t k) -> Result<std::pair<Kobo, Kobo>> {
    if (k == 0) return std::pair{Kobo(0), Kobo(0)};
    const auto r = row(wallet, k);
    if (!r) return r.status();
    return std::pair{r.value().balance, r.value().credited};
  };
  const auto open = after(before.value());
  if (!open) return open.status();
  const auto close = out.count == 0 ? open : after(until.value());
  if (!close) return close.status();
  out.opening = open.value().first;
  out.closing = close.value().first;
  out.credits = Kobo(close.value().second.value - open.value().second.value);
  out.debits = Kobo(out.credits.value - (out.closing.value - out.opening.value));
  KOBO_ASSERT(out.debits.value >= 0 && out.credits.value >= 0, "a statement window's totals are negative");
  return std::optional<StatementWindow>(out);
}

Result<std::vector<StatementEntry>> Statements::lines(std::string_view wallet, std::uint64_t first,
                                                      std::uint64_t count, bool bulk) const {
  rocksdb::ReadOptions read;
  read.fill_cache = !bulk;
  KOBO_ASSERT(count <= kLinesMax, "too many statement lines at once");
  std::vector<StatementEntry> out;
  if (count == 0) return out;
  out.reserve(count);
  {
    // One scan of the rows, under the views' lock for its length only.
    std::shared_lock lock(views_.db_lock_);
    std::unique_ptr<rocksdb::Iterator> it(views_.db_->NewIterator(read));
    const std::string prefix = view_keys::statement_prefix(wallet);
    const std::string start = view_keys::statement_line(wallet, first);
    for (it->Seek(start); it->Valid() && out.size() < count; it->Next()) {
      const std::string_view key(it->key().data(), it->key().size());
      if (key.substr(0, prefix.size()) != prefix) break;
      const std::uint64_t number = view_keys::get_be(key, prefix.size());
      if (number != first + out.size()) break;
      auto row = rows::decode_statement(std::string_view(it->value().data(), it->value().size()));
      if (!row) return row.status();
      out.push_back(StatementEntry{number, std::move(row).value(), {}});
    }
    if (!it->status().ok()) return Status::error("views read: " + it->status().ToString());
  }
  if (out.size() != count)
    return Status::error("views: the statement of " + std::string(wallet) + " lacks line " +
                         std::to_string(first + out.size()));
  KOBO_ASSERT(out.front().number == first && out.back().number == first + count - 1,
              "a statement's lines are read consecutive, from the first asked for");
  // The facts of the events the lines name, read at once; consecutive lines of one event (a
  // sweep) share it. They are in the wallet's scope's transaction list.
  const auto opening = views_.fact(view_keys::wallet(wallet), nullptr);
  if (!opening) return opening.status();
  if (!opening.value())
    return Status::error("views: a statement of a wallet they do not have: " + std::string(wallet));
  const std::string scope = view_keys::scope17(opening.value()->business, opening.value()->live);
  std::vector<std::string> keys;
  std::vector<std::size_t> event_of(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::string key = view_keys::event(scope, out[i].row.at.first);
    if (keys.empty() || keys.back() != key) keys.push_back(std::move(key));
    event_of[i] = keys.size() - 1;
  }
  KOBO_ASSERT(keys.size() <= out.size(), "an event per line at most");
  std::vector<Event> events;
  events.reserve(keys.size());
  {
    std::shared_lock lock(views_.db_lock_);
    const std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
    std::vector<rocksdb::PinnableSlice> values(keys.size());
    std::vector<rocksdb::Status> statuses(keys.size());
    views_.db_->MultiGet(read, views_.db_->DefaultColumnFamily(), keys.size(), slices.data(), values.data(),
                         statuses.data());
    for (std::size_t k = 0; k < keys.size(); ++k) {
      if (statuses[k].IsNotFound())
        return Status::error("views: a statement line names an event they do not have");
      if (!statuses[k].ok()) return Status::error("views read: " + statuses[k].ToString());
      auto row = rows::decode_event_row(std::string_view(values[k].data(), values[k].size()));
      if (!row) return row.status();
      auto e = decode_fact(row.value().fact);
      if (!e) return e.status();
      events.push_back(std::move(e).value());
    }
  }
  KOBO_ASSERT(events.size() == keys.size(), "each line's event read");
  CachedRecords records(views_);
  if (!render::can_render(events, records) || !records.status())
    return records.status() ? Status::error("views: a statement line's event shows records they lack")
                            : records.status();
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i].line = render::statement_line(events[event_of[i]], out[i].row.at.index, records);
  return out;
}

Result<std::optional<Kobo>> Statements::balance_at(const Scope& scope, std::string_view wallet,
                                                   UnixMs at) const {
  const auto w = wallet_row(scope, wallet);
  if (!w) return w.status();
  if (!w.value()) return std::optional<Kobo>();
  const auto k = movements_before(wallet, w.value()->movements, at);
  if (!k) return k.status();
  KOBO_ASSERT(k.value() <= w.value()->movements, "a balance at a time after a movement the wallet had");
  if (k.value() == 0) return std::optional<Kobo>(Kobo(0));
  const auto r = row(wallet, k.value());
  if (!r) return r.status();
  return std::optional<Kobo>(r.value().balance);
}

}  // namespace kobo
