#include "tests/simulation/simulation.h"

#include <array>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <vector>

#include "audit/audit.h"
#include "command/ledger.h"
#include "common/crypto.h"
#include "common/log.h"
#include "events/ledger.h"
#include "events/memory_log.h"
#include "projection/projector.h"
#include "projection/views.h"
#include "tests/support/node.h"
#include "tests/support/scratch_dir.h"

namespace kobo::sim {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr std::uint32_t kPartitions = 3;
constexpr int kBusinesses = 3;
constexpr UnixMs kStart = 1'800'000'000'000;  // 2027-01-15, virtual
constexpr std::chrono::milliseconds kRailDelay{500};
constexpr std::int64_t kHuge = 4'000'000'000'000'000'000;  // two of these overflow a balance

// ---- the reference model -----------------------------------------------------------------
// Written from the API document's rules, not from command/: what a careful reader of the
// spec expects each command to do.

enum class Kind { wallet, transit, collection };

struct Wallet {
  std::string id, number, name;
  int business = 0;
  bool live = false;
  Kind kind = Kind::wallet;
  std::int64_t balance = 0;
  std::string settlement;    // transit: where it sweeps
  std::string destination;   // collection: what it pays into
  std::int64_t amount = 0;   // collection: what it accepts
  UnixMs expires_at = 0;     // collection
  bool active = true;        // collection: not yet paid or expired
  std::int64_t held = 0;     // what its pending holds have left: it may spend balance - held
  int tier = 0;              // KYC tier 1..3, 0: none
  std::int64_t day = 0;      // the Lagos day of its last counted debit
  std::int64_t debited = 0;  // that day's counted debits
};

// A hold (extensions section 2): reserves money of its source until captured, voided or expired.
struct Hold {
  std::string id, source;
  int business = 0;
  bool live = false;
  std::int64_t amount = 0, captured = 0;
  UnixMs expires_at = 0;
  bool pending = true;
};

// KYC tier limits (docs/architecture.md, KYC tiers): the CBN's table, per tier 1..3; -1: no cap.
constexpr std::array<std::int64_t, 4> kDailyDebit{0, 5'000'000, 20'000'000, 500'000'000};
constexpr std::array<std::int64_t, 4> kMaxBalance{0, 30'000'000, 50'000'000, -1};
// The calendar day in Africa/Lagos (UTC+1) of a time after 1970.
std::int64_t lagos_day_of(UnixMs t) { return (t + 3'600'000) / 86'400'000; }

struct Payout {
  std::string source;
  std::uint32_t partition = 0;
  std::int64_t amount = 0, fee = 0;
  bool fails = false;
  bool processing = false;
  UnixMs due = 0;  // of its next rail step
  bool done = false;
  bool live = false;  // the sandbox rail moves test payouts only: a live one stays pending
};

enum System { inbound, fees, suspense, outbound };
constexpr std::array<std::string_view, 4> kSystemNames{"sys:inbound-settlement", "sys:fees",
                                                       "sys:payout-suspense", "sys:outbound-settlement"};

std::optional<std::int64_t> add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::int64_t fee_for(std::int64_t amount) {  // CBN NIP tiers, VAT included (API document 3.x)
  if (amount <= 500'000) return 1'075;
  if (amount <= 5'000'000) return 2'688;
  return 5'375;
}

struct Model {
  std::map<std::string, Wallet> wallets;               // by publicId
  std::map<std::string, std::string> by_number;        // account number -> publicId
  std::map<std::string, std::string> references;       // account|mode|reference -> request
  std::map<std::string, std::string> bulk_references;  // account|mode|reference -> the bulk's request
  std::set<std::string> collection_references;         // account|mode|reference
  std::set<std::string> names;                         // account|mode|name of (non-transit) wallets
  std::map<std::string, int> primaries;                // account|mode -> primary wallets
  std::vector<Payout> payouts;
  std::map<std::string, Hold> holds;                   // by publicId
  std::map<std::string, std::string> hold_references;  // account|mode|reference -> request
  std::array<std::array<std::int64_t, 4>, kPartitions> system{};
};

struct Business {
  std::string id, account;
  std::uint32_t partition = 0;
};

std::string scope(const Business& b, bool live) { return scope_key(b.account, live); }

// ---- the run -----------------------------------------------------------------------------

class Simulation {
 public:
  explicit Simulation(const Options& o) : options_(o), rng_(o.seed) {}

  Report run() {
    // The faults it injects are logged as errors by design; only the verdict matters here.
    log::set_min_level(options_.verbose ? log::Level::info : log::Level::error);
    if (!started(node_.start_writer(), "the writer") || !started(node_.start_projector(), "the projector"))
      return report_;
    for (int k = 0; k < kBusinesses; ++k) register_business(k);
    for (step_ = 1; step_ <= options_.steps && report_.failure.empty(); ++step_) step();
    if (report_.failure.empty()) settle();
    if (report_.failure.empty()) check_views();
    if (report_.failure.empty()) check_audit();
    node_.stop();
    report_.log_digest = digest();
    node_.close_views();
    report_.ok = report_.failure.empty();
    return report_;
  }

 private:
  // ---- randomness ----
  std::uint64_t below(std::uint64_t n) {
    return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_);
  }
  bool chance(int percent) { return below(100) < static_cast<std::uint64_t>(percent); }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[below(v.size())];
  }

