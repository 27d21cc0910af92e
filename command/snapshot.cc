#include "command/snapshot.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include "common/crypto.h"
#include "common/file.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/thread.h"

namespace kobo {

namespace {

constexpr std::string_view kMagic = "KOBOSNAP";
// Bumped whenever PartitionState or the layout changes: an older snapshot is then refused
// (and the log replayed), never misread.
// Format 2: the hot state only (references, bank accounts and closed collection wallets moved to
// the history index), and the wallet-name index hashed with stable_hash instead of std::hash.
// Format 4: pending holds and what they reserve of each wallet; wallets' KYC tiers and day
// debits, and the tier limits in force.
// Format 5: the writer key that signs the partition's next checkpoint.
constexpr std::uint32_t kSnapshotFormat = 5;
constexpr std::size_t kHashSize = 32;
constexpr std::size_t kKeep = 2;

class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(std::uint32_t v) { raw(v); }
  void u64(std::uint64_t v) { raw(v); }
  void i64(std::int64_t v) { raw(v); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void str(std::string_view s) {
    const std::size_t before = out_.size();
    u64(s.size());
    out_.append(s);
    KOBO_ASSERT(out_.size() == before + sizeof(std::uint64_t) + s.size(),
                "a string is its length, then its bytes");
  }
  std::string& bytes() { return out_; }

 private:
  template <typename T>
  void raw(T v) {
    static_assert(std::endian::native == std::endian::little, "snapshots are written little-endian");
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.append(b, sizeof(T));
    KOBO_ASSERT(out_.size() >= sizeof(T), "an integer takes its size");
  }
  std::string out_;
};

// Reads what Writer wrote. A read past the end sets failed() and returns zeros, so a decoder
// reads on and is refused once at the end; counts are checked against what is left before
// anything is reserved.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  std::uint8_t u8() { return raw<std::uint8_t>(); }
  std::uint32_t u32() { return raw<std::uint32_t>(); }
  std::uint64_t u64() { return raw<std::uint64_t>(); }
  std::int64_t i64() { return raw<std::int64_t>(); }
  bool boolean() {
    const std::uint8_t b = u8();
    if (b > 1) refuse();  // Writer::boolean writes 0 or 1
    KOBO_ASSERT(failed_ || b <= 1, "a boolean read is 0 or 1, or the snapshot is refused");
    return b == 1;
  }
  std::string str() {
    const std::uint64_t n = u64();
    if (n > in_.size() - at_) return fail<std::string>();
    std::string s(in_.substr(at_, n));
    at_ += n;
    KOBO_ASSERT(at_ <= in_.size(), "a read stays inside the snapshot");
    return s;
  }
  // A container's element count: each element takes at least one byte.
  std::uint64_t count() {
    const std::uint64_t n = u64();
    if (n > in_.size() - at_) return fail<std::uint64_t>();
    KOBO_ASSERT(n <= in_.size() - at_, "a count fits what is left: each element takes a byte at least");
    return n;
  }
  bool failed() const { return failed_; }
  bool at_end() const { return at_ == in_.size(); }
  // A value no writer writes: the snapshot is refused.
  void refuse() { fail<int>(); }

 private:
  template <typename T>
  T raw() {
    KOBO_ASSERT(at_ <= in_.size(), "a read stays inside the snapshot");
    if (sizeof(T) > in_.size() - at_) return fail<T>();
    T v;
    std::memcpy(&v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  template <typename T>
  T fail() {
    failed_ = true;
    at_ = in_.size();  // every later read fails too: the decoder is refused once, at its end
    KOBO_ASSERT(at_end(), "a failed reader reads nothing more");
    return T{};
  }
  std::string_view in_;
  std::size_t at_ = 0;
  bool failed_ = false;
};

void put_chain(Writer& w, const ChainFollower& c) {
  KOBO_ASSERT(c.last_hash().size() == kGenesisHash.size(), "a chain's head hash is 64 hex digits");
  w.u64(c.last_seq().value);
  w.str(c.last_hash());
  w.u64(c.epoch().value);
}

ChainFollower get_chain(Reader& r) {
  const Seq seq(r.u64());
  std::string hash = r.str();
  const Epoch epoch(r.u64());
  if (hash.size() != kGenesisHash.size()) r.refuse();  // a chain's head hash is 64 hex digits
  KOBO_ASSERT(r.failed() || hash.size() == kGenesisHash.size(), "a chain read whole has a 64-digit head");
  return ChainFollower(seq, std::move(hash), epoch);
}

template <typename Set>
void put_strings(Writer& w, const Set& set) {
  const std::size_t before = w.bytes().size();
  w.u64(set.size());
  for (const auto& s : set) w.str(s);
  KOBO_ASSERT(w.bytes().size() >= before + 8 * (set.size() + 1), "each string takes its length at least");
}

template <typename Set>
void get_strings(Reader& r, Set& set) {
  const std::uint64_t count = r.count();
  for (std::uint64_t n = count; n > 0 && !r.failed(); --n) set.insert(r.str());
  if (set.size() != count) r.refuse();  // a set the writer wrote holds no repeats
  KOBO_ASSERT(r.failed() || set.size() == count, "a set read whole holds every string it counts");
}

// Writes a map's entries, each value through `put`.
template <typename Map, typename Put>
void put_map(Writer& w, const Map& map, Put put) {
  const std::size_t before = w.bytes().size();
  w.u64(map.size());
  for (const auto& [key, value] : map) {
    w.str(key);
    put(value);
  }
  KOBO_ASSERT(w.bytes().size() >= before + 8 * (map.size() + 1),
              "each entry takes its key's length at least");
}

template <typename Map, typename Get>
void get_map(Reader& r, Map& map, Get get) {
  const std::uint64_t count = r.count();
  for (std::uint64_t n = count; n > 0 && !r.failed(); --n) {
    std::string key = r.str();
    map.emplace(std::move(key), get());
  }
  if (map.size() != count) r.refuse();  // a map the writer wrote holds no repeated key
  KOBO_ASSERT(r.failed() || map.size() == count, "a map read whole holds every entry it counts");
}

std::filesystem::path snapshot_path(const std::filesystem::path& dir, std::uint64_t events) {
  std::string digits = std::to_string(events);
  KOBO_ASSERT(digits.size() <= 20, "20 digits hold any count of events");
  std::filesystem::path path = dir / ("snapshot-" + std::string(20 - digits.size(), '0') + digits + ".bin");
  KOBO_ASSERT(path.filename().string().size() == 33, "snapshots_in() finds what snapshot_path() names");
  return path;
}

// The snapshots in `dir`, newest first (the name sorts by the events they cover).
std::vector<std::filesystem::path> snapshots_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() == 33 && name.starts_with("snapshot-") && name.ends_with(".bin"))
      out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end(), std::greater<>());
  KOBO_ASSERT(std::adjacent_find(out.begin(), out.end()) == out.end(), "a directory names a file once");
  return out;
}

}  // namespace

// Every member of the state, in one order for writing and reading.
class SnapshotCodec {
 public:
  // What a partition's state must be, whoever holds it: the snapshotter's copy before it is
  // written (asserted), a snapshot's once decoded (refused otherwise). A state is snapshotted at
  // a command boundary, so its balances sum to zero; every index points at what it indexes.
  static Status check(const PartitionState& s) {
    const auto bad = [](const std::string& what) { return Status::error("an inconsistent state: " + what); };
    const Wallets& ws = s.wallets;
    Kobo sum;
    const auto add = [&](Kobo k) {
      const auto next = checked_add(sum, k);
      if (next) sum = *next;
      return next.has_value();
    };
    for (const auto& [key, w] : ws.by_key_) {
      if (w.owner >= ws.owners_.size() || w.bank >= ws.banks_.size())
        return bad("a wallet of no owner or bank");
      if (key.hi == 0 && key.lo >= ws.odd_ids_.size()) return bad("a wallet of no id");
      if (w.balance.value < 0) return bad("a wallet below zero");
      if (w.tier > kKycTiers) return bad("a wallet of an unknown tier");
      if (!add(w.balance)) return bad("balances that overflow");
    }
    for (const Kobo b : s.system_balances)
      if (!add(b)) return bad("balances that overflow");
    if (sum != s.total || s.total.value != 0) return bad("balances that do not sum to zero");
    for (const auto& [number, key] : ws.by_number_)
      if (!ws.by_key_.contains(key)) return bad("an account number of no wallet");
    for (const auto& [hash, key] : ws.by_name_)
      if (!ws.by_key_.contains(key)) return bad("a wallet name of no wallet");
    if (ws.by_number_.size() != ws.by_key_.size()) return bad("a wallet without its account number");
    for (const auto& [id, number] : s.collection_numbers)
      if (!s.collections.contains(number)) return bad("an open collection wallet of no number");
    if (s.collection_numbers.size() != s.collections.size()) return bad("a collection wallet without its id");
    for (const auto& [trx, p] : s.payouts)
      if (p.amount.value <= 0 || p.fee.value <= 0 || p.status == TransactionStatus::success ||
          p.status == TransactionStatus::failed)
        return bad("a payout in flight of no amount, or final");
    std::unordered_map<std::string, Kobo> held;
    for (const auto& [id, h] : s.holds) {
      if (h.amount.value <= 0 || h.captured.value < 0 || h.captured >= h.amount)
        return bad("a pending hold of no amount, or captured whole");
      held[h.source] += h.remaining();
    }
    if (held != s.held) return bad("what pending holds reserve is not what their wallets have held");
    if (auto t = check_tier_limits(s.tier_limits); !t) return bad(t.message());
    const auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
    if (!s.checkpoint_key.empty() && (s.checkpoint_key.size() != 64 ||
                                      !std::all_of(s.checkpoint_key.begin(), s.checkpoint_key.end(), hex)))
      return bad("a checkpoint key that is not 64 hex digits");
    KOBO_ASSERT(sum == s.total && held.size() == s.held.size(),
                "a consistent state's balances sum to its total");
    return {};
  }