  // ---- the system under test: a node in process (tests/support/node.h) on the log in memory ----
  testing::NodeOptions node_options() {
    LedgerOptions o;
    o.config.partitions = kPartitions;
    o.config.rail_delay = kRailDelay;
    o.ids = ids_;
    o.clock = [this] { return now_; };
    o.recovery_retry = 0ms;
    // A restart starts from the newest snapshot when there is one. Which one that is depends on
    // the snapshotter's thread, not on the seed: the run must come out the same either way.
    o.snapshot_dir = scratch_ / "snapshots";
    o.snapshot_every_events = 25;
    // The history index on disk, as served: a restart reads it where the crash left it.
    o.history_dir = scratch_ / "history";
    o.snapshot_poll = 5ms;
    return {.partitions = kPartitions, .ledger = o};
  }
  // Whether a part of the node started; else the run fails saying why.
  bool started(const Status& s, const std::string& what) {
    if (!s) fail(what + " cannot start: " + s.message());
    return s.ok();
  }

  Report fail(std::string why) {
    if (report_.failure.empty()) report_.failure = "step " + std::to_string(step_) + ": " + why;
    return report_;
  }

  void trace(const std::string& what) {
    if (options_.verbose)
      std::cerr << "seed " << options_.seed << " step " << step_ << " t+" << (now_ - kStart) << "ms: " << what
                << "\n";
  }

  // Issues a command and then a barrier (a command rejected without events): the writer decides
  // what is due before what is queued, so once the barrier is answered every rail step and
  // expiry due by now has been decided, and the clock may move on.
  Outcome execute(Command c) {
    Outcome o = node_.ledger().execute(std::move(c));
    WalletTransfer barrier;
    barrier.caller = Caller{businesses_[0].id, businesses_[0].account, false};
    barrier.source = "vba-barrier";
    barrier.destination = "vba-barrier";
    barrier.amount = Kobo(1);
    barrier.narration = "barrier";
    const Outcome b = node_.ledger().execute(barrier);
    if (b.rejection != Rejection::source_not_found)
      fail("the barrier was answered " + std::string(to_string(b.rejection)));
    return o;
  }

  // Compares the writer's answer with the model's expectation; true when it is accepted.
  bool expect(const Outcome& o, bool accepted, const std::string& what) {
    trace(what + (accepted ? " -> accept" : " -> reject") + ", got " + std::string(to_string(o.rejection)));
    // A batch whose append fails is answered unavailable as a whole and changes nothing.
    if (injected_ && o.rejection == Rejection::unavailable) {
      if (!o.events.empty()) fail(what + ": an unavailable answer carries events");
      return false;
    }
    if (o.ok() != accepted) {
      fail(what + ": the model expects " + (accepted ? "acceptance" : "a rejection") +
           ", the writer answered " + std::string(to_string(o.rejection)));
      return false;
    }
    accepted ? ++report_.accepted : ++report_.rejected;
    return accepted;
  }

  void register_business(int k) {
    Business b;
    b.id = "biz-sim-" + std::to_string(options_.seed) + "-" + std::to_string(k);
    b.account = "acc-sim-" + std::to_string(options_.seed) + "-" + std::to_string(k);
    b.partition = node_.ledger().partition_of(b.id).value;
    CreateBusiness c{b.id,
                     "Business " + std::to_string(k),
                     b.account,
                     "Default",
                     sha256_hex("test" + b.id),
                     sha256_hex("live" + b.id),
                     "pk_test_" + b.id,
                     "pk_live_" + b.id};
    businesses_.push_back(b);
    const Outcome o = node_.ledger().execute(c);
    if (!o.ok()) fail("a business cannot be registered: " + std::string(to_string(o.rejection)));
  }