  static void put(Writer& w, const PartitionState& s) {
    KOBO_ASSERT(s.tier_limits.size() == kKycTiers, "get() reads a limit per tier");
    KOBO_ASSERT(s.chain.last_seq().value == 0 || s.chain.last_hash() != kGenesisHash,
                "a head that is an event");
    w.u32(s.partition.value);
    put_chain(w, s.chain);
    for (const std::uint64_t n : {s.wallets_created, s.transactions_created, s.accounts_created,
                                  s.account_numbers_issued, s.bank_accounts_created})
      w.u64(n);
    put_strings(w, s.businesses);
    put_map(w, s.account_business, [&](const std::string& v) { w.str(v); });
    put_wallets(w, s.wallets);
    put_map(w, s.transit_settlement, [&](const std::string& v) { w.str(v); });
    put_map(w, s.collections, [&](const CollectionState& c) {
      w.str(c.public_id);
      w.str(c.destination);
      w.i64(c.amount.value);
      w.i64(c.expires_at);
      w.str(c.business);
      w.boolean(c.live);
    });
    put_map(w, s.collection_numbers, [&](const std::string& v) { w.str(v); });
    put_map(w, s.primary_wallets, [&](int v) { w.i64(v); });
    w.u64(s.system_balances.size());
    for (const Kobo b : s.system_balances) w.i64(b.value);
    put_map(w, s.payouts, [&](const PayoutState& p) {
      w.u8(static_cast<std::uint8_t>(p.status));
      w.str(p.source);
      w.i64(p.amount.value);
      w.i64(p.fee.value);
      w.i64(p.updated_at);
      w.boolean(p.sandbox_fails);
      w.str(p.business);
      w.boolean(p.live);
    });
    put_map(w, s.holds, [&](const HoldState& h) {
      w.str(h.source);
      w.i64(h.amount.value);
      w.i64(h.captured.value);
      w.i64(h.expires_at);
      w.str(h.business);
      w.str(h.account);
      w.boolean(h.live);
    });
    put_map(w, s.held, [&](Kobo k) { w.i64(k.value); });
    w.i64(s.total.value);
    w.u64(s.tier_limits.size());
    for (const TierLimit& l : s.tier_limits) {
      w.i64(l.daily_debit.value);
      w.boolean(l.max_balance.has_value());
      w.i64(l.max_balance.value_or(Kobo(0)).value);
    }
    w.str(s.checkpoint_key);
  }