  // ---- one step ----
  void step() {
    // Time passes; what fell due happens before the step's command (the writer's rule).
    const std::uint64_t r = below(100);
    if (r < 45)
      now_ += 0;
    else if (r < 88)
      now_ += static_cast<UnixMs>(1 + below(1'000));
    else if (r < 98)
      now_ += static_cast<UnixMs>(below(2 * 3'600'000));
    else
      now_ += 2 * 86'400'000;
    fall_due();

    if (chance(2)) {
      trace("the writer crashes and restarts from the log");
      ++report_.writer_restarts;
      if (!started(node_.restart_writer(), "the writer")) return;
    }
    if (chance(2)) {
      trace("the projector restarts");
      ++report_.projector_restarts;
      if (!started(node_.restart_projector(), "the projector")) return;
    }
    injected_ = chance(3);
    if (injected_) {
      ++report_.failed_appends;
      log_.fail_next_appends(1);
    }
    const std::uint64_t kind = below(100);
    if (kind < 14)
      create_wallet();
    else if (kind < 18)
      create_transit();
    else if (kind < 24)
      create_collection();
    else if (kind < 49)
      incoming_credit();
    else if (kind < 70)
      wallet_transfer();
    else if (kind < 76)
      bulk_transfer();
    else if (kind < 82)
      bank_transfer();
    else if (kind < 89)
      place_hold();
    else if (kind < 93)
      capture_hold();
    else if (kind < 95)
      void_hold();
    else if (kind < 98)
      set_tier();
    else
      update_account();
    if (injected_) {
      // Nothing consumed the fault (a command rejected without events appends nothing).
      log_.fail_next_appends(0);
      injected_ = false;
    }
    after_command();
  }

  void fall_due() {
    for (Payout& p : model_.payouts) {
      if (p.done || p.live || !p.processing || p.due > now_) continue;
      auto& sys = model_.system[p.partition];
      sys[suspense] -= p.amount;
      if (p.fails) {
        sys[fees] -= p.fee;
        model_.wallets.at(p.source).balance += p.amount + p.fee;
      } else {
        sys[outbound] += p.amount;
      }
      p.done = true;
    }
    for (auto& [id, w] : model_.wallets)
      if (w.kind == Kind::collection && w.active && w.expires_at <= now_) w.active = false;
    for (auto& [id, h] : model_.holds)
      if (h.pending && h.expires_at <= now_) end_hold(h);
  }

  // A hold ends: what it has left is released, and no money moves.
  void end_hold(Hold& h) {
    model_.wallets.at(h.source).held -= h.amount - h.captured;
    h.pending = false;
  }

  // The barrier after each command moved every new payout to processing, at this time.
  void after_command() {
    for (Payout& p : model_.payouts)
      if (!p.processing && !p.live) {
        p.processing = true;
        p.due = now_ + kRailDelay.count();
      }
  }

  // A caller: a business and a mode.
  std::pair<const Business*, bool> caller() { return {&businesses_[below(businesses_.size())], chance(30)}; }
  static Caller as_caller(const Business& b, bool live) { return Caller{b.id, b.account, live}; }

  // A wallet id to name in a command: mostly the caller's own wallets (and transit wallets),
  // sometimes anyone's, a collection wallet, or one that does not exist.
  std::string wallet_for(const Business& b, bool live) {
    std::vector<std::string> own, any;
    for (const auto& [id, w] : model_.wallets) {
      any.push_back(id);
      if (w.kind != Kind::collection && businesses_[static_cast<std::size_t>(w.business)].id == b.id &&
          w.live == live)
        own.push_back(id);
    }
    if (!own.empty() && chance(85)) return pick(own);
    if (!any.empty() && chance(80)) return pick(any);
    return "vba-unknown-" + std::to_string(below(3));
  }
  // Whether a counted debit of `amount` from `w` fits its tier's allowance today.
  bool debit_fits(const Wallet& w, std::int64_t amount) const {
    if (w.tier == 0) return true;
    const std::int64_t used = w.day == lagos_day_of(now_) ? w.debited : 0;
    const auto after = add(used, amount);
    return after && *after <= kDailyDebit[static_cast<std::size_t>(w.tier)];
  }
  void count_debit(Wallet& w, std::int64_t amount) const {
    const std::int64_t today = lagos_day_of(now_);
    w.debited = (w.day == today ? w.debited : 0) + amount;
    w.day = today;
  }
  // Whether crediting `w` to `balance_after` stays within its tier's cap.
  static bool credit_fits(const Wallet& w, std::int64_t balance_after) {
    return w.tier == 0 || kMaxBalance[static_cast<std::size_t>(w.tier)] < 0 ||
           balance_after <= kMaxBalance[static_cast<std::size_t>(w.tier)];
  }
  // A tier for a new wallet or a change: mostly none or 1..3, sometimes out of range.
  std::optional<std::uint64_t> tier_for() {
    const std::uint64_t r = below(100);
    if (r < 50) return std::nullopt;
    if (r < 53) return r % 2 == 0 ? 0 : 4;
    return 1 + below(3);
  }
  static bool valid_tier(const std::optional<std::uint64_t>& t) { return !t || (*t >= 1 && *t <= 3); }

  // Wallet `id` of model `m` (the model itself by default) if the caller may move money with it.
  Wallet* callers_wallet(const Business& b, bool live, const std::string& id) {
    return callers_wallet(model_, b, live, id);
  }
  Wallet* callers_wallet(Model& m, const Business& b, bool live, const std::string& id) const {
    auto it = m.wallets.find(id);
    if (it == m.wallets.end() || it->second.kind == Kind::collection) return nullptr;
    if (businesses_[static_cast<std::size_t>(it->second.business)].id != b.id || it->second.live != live)
      return nullptr;
    return &it->second;
  }

  // Whether a wallet transfer fits once its amount and reference are: both wallets the caller's
  // and apart, the source's available balance and day's allowance, the destination's cap.
  bool wallet_transfer_fits(const WalletTransfer& t, const Wallet* src, const Wallet* dst) const {
    return src != nullptr && dst != nullptr && t.source != t.destination &&
           src->balance - src->held >= t.amount.value && debit_fits(*src, t.amount.value) &&
           add(dst->balance, t.amount.value).has_value() && credit_fits(*dst, dst->balance + t.amount.value);
  }
  void settle_wallet_transfer(Wallet& src, Wallet& dst, std::int64_t amount) const {
    src.balance -= amount;
    count_debit(src, amount);
    dst.balance += amount;
  }

  // A bank transfer from `source` to a GTBank account `number`, its amount and the rest to fill.
  BankTransfer payout_to(const Business& b, bool live, std::string source, std::string number) const {
    BankTransfer t;
    t.caller = as_caller(b, live);
    t.source = std::move(source);
    t.account_number = std::move(number);
    t.bank_code = "058";
    // As query-api derives it: one beneficiary id per business, mode, bank and number.
    t.bank_account_id =
        "bka-" + sha256_hex(scope_key(b.id, live) + t.bank_code + t.account_number).substr(0, 32);
    t.account_name = "Ada Obi";
    t.bank_name = "GTBank";
    t.name_enquiry_ref = "ner-sim";
    return t;
  }

  // Whether a bank transfer of `amount` plus `fee` fits: the caller's source, its available
  // balance and day's allowance, and the partition's suspense and fees accounts.
  bool bank_transfer_fits(const Wallet* src, const std::array<std::int64_t, 4>& sys, std::int64_t amount,
                          std::int64_t fee) const {
    const auto actual = add(amount, fee);
    return src != nullptr && actual && add(sys[suspense], amount) && add(sys[fees], fee) &&
           src->balance - src->held >= *actual && debit_fits(*src, *actual);
  }
  void initiate_payout(Model& m, Wallet& src, const std::string& source, std::uint32_t partition,
                       std::int64_t amount, std::int64_t fee, bool fails, bool live) const {
    src.balance -= amount + fee;
    count_debit(src, amount + fee);
    m.system[partition][suspense] += amount;
    m.system[partition][fees] += fee;
    m.payouts.push_back(Payout{source, partition, amount, fee, fails && !live, false, 0, false, live});
  }
  std::int64_t amount_for(std::int64_t balance) {
    const std::uint64_t r = below(100);
    if (r < 4) return -static_cast<std::int64_t>(below(1'000));  // not positive
    if (r < 6) return kHuge;                                     // overflows when it lands twice
    if (r < 20 && balance > 0) return balance;                   // all of it
    if (r < 30) return balance + 1 + static_cast<std::int64_t>(below(10'000));  // more than there is
    if (balance > 1 && r < 80)
      return 1 + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(balance)));
    return 1 + static_cast<std::int64_t>(below(10'000'000));
  }

  void opened(const Outcome& o, Wallet w) {
    w.id = o.id;
    std::visit(
        [&](const auto& x) {
          if constexpr (requires { x.account_number; }) w.number = x.account_number;
        },
        o.events.at(0).data);
    if (w.number.empty()) {
      fail("an opened wallet without an account number");
      return;
    }
    model_.by_number[w.number] = w.id;
    model_.wallets[w.id] = std::move(w);
  }

  void create_wallet() {
    auto [b, live] = caller();
    const std::string name = "w" + std::to_string(below(12));
    const std::string category = chance(3) ? "gold" : chance(35) ? "primary" : "secondary";
    const std::string sc = scope(*b, live);
    const auto tier = tier_for();
    const bool accept = category != "gold" && valid_tier(tier) && !model_.names.contains(sc + name) &&
                        !(category == "primary" && model_.primaries[sc] >= 5);
    const Outcome o =
        execute(CreateWallet{as_caller(*b, live), name, category, std::nullopt, std::nullopt, tier});
    if (!expect(o, accept, "create wallet " + name + " (" + category + ")")) return;
    model_.names.insert(sc + name);
    if (category == "primary") ++model_.primaries[sc];
    Wallet w;
    w.name = name;
    w.business = static_cast<int>(b - businesses_.data());
    w.live = live;
    w.tier = static_cast<int>(tier.value_or(0));
    opened(o, std::move(w));
  }

  void create_transit() {
    auto [b, live] = caller();
    const std::string settlement = wallet_for(*b, live);
    const Wallet* s = callers_wallet(*b, live, settlement);
    const auto tier = tier_for();
    const bool accept = s != nullptr && s->kind == Kind::wallet && valid_tier(tier);
    const Outcome o = execute(
        CreateTransitWallet{as_caller(*b, live), "transit", settlement, std::nullopt, std::nullopt, tier});
    if (!expect(o, accept, "create transit to " + settlement)) return;
    Wallet w;
    w.name = "transit";
    w.business = static_cast<int>(b - businesses_.data());
    w.live = live;
    w.kind = Kind::transit;
    w.settlement = settlement;
    w.tier = static_cast<int>(tier.value_or(0));
    opened(o, std::move(w));
  }

  void create_collection() {
    auto [b, live] = caller();
    CreateCollection c;
    c.caller = as_caller(*b, live);
    c.destination = wallet_for(*b, live);
    c.account_name = "collect";
    c.amount = Kobo(chance(4) ? 0 : 100 + static_cast<std::int64_t>(below(1'000'000)));
    c.expire_in_s = chance(3) ? -1 : static_cast<std::int64_t>(below(7'200));
    if (chance(40)) c.reference = "col-" + std::to_string(below(6));
    const std::string sc = scope(*b, live);
    const bool accept = c.amount.value > 0 && c.expire_in_s >= 0 &&
                        callers_wallet(*b, live, c.destination) != nullptr &&
                        !(c.reference && model_.collection_references.contains(sc + *c.reference));
    const Outcome o = execute(c);
    if (!expect(o, accept, "create collection into " + c.destination)) return;
    if (c.reference) model_.collection_references.insert(sc + *c.reference);
    Wallet w;
    w.name = c.account_name;
    w.business = static_cast<int>(b - businesses_.data());
    w.live = live;
    w.kind = Kind::collection;
    w.destination = c.destination;
    w.amount = c.amount.value;
    w.expires_at = now_ + c.expire_in_s * 1000;
    opened(o, std::move(w));
  }

  void incoming_credit() {
    auto [b, live] = caller();
    std::string number = "9999999999";
    const Wallet* target = nullptr;
    if (!model_.wallets.empty() && chance(95)) {
      const std::string id = wallet_for(*b, live);
      if (auto it = model_.wallets.find(id); it != model_.wallets.end()) {
        target = &it->second;
        number = target->number;
      }
    }
    std::int64_t amount = amount_for(100'000);
    if (target != nullptr && target->kind == Kind::collection && chance(70)) amount = target->amount;
    IncomingCredit c{as_caller(*b, live), number, Kobo(amount), "funding", "Sender",
                     "0000014579",        "058",  "GTBank",     "000013"};

    // Where the money lands: the wallet, or a collection's destination; a transit wallet sweeps.
    auto& sys = model_.system[b->partition];
    bool accept = amount > 0 && add(sys[inbound], -amount).has_value() && target != nullptr &&
                  businesses_[static_cast<std::size_t>(target->business)].id == b->id && target->live == live;
    Wallet* credited = nullptr;
    if (accept && target->kind == Kind::collection) {
      accept = target->active && now_ < target->expires_at && amount == target->amount;
      credited = accept ? &model_.wallets.at(target->destination) : nullptr;
    } else if (accept) {
      credited = &model_.wallets.at(target->id);
    }
    Wallet* lands = credited;
    if (accept && credited->kind == Kind::transit) {
      const auto through = add(credited->balance, amount);
      accept = through.has_value() && credit_fits(*credited, *through);
      lands = &model_.wallets.at(credited->settlement);
    }
    const auto landed = accept ? add(lands->balance, amount) : std::nullopt;
    accept = accept && landed.has_value() && credit_fits(*lands, *landed);
    const Outcome o = execute(c);
    if (!expect(o, accept, "incoming " + std::to_string(amount) + " to " + number)) return;
    sys[inbound] -= amount;
    lands->balance += amount;
    if (target->kind == Kind::collection) model_.wallets.at(target->id).active = false;
  }

  // Idempotency: a reference seen before replays the same request and refuses any other.
  // False when refused; `replay` says whether it is a repeat.
  bool check_reference(const Business& b, bool live, const std::optional<std::string>& reference,
                       const std::string& request, bool& replay) const {
    if (!reference) return true;
    const auto it = model_.references.find(scope(b, live) + *reference);
    if (it == model_.references.end()) return true;
    replay = it->second == request;
    return replay;
  }

  void wallet_transfer() {
    auto [b, live] = caller();
    WalletTransfer t;
    t.caller = as_caller(*b, live);
    t.source = wallet_for(*b, live);
    t.destination = chance(5) ? t.source : wallet_for(*b, live);
    Wallet* src = callers_wallet(*b, live, t.source);
    Wallet* dst = callers_wallet(*b, live, t.destination);
    t.amount = Kobo(amount_for(src != nullptr ? src->balance : 10'000));
    t.narration = chance(50) ? "rent" : "stock";
    if (chance(50)) t.reference = "ref-" + std::to_string(below(8));
    const std::string request =
        "wallet|" + t.source + "|" + t.destination + "|" + std::to_string(t.amount.value) + "|" + t.narration;
    bool replay = false;
    bool accept = t.amount.value > 0 && check_reference(*b, live, t.reference, request, replay);
    if (accept && !replay) accept = wallet_transfer_fits(t, src, dst);
    const Outcome o = execute(t);
    if (!expect(o, accept,
                "transfer " + std::to_string(t.amount.value) + " " + t.source + " -> " + t.destination))
      return;
    if (replay != o.replayed) {
      fail("a repeated reference: the model expects " + std::string(replay ? "a replay" : "a new transfer"));
      return;
    }
    if (replay) return;
    settle_wallet_transfer(*src, *dst, t.amount.value);
    if (t.reference) model_.references[scope(*b, live) + *t.reference] = request;
  }

  void bank_transfer() {
    auto [b, live] = caller();
    std::string source = wallet_for(*b, live);  // drawn before the number, as the seeds expect
    BankTransfer t = payout_to(*b, live, std::move(source), "01234567" + std::to_string(10 + below(3)));
    Wallet* src = callers_wallet(*b, live, t.source);
    t.amount = Kobo(amount_for(src != nullptr ? src->balance : 10'000));
    t.narration = "payout";
    if (chance(50)) t.reference = "ref-" + std::to_string(below(8));
    const bool fails = chance(30);
    t.metadata = RawJson{fails ? R"({"sandboxOutcome":"failed"})" : "{}"};
    t.save_beneficiary = chance(30);
    const std::string request = "bank|" + t.source + "|" + t.account_number + "|" +
                                std::to_string(t.amount.value) + "|" + t.metadata.text +
                                (t.save_beneficiary ? "|save" : "|");
    bool replay = false;
    bool accept = t.amount.value > 0 && check_reference(*b, live, t.reference, request, replay);
    const std::int64_t fee = accept ? fee_for(t.amount.value) : 0;
    if (accept && !replay) accept = bank_transfer_fits(src, model_.system[b->partition], t.amount.value, fee);
    const Outcome o = execute(t);
    if (!expect(o, accept, "bank transfer " + std::to_string(t.amount.value) + " from " + t.source)) return;
    if (replay != o.replayed) {
      fail("a repeated reference: the model expects " + std::string(replay ? "a replay" : "a new payout"));
      return;
    }
    if (replay) return;
    initiate_payout(model_, *src, t.source, b->partition, t.amount.value, fee, fails, live);
    if (t.reference) model_.references[scope(*b, live) + *t.reference] = request;
  }

  void set_tier() {
    auto [b, live] = caller();
    const std::string id = wallet_for(*b, live);
    const auto tier = tier_for();
    Wallet* w = callers_wallet(*b, live, id);
    const Outcome o = execute(SetWalletTier{as_caller(*b, live), id, tier});
    if (!expect(o, w != nullptr && valid_tier(tier), "set tier of " + id)) return;
    w->tier = static_cast<int>(tier.value_or(0));
  }

  // A hold to name in a command: mostly one of the caller's pending holds, else any the model
  // knows (any business's, ended or not), sometimes one that does not exist.
  std::string hold_for(const Business& b, bool live) {
    std::vector<std::string> own;
    for (const auto& [id, h] : model_.holds)
      if (h.pending && businesses_[static_cast<std::size_t>(h.business)].id == b.id && h.live == live)
        own.push_back(id);
    if (!own.empty() && chance(80)) return pick(own);
    if (model_.holds.empty() || chance(10)) return "hld-unknown-" + std::to_string(below(2));
    auto it = model_.holds.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(below(model_.holds.size())));
    return it->first;
  }
  // The model's hold `id` if the caller has it.
  Hold* callers_hold(const Business& b, bool live, const std::string& id) {
    auto it = model_.holds.find(id);
    if (it == model_.holds.end()) return nullptr;
    if (businesses_[static_cast<std::size_t>(it->second.business)].id != b.id || it->second.live != live)
      return nullptr;
    return &it->second;
  }

  void place_hold() {
    auto [b, live] = caller();
    PlaceHold c;
    c.caller = as_caller(*b, live);
    c.source = wallet_for(*b, live);
    Wallet* src = callers_wallet(*b, live, c.source);
    c.amount = Kobo(amount_for(src != nullptr ? src->balance - src->held : 10'000));
    c.reference = "hold-" + std::to_string(below(chance(20) ? 3 : 1'000));  // a few repeat
    if (chance(50)) c.narration = "order";
    c.expires_in_s = chance(3) ? 0 : 1 + static_cast<std::int64_t>(below(chance(25) ? 5 : 86'400));
    const std::string request = c.source + "|" + std::to_string(c.amount.value) + "|" +
                                c.narration.value_or("-") + "|" + std::to_string(c.expires_in_s);
    const std::string key = scope(*b, live) + c.reference;
    bool accept = c.amount.value > 0 && c.expires_in_s >= 1 && c.expires_in_s <= 2'592'000;
    bool replay = false;
    if (accept) {
      if (const auto it = model_.hold_references.find(key); it != model_.hold_references.end()) {
        replay = it->second == request;
        accept = replay;
      }
    }
    if (accept && !replay)
      accept =
          src != nullptr && src->balance - src->held >= c.amount.value && debit_fits(*src, c.amount.value);
    const Outcome o = execute(c);
    if (!expect(o, accept, "hold " + std::to_string(c.amount.value) + " of " + c.source)) return;
    if (replay != o.replayed) {
      fail("a repeated hold reference: the model expects " + std::string(replay ? "a replay" : "a new hold"));
      return;
    }
    if (replay) return;
    model_.hold_references[key] = request;
    src->held += c.amount.value;
    count_debit(*src, c.amount.value);
    model_.holds[o.id] = Hold{o.id,
                              c.source,
                              static_cast<int>(b - businesses_.data()),
                              live,
                              c.amount.value,
                              0,
                              now_ + c.expires_in_s * 1000,
                              true};
  }

  void capture_hold() {
    auto [b, live] = caller();
    CaptureHold c;
    c.caller = as_caller(*b, live);
    c.hold = hold_for(*b, live);
    c.destination = wallet_for(*b, live);
    Hold* h = callers_hold(*b, live, c.hold);
    if (chance(70)) c.amount = Kobo(amount_for(h != nullptr ? h->amount - h->captured : 10'000));
    // The transfers' reference space: sometimes one a transfer used.
    c.reference = "ref-" + std::to_string(chance(30) ? below(8) : 100 + below(1'000));
    if (chance(50)) c.narration = "capture";
    c.final = chance(15);
    const std::string request = "capture|" + c.hold + "|" + c.destination + "|" +
                                (c.amount ? std::to_string(c.amount->value) : "rest") + "|" +
                                c.narration.value_or("-") + (c.final ? "|final" : "|");
    bool replay = false;
    bool accept =
        (!c.amount || c.amount->value > 0) && check_reference(*b, live, c.reference, request, replay);
    Wallet* dst = callers_wallet(*b, live, c.destination);
    const std::int64_t amount = c.amount ? c.amount->value : h != nullptr ? h->amount - h->captured : 0;
    if (accept && !replay)
      accept = h != nullptr && h->pending && now_ < h->expires_at && dst != nullptr &&
               c.destination != h->source && amount <= h->amount - h->captured &&
               add(dst->balance, amount).has_value() && credit_fits(*dst, dst->balance + amount);
    const Outcome o = execute(c);
    if (!expect(o, accept, "capture " + std::to_string(amount) + " of " + c.hold + " to " + c.destination))
      return;
    if (replay != o.replayed) {
      fail("a repeated capture reference: the model expects " +
           std::string(replay ? "a replay" : "a capture"));
      return;
    }
    if (replay) return;
    Wallet& src = model_.wallets.at(h->source);
    src.balance -= amount;
    src.held -= amount;
    dst->balance += amount;
    h->captured += amount;
    if (c.final || h->captured == h->amount) end_hold(*h);
    model_.references[scope(*b, live) + c.reference] = request;
  }

  void void_hold() {
    auto [b, live] = caller();
    const std::string id = hold_for(*b, live);
    Hold* h = callers_hold(*b, live, id);
    const bool accept = h != nullptr && h->pending && now_ < h->expires_at;
    const Outcome o = execute(VoidHold{as_caller(*b, live), id});
    if (!expect(o, accept, "void " + id)) return;
    end_hold(*h);
  }

  // A bulk transfer (extensions section 5): its items in order, each as a single transfer would
  // be decided after the ones before it, except that an item's reference used before (by anyone,
  // this bulk's earlier items included) refuses it. Atomic: all or none; else each on its own.
  void bulk_transfer() {
    // Not a structured binding: the items' lambda below uses both, and clang 14 cannot capture one.
    const auto picked = caller();
    const Business* const b = picked.first;
    const bool live = picked.second;
    BulkTransfer bulk;
    bulk.caller = as_caller(*b, live);
    bulk.atomic = chance(50);
    bulk.reference = "blkref-" + std::to_string(below(6));
    std::string request = bulk.atomic ? "atomic" : "each";
    const std::size_t n = 1 + below(chance(10) ? 40 : 6);
    struct Expected {
      bool bank = false;
      std::int64_t fee = 0;
      bool fails = false;
    };
    std::vector<Expected> shape;
    for (std::size_t i = 0; i < n; ++i) {
      std::optional<std::string> reference;
      if (chance(40)) reference = "ref-" + std::to_string(below(12));
      const std::string source = wallet_for(*b, live);
      const Wallet* src = callers_wallet(*b, live, source);
      const std::int64_t amount = amount_for(src != nullptr ? src->balance / 2 : 10'000);
      if (chance(70)) {
        WalletTransfer t;
        t.caller = bulk.caller;
        t.source = source;
        t.destination = chance(5) ? source : wallet_for(*b, live);
        t.amount = Kobo(amount);
        t.narration = "payroll";
        t.reference = reference;
        request += "|w:" + t.source + ">" + t.destination + ":" + std::to_string(amount) + ":" +
                   reference.value_or("-");
        bulk.items.push_back(BulkItem{t});
        shape.push_back({});
      } else {
        BankTransfer t = payout_to(*b, live, source, "0123456710");
        t.amount = Kobo(amount);
        t.narration = "vendor";
        t.reference = reference;
        const bool fails = chance(30);
        t.metadata = RawJson{fails ? R"({"sandboxOutcome":"failed"})" : "{}"};
        request += "|b:" + t.source + ":" + std::to_string(amount) + ":" + t.metadata.text + ":" +
                   reference.value_or("-");
        bulk.items.push_back(BulkItem{t});
        shape.push_back({true, 0, fails});
      }
    }
    const std::string sc = scope(*b, live);
    const auto used = model_.bulk_references.find(sc + bulk.reference);
    const bool replay = used != model_.bulk_references.end() && used->second == request;
    const bool conflict = used != model_.bulk_references.end() && !replay;

    // The model decides the items in order on a copy; the copy is kept when the bulk is accepted.
    Model after = model_;
    std::vector<std::size_t> refused;
    for (std::size_t i = 0; i < n && !replay && !conflict; ++i) {
      bool ok = false;
      std::visit(
          [&](const auto& t) {
            using T = std::decay_t<decltype(t)>;
            Wallet* src = callers_wallet(after, *b, live, t.source);
            const bool fresh = !t.reference || !after.references.contains(sc + *t.reference);
            if constexpr (std::is_same_v<T, WalletTransfer>) {
              Wallet* dst = callers_wallet(after, *b, live, t.destination);
              ok = t.amount.value > 0 && fresh && wallet_transfer_fits(t, src, dst);
              if (!ok) return;
              settle_wallet_transfer(*src, *dst, t.amount.value);
            } else {
              const std::int64_t fee = t.amount.value > 0 ? fee_for(t.amount.value) : 0;
              ok = t.amount.value > 0 && fresh &&
                   bank_transfer_fits(src, after.system[b->partition], t.amount.value, fee);
              if (!ok) return;
              initiate_payout(after, *src, t.source, b->partition, t.amount.value, fee, shape[i].fails, live);
            }
            if (t.reference) after.references[sc + *t.reference] = "bulk item";
          },
          bulk.items[i].transfer);
      if (!ok) {
        refused.push_back(i);
        if (bulk.atomic) break;
      }
    }
    const bool accept = !conflict && (replay || !bulk.atomic || refused.empty());
    const Outcome o = execute(bulk);
    const std::string what = std::string(bulk.atomic ? "atomic" : "non-atomic") + " bulk " + bulk.reference +
                             " of " + std::to_string(n);
    if (!expect(o, accept, what)) {
      if (!report_.failure.empty() || o.rejection == Rejection::unavailable) return;
      if (conflict && o.rejection != Rejection::duplicate_reference)
        fail(what + ": a reused bulk reference is refused as a duplicate");
      if (!conflict && (!o.item || *o.item != refused.at(0)))
        fail(what + ": the model refuses item " + std::to_string(refused.at(0)) + ", the writer " +
             (o.item ? std::to_string(*o.item) : std::string("none")));
      return;
    }
    if (replay != o.replayed) {
      fail(what + ": the model expects " + std::string(replay ? "a replay" : "a new bulk"));
      return;
    }
    if (replay) return;
    const auto* decided = std::get_if<BulkTransferAccepted>(&o.events.at(0).data);
    if (decided == nullptr) {
      fail(what + ": a bulk's first event is not its BulkTransferAccepted");
      return;
    }
    std::vector<std::size_t> writer_refused;
    for (const auto& r : decided->rejected) writer_refused.push_back(r.index);
    if (writer_refused != refused) {
      fail(what + ": the model and the writer refuse different items");
      return;
    }
    model_ = std::move(after);
    model_.bulk_references[sc + bulk.reference] = request;
  }

  void update_account() {
    auto [b, live] = caller();
    const Business& whose = businesses_[below(businesses_.size())];
    UpdateAccount u{as_caller(*b, live), whose.account, std::nullopt, std::nullopt, std::nullopt};
    if (chance(50))
      u.live = chance(50);
    else if (chance(50))
      u.webhooks = std::vector<std::string>{"https://hooks.example.com/" + std::to_string(below(3))};
    else if (chance(50))
      u.webhook_events = std::vector<std::string>{"account.debit"};
    else {
      // A webhook secret's rotation: of an account of the caller's business only.
      const Outcome o = execute(RotateWebhookSecret{as_caller(*b, live), whose.account});
      expect(o, whose.id == b->id, "rotate the webhook secret of " + whose.account);
      return;
    }
    const Outcome o = execute(u);
    expect(o, whose.id == b->id, "update account " + whose.account);
  }

  // ---- the end ----
  // Lets every payout and collection reach its end, then waits for the projector.
  void settle() {
    for (int i = 0; i < 3 && report_.failure.empty(); ++i) {
      now_ += 3 * 86'400'000;
      fall_due();
      const WalletTransfer nothing{Caller{businesses_[0].id, businesses_[0].account, false},
                                   "vba-none",
                                   "vba-none",
                                   Kobo(1),
                                   "settle",
                                   std::nullopt,
                                   std::nullopt};
      execute(nothing);
      after_command();
    }
    for (std::uint32_t p = 0; p < kPartitions; ++p)
      if (!node_.projector().wait_applied(Partition(p), node_.ledger().durable_seq(Partition(p)), 30s))
        fail("the projector did not catch up with partition " + std::to_string(p));
  }

  void check_views() {
    for (const auto& [id, w] : model_.wallets) {
      if (w.kind == Kind::collection) continue;
      const Business& b = businesses_[static_cast<std::size_t>(w.business)];
      const auto text = node_.views().wallet_text(Scope{b.id, w.live}, id).value();
      if (!text) {
        fail("the views lack wallet " + id);
        return;
      }
      const json record = json::parse(*text);
      const auto shown = record.at("balance").get<std::int64_t>();
      if (shown != w.balance) {
        fail("wallet " + id + ": the views show " + std::to_string(shown) + ", the model " +
             std::to_string(w.balance));
        return;
      }
      if (record.at("heldBalance") != w.held || record.at("availableBalance") != w.balance - w.held) {
        fail("wallet " + id + ": the views hold " + record.at("heldBalance").dump() + ", the model " +
             std::to_string(w.held));
        return;
      }
    }
    for (const auto& [id, h] : model_.holds) {
      const Business& b = businesses_[static_cast<std::size_t>(h.business)];
      const auto text = node_.views().hold_text(Scope{b.id, h.live}, id).value();
      if (!text) {
        fail("the views lack hold " + id);
        return;
      }
      const json record = json::parse(*text);
      if (record.at("capturedAmount") != h.captured || (record.at("status") == "pending") != h.pending) {
        fail("hold " + id + ": the views show " + *text + ", the model captured " +
             std::to_string(h.captured) + (h.pending ? ", pending" : ", ended"));
        return;
      }
    }
  }

  void check_audit() {
    auto report = audit::audit_log(log_);
    if (!report) {
      fail("the audit cannot read the log: " + report.status().message());
      return;
    }
    if (auto s = audit::audit_views(log_, node_.views(), scratch_ / "rebuild", report.value()); !s) {
      fail("the views cannot be audited: " + s.message());
      return;
    }
    if (!report.value().clean()) {
      fail("the audit reports:\n" + audit::summary(report.value(), 5));
      return;
    }
    report_.events = report.value().events;
    for (int a = inbound; a <= outbound; ++a) {
      std::optional<std::int64_t> expected = 0;
      for (const auto& sys : model_.system)
        if (expected) expected = add(*expected, sys[static_cast<std::size_t>(a)]);
      if (!expected) continue;  // beyond the range of kobo: the audit notes it and stops summing
      const auto it = report.value().system.find(std::string(kSystemNames[static_cast<std::size_t>(a)]));
      const std::int64_t found = it == report.value().system.end() ? 0 : it->second.value;
      if (found != *expected) {
        fail(std::string(kSystemNames[static_cast<std::size_t>(a)]) + ": the log says " +
             std::to_string(found) + ", the model " + std::to_string(*expected));
        return;
      }
    }
  }

  std::string digest() {
    auto ends = log_.end_offsets();
    auto reader = log_.open_reader(std::vector<Offset>(kPartitions, Offset(0)));
    if (!ends || !reader) return "unreadable";
    std::string all;
    std::vector<LogRecord> records;
    for (int idle = 0; idle < 3;) {
      records.clear();
      if (!reader.value()->poll(4096, 0ms, records)) return "unreadable";
      if (records.empty()) ++idle;
      for (const auto& r : records) {
        all += std::to_string(r.partition.value) + ":" + r.bytes + "\n";
      }
    }
    return sha256_hex(all);
  }

  const Options options_;
  std::mt19937_64 rng_;
  std::shared_ptr<IdSource> ids_ = std::make_shared<SeededIds>(options_.seed);
  UnixMs now_ = kStart;
  int step_ = 0;
  bool injected_ = false;
  std::vector<Business> businesses_;
  Model model_;
  // Last: they use what is above (ids_, now_), and go first.
  testing::ScratchDir scratch_{"sim-" + std::to_string(options_.seed)};
  testing::Node node_{scratch_.path(), node_options()};
  MemoryLog& log_ = node_.memory_log();
  Report report_;
};

}  // namespace

Report run(const Options& options) { return Simulation(options).run(); }

std::string summary(const Options& options, const Report& r) {
  std::ostringstream out;
  out << "sim seed " << options.seed << ": " << (r.ok ? "ok" : "FAILED") << ", " << r.accepted
      << " accepted, " << r.rejected << " rejected, " << r.failed_appends << " failed appends, "
      << r.writer_restarts << " writer restarts, " << r.projector_restarts << " projector restarts, "
      << r.events << " events, log " << r.log_digest.substr(0, 16);
  if (!r.ok)
    out << "\n  " << r.failure << "\n  reproduce: build/tests/kobo_sim --seed " << options.seed << " --steps "
        << options.steps << " --verbose";
  return out.str();
}

}  // namespace kobo::sim