  static bool get(Reader& r, PartitionState& s) {
    s.partition = Partition(r.u32());
    s.chain = get_chain(r);
    for (std::uint64_t* n : {&s.wallets_created, &s.transactions_created, &s.accounts_created,
                             &s.account_numbers_issued, &s.bank_accounts_created})
      *n = r.u64();
    get_strings(r, s.businesses);
    get_map(r, s.account_business, [&] { return r.str(); });
    get_wallets(r, s.wallets);
    get_map(r, s.transit_settlement, [&] { return r.str(); });
    get_map(r, s.collections, [&] {
      CollectionState c;
      c.public_id = r.str();
      c.destination = r.str();
      c.amount = Kobo(r.i64());
      c.expires_at = r.i64();
      c.business = r.str();
      c.live = r.boolean();
      return c;
    });
    get_map(r, s.collection_numbers, [&] { return r.str(); });
    get_map(r, s.primary_wallets, [&] { return static_cast<int>(r.i64()); });
    if (r.u64() != s.system_balances.size()) return false;
    for (Kobo& b : s.system_balances) b = Kobo(r.i64());
    get_map(r, s.payouts, [&] {
      PayoutState p;
      const std::uint8_t status = r.u8();
      if (status <= static_cast<std::uint8_t>(TransactionStatus::failed))
        p.status = static_cast<TransactionStatus>(status);
      else
        r.refuse();
      p.source = r.str();
      p.amount = Kobo(r.i64());
      p.fee = Kobo(r.i64());
      p.updated_at = r.i64();
      p.sandbox_fails = r.boolean();
      p.business = r.str();
      p.live = r.boolean();
      return p;
    });
    get_map(r, s.holds, [&] {
      HoldState h;
      h.source = r.str();
      h.amount = Kobo(r.i64());
      h.captured = Kobo(r.i64());
      h.expires_at = r.i64();
      h.business = r.str();
      h.account = r.str();
      h.live = r.boolean();
      return h;
    });
    get_map(r, s.held, [&] { return Kobo(r.i64()); });
    s.total = Kobo(r.i64());
    if (r.u64() != kKycTiers) return false;
    s.tier_limits.assign(kKycTiers, TierLimit{});
    for (TierLimit& l : s.tier_limits) {
      l.daily_debit = Kobo(r.i64());
      const bool capped = r.boolean();
      const Kobo cap(r.i64());
      l.max_balance = capped ? std::optional<Kobo>(cap) : std::nullopt;
    }
    s.checkpoint_key = r.str();
    KOBO_ASSERT(r.failed() || s.tier_limits.size() == kKycTiers,
                "a state read whole has every tier's limits");
    return !r.failed();
  }

 private:
  static void put_wallets(Writer& w, const Wallets& ws) {
    KOBO_ASSERT(ws.by_number_.size() == ws.by_key_.size(), "every wallet has its account number");
    w.u64(ws.owners_.size());
    for (std::uint32_t i = 0; i < ws.owners_.size(); ++i) {
      const Caller& c = ws.owners_[i];
      w.str(c.business);
      w.str(c.account);
      w.boolean(c.live);
    }
    w.u64(ws.banks_.size());
    for (std::uint32_t i = 0; i < ws.banks_.size(); ++i) {
      w.str(ws.banks_[i].code);
      w.str(ws.banks_[i].name);
    }
    w.u64(ws.odd_ids_.size());
    for (std::uint32_t i = 0; i < ws.odd_ids_.size(); ++i) w.str(ws.odd_ids_[i]);
    w.u64(ws.by_key_.size());
    for (const auto& [key, wallet] : ws.by_key_) {
      w.u64(key.hi);
      w.u64(key.lo);
      w.u64(wallet.id);
      w.str(wallet.account_name);
      w.u64(wallet.account_number);
      w.i64(wallet.balance.value);
      w.u32(wallet.owner);
      w.u32(wallet.bank);
      w.i64(wallet.debits.day);
      w.i64(wallet.debits.debited.value);
      w.u8(wallet.tier);
    }
    w.u64(ws.by_name_.size());
    for (const auto& [hash, key] : ws.by_name_) {
      w.u64(hash);
      w.u64(key.hi);
      w.u64(key.lo);
    }
    w.u64(ws.by_number_.size());
    for (const auto& [number, key] : ws.by_number_) {
      w.u64(number);
      w.u64(key.hi);
      w.u64(key.lo);
    }
  }

  static void get_wallets(Reader& r, Wallets& ws) {
    // Each interned table is read back at the indexes it was written at: a value it repeats
    // would shift every index after it.
    const std::uint64_t owners = r.count();
    for (std::uint64_t n = owners; n > 0 && !r.failed(); --n) {
      Caller c;
      c.business = r.str();
      c.account = r.str();
      c.live = r.boolean();
      ws.owners_.intern(c);
    }
    const std::uint64_t banks = r.count();
    for (std::uint64_t n = banks; n > 0 && !r.failed(); --n) {
      WalletBank b;
      b.code = r.str();
      b.name = r.str();
      ws.banks_.intern(b);
    }
    const std::uint64_t odd_ids = r.count();
    for (std::uint64_t n = odd_ids; n > 0 && !r.failed(); --n) ws.odd_ids_.intern(r.str());
    if (ws.owners_.size() != owners || ws.banks_.size() != banks || ws.odd_ids_.size() != odd_ids) r.refuse();
    KOBO_ASSERT(r.failed() || (ws.owners_.size() == owners && ws.banks_.size() == banks),
                "interned tables read whole sit at the indexes they were written at");
    const std::uint64_t wallets = r.count();
    ws.by_key_.reserve(wallets);
    for (std::uint64_t n = wallets; n > 0 && !r.failed(); --n) {
      WalletKey key{r.u64(), r.u64()};
      WalletState wallet;
      wallet.id = r.u64();
      wallet.account_name = r.str();
      wallet.account_number = r.u64();
      wallet.balance = Kobo(r.i64());
      wallet.owner = r.u32();
      wallet.bank = r.u32();
      wallet.debits.day = r.i64();
      wallet.debits.debited = Kobo(r.i64());
      wallet.tier = r.u8();
      if (wallet.tier > kKycTiers) r.refuse();
      if (!ws.by_key_.emplace(key, std::move(wallet)).second) r.refuse();  // a wallet is written once
    }
    for (std::uint64_t n = r.count(); n > 0 && !r.failed(); --n) {
      const std::uint64_t hash = r.u64();
      ws.by_name_.emplace(hash, WalletKey{r.u64(), r.u64()});
    }
    const std::uint64_t numbers = r.count();
    ws.by_number_.reserve(numbers);
    for (std::uint64_t n = numbers; n > 0 && !r.failed(); --n) {
      const std::uint64_t number = r.u64();
      if (!ws.by_number_.emplace(number, WalletKey{r.u64(), r.u64()}).second) r.refuse();
    }
    KOBO_ASSERT(r.failed() || (ws.by_key_.size() == wallets && ws.by_number_.size() == numbers),
                "wallets read whole are each written once, with their account numbers");
  }
};

std::string encode_snapshot(const Snapshot& s) {
  KOBO_ASSERT(s.cursors.size() == s.states.size(), "a snapshot's cursors and states disagree");
  for (const PartitionState& state : s.states)
    KOBO_ASSERT(SnapshotCodec::check(state).ok(),
                "the snapshotter's state is consistent at a command boundary");
  Writer w;
  w.bytes().append(kMagic);
  w.u32(kSnapshotFormat);
  w.u32(static_cast<std::uint32_t>(s.states.size()));
  w.u64(s.events);
  for (std::size_t p = 0; p < s.states.size(); ++p) {
    const FollowCursor& c = s.cursors[p];
    w.u64(c.next_offset.value);
    put_chain(w, c.chain);
    w.boolean(c.mid_command);
    SnapshotCodec::put(w, s.states[p]);
  }
  const Sha256 hash = sha256(w.bytes());
  w.bytes().append(reinterpret_cast<const char*>(hash.data()), hash.size());
  KOBO_ASSERT(w.bytes().starts_with(kMagic) && w.bytes().size() > kMagic.size() + kHashSize,
              "a snapshot is its magic, a body and the body's hash");
  return std::move(w.bytes());
}

Result<Snapshot> decode_snapshot(std::string_view bytes, std::uint32_t partitions) {
  if (bytes.size() < kMagic.size() + kHashSize || !bytes.starts_with(kMagic))
    return Status::error("not a snapshot (" + std::to_string(bytes.size()) + " bytes)");
  const std::string_view body = bytes.substr(0, bytes.size() - kHashSize);
  const Sha256 hash = sha256(body);
  if (std::memcmp(hash.data(), bytes.data() + body.size(), kHashSize) != 0)
    return Status::error("its hash does not hold (a torn or corrupt file)");
  Reader r(body.substr(kMagic.size()));
  if (const std::uint32_t format = r.u32(); format != kSnapshotFormat)
    return Status::error("format " + std::to_string(format) + ", this kobo reads format " +
                         std::to_string(kSnapshotFormat));
  if (const std::uint32_t n = r.u32(); n != partitions)
    return Status::error("it has " + std::to_string(n) + " partitions, the log " +
                         std::to_string(partitions));
  Snapshot s;
  s.events = r.u64();
  s.cursors.resize(partitions);
  s.states.resize(partitions);
  for (std::uint32_t p = 0; p < partitions; ++p) {
    FollowCursor& c = s.cursors[p];
    c.next_offset = Offset(r.u64());
    c.chain = get_chain(r);
    c.mid_command = r.boolean();
    if (!SnapshotCodec::get(r, s.states[p]) || s.states[p].partition.value != p)
      return Status::error("partition " + std::to_string(p) + " does not decode");
    if (s.states[p].chain.last_seq() != c.chain.last_seq() ||
        s.states[p].chain.last_hash() != c.chain.last_hash())
      return Status::error("partition " + std::to_string(p) + ": its state and its position disagree");
    if (c.mid_command) return Status::error("partition " + std::to_string(p) + " is inside a command");
    if (auto st = SnapshotCodec::check(s.states[p]); !st)
      return Status::error("partition " + std::to_string(p) + ": " + st.message());
    KOBO_ASSERT(!c.mid_command && s.states[p].chain.last_seq() == c.chain.last_seq(),
                "the writer resumes from a state at a command boundary, at its position");
    KOBO_ASSERT(s.states[p].total.value == 0 && s.states[p].partition.value == p,
                "a state decoded is its partition's, and its balances sum to zero (check())");
  }
  if (r.failed() || !r.at_end()) return Status::error("its body does not decode");
  KOBO_ASSERT(s.cursors.size() == partitions && s.states.size() == partitions, "a state per partition");
  return s;
}

Status write_snapshot(const std::filesystem::path& dir, const Snapshot& s) {
  KOBO_ASSERT(!s.states.empty() && s.cursors.size() == s.states.size(), "a snapshot of every partition");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::error("create " + dir.string() + ": " + ec.message());
  if (auto st = write_file_atomically(snapshot_path(dir, s.events), encode_snapshot(s)); !st) return st;
  const auto all = snapshots_in(dir);
  for (std::size_t i = kKeep; i < all.size(); ++i) std::filesystem::remove(all[i], ec);
  // A snapshot's temporary file that a crash left (write_file_atomically's ".<name>.tmp-…"): only
  // this thread writes snapshots, so any such file is a leftover, as large as a snapshot.
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().filename().string().starts_with(".snapshot-")) std::filesystem::remove(entry.path(), ec);
  return {};
}

namespace {

// Whether `log` holds what the snapshot says it reflects: the head of every partition where its
// cursor says (events/log_follower.h, check_positions).
Status check_position(EventLog& log, const Snapshot& s) {
  KOBO_ASSERT(s.cursors.size() == log.partitions(), "a decoded snapshot has the log's partitions");
  return check_positions(log, s.cursors);
}

}  // namespace

std::optional<Snapshot> load_snapshot(const std::filesystem::path& dir, EventLog& log) {
  for (const auto& path : snapshots_in(dir)) {
    std::ifstream in(path, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    auto s = decode_snapshot(bytes, log.partitions());
    Status why = s ? check_position(log, s.value()) : s.status();
    if (why) {
      KOBO_ASSERT(s.value().states.size() == log.partitions(), "a snapshot used has a state per partition");
      return std::move(s).value();
    }
    log::warn("a snapshot of the writer's state is not used; trying an older one, else the whole log",
              {{"snapshot", path.string()}, {"why", why.message()}});
  }
  return std::nullopt;
}

Status copy_newest_snapshot(const std::filesystem::path& dir, const std::filesystem::path& into) {
  std::error_code ec;
  std::filesystem::create_directories(into, ec);
  if (ec) return Status::error("create " + into.string() + ": " + ec.message());
  const auto all = snapshots_in(dir);
  if (all.empty()) return {};
  const std::filesystem::path to = into / all.front().filename();
  std::filesystem::create_hard_link(all.front(), to, ec);
  if (ec) {
    ec.clear();
    std::filesystem::copy_file(all.front(), to, ec);
  }
  if (ec) return Status::error("copy " + all.front().string() + " to " + to.string() + ": " + ec.message());
  return {};
}

// ---- Snapshotter ---------------------------------------------------------------------------

namespace {

struct SnapshotMetrics {
  metrics::Counter& written =
      metrics::registry().counter("kobo_snapshots_written_total", "Snapshots of the writer's state written");
  metrics::Counter& failures = metrics::registry().counter(
      "kobo_snapshot_failures_total", "Snapshots of the writer's state that could not be written");
};

SnapshotMetrics& snapshot_metrics() {
  static SnapshotMetrics m;
  return m;
}

}  // namespace

Snapshotter::Snapshotter(EventLog& log, History& history, SnapshotterOptions options)
    : log_(log), history_(history), options_(std::move(options)) {
  KOBO_ASSERT(!options_.dir.empty(), "a snapshotter writes into the writer's snapshot directory");
}

Snapshotter::~Snapshotter() { stop(); }

Status Snapshotter::start(Snapshot from, std::uint64_t written_at) {
  KOBO_ASSERT(!thread_.joinable(), "a snapshotter starts once");
  KOBO_ASSERT(from.states.size() == log_.partitions() && written_at <= from.events,
              "a snapshotter starts from the state the writer replayed, past the newest snapshot");
  state_ = std::move(from);
  events_at_last_write_ = written_at;
  follower_ = std::make_unique<LogFollower>(log_);
  if (auto s = follower_->open(state_.cursors); !s) return s;
  thread_ = std::thread([this] { run(); });
  return {};
}

void Snapshotter::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  KOBO_ASSERT(!thread_.joinable(), "a stopped snapshotter holds no thread");
}

bool Snapshotter::index_reaches_state() const {
  KOBO_ASSERT(follower_ != nullptr, "the snapshotter follows the log once started");
  for (std::uint32_t p = 0; p < state_.states.size(); ++p)
    if (history_.indexed_seq(Partition(p)) < follower_->cursor(Partition(p)).chain.last_seq()) return false;
  return true;
}

void Snapshotter::run() {
  name_this_thread("kobo-snapshot");
  class Applier final : public LogVisitor {
   public:
    explicit Applier(Snapshot& s) : s_(s) {}
    Status accepted(const Event& e) override {
      KOBO_ASSERT(e.partition.value < s_.states.size(), "an event of one of the snapshot's partitions");
      apply(s_.states[e.partition.value], e);
      ++s_.events;
      return {};
    }

   private:
    Snapshot& s_;
  } applier(state_);
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, options_.poll, [&] { return stopping_; })) return;
    }
    if (auto s = follower_->follow_to_end(applier); !s) {
      // The writer's log is the writer's concern; snapshots only wait for a log they can read.
      // A log that cannot be reached now (a broker down, a leader moving) is read again at the
      // next poll, from where the follower is; a log the follower refuses ends the snapshots.
      if (s.kind() == ErrorKind::unavailable) {
        if (!log_unreachable_)
          log::warn("snapshots wait: the log cannot be read now", {{"error", s.message()}});
        log_unreachable_ = true;
        continue;
      }
      log::warn("snapshots stopped: the log cannot be followed", {{"error", s.message()}});
      return;
    }
    if (log_unreachable_) log::info("snapshots go on: the log can be read again");
    log_unreachable_ = false;
    if (state_.events - events_at_last_write_ < options_.every_events || follower_->mid_command()) continue;
    // A start uses a snapshot only with an index that covers it (ledger.cc): wait for the writer
    // to have written its facts (it does right after each append), and make them durable first.
    if (!index_reaches_state()) continue;
    if (auto s = history_.sync(); !s) {
      // Like a snapshot that cannot be written: tried again `every_events` later, not every poll.
      events_at_last_write_ = state_.events;
      snapshot_metrics().failures.inc();
      log::warn("a snapshot waits: the history index cannot be flushed", {{"error", s.message()}});
      continue;
    }
    state_.cursors = follower_->cursors();
    KOBO_ASSERT(state_.cursors.size() == state_.states.size(), "a snapshot's cursors and states agree");
    for (std::uint32_t p = 0; p < state_.states.size(); ++p) state_.states[p].chain = state_.cursors[p].chain;
    const Status s = write_snapshot(options_.dir, state_);
    // After a failure too, the next try waits for as many events again: a full disk is not
    // hammered with snapshots every poll, and the log goes on being what restarts rely on.
    events_at_last_write_ = state_.events;
    if (!s) {
      snapshot_metrics().failures.inc();
      log::warn("a snapshot of the writer's state could not be written; the next try is later",
                {{"error", s.message()}});
      continue;
    }
    snapshot_metrics().written.inc();
    log::info("snapshot of the writer's state written", {{"events", state_.events}});
  }
}

}  // namespace kobo
