#include "audit/model.h"

#include <cstring>
#include <optional>

#include "command/state.h"
#include "common/crypto.h"
#include "common/time.h"
#include "events/partitioner.h"

namespace kobo::audit {

using nlohmann::json;

namespace {

// 128 bits of SHA-256 stand in for long keys (references, transaction ids) held for the whole
// audit: a fraction of the memory, and no collision in any log that fits on a disk.
struct Key {
  std::uint64_t hi = 0, lo = 0;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  std::size_t operator()(const Key& k) const noexcept { return static_cast<std::size_t>(k.hi ^ k.lo); }
};

Key key16(std::string_view a, std::string_view b = {}) {
  const Sha256 d = sha256(a, b);
  Key k;
  std::memcpy(&k.hi, d.data(), sizeof k.hi);
  std::memcpy(&k.lo, d.data() + sizeof k.hi, sizeof k.lo);
  return k;
}

// A transaction's status; the legal moves are to a higher rank: pending -> processing ->
// success | failed, and nothing out of success or failed.
enum class TrxStatus : std::uint8_t { pending, processing, success, failed };

std::optional<TrxStatus> parse_status(const json& v) {
  if (!v.is_string()) return std::nullopt;
  const auto& s = v.get_ref<const std::string&>();
  if (s == "pending") return TrxStatus::pending;
  if (s == "processing") return TrxStatus::processing;
  if (s == "success") return TrxStatus::success;
  if (s == "failed") return TrxStatus::failed;
  return std::nullopt;
}

int rank(TrxStatus s) {
  switch (s) {
    case TrxStatus::pending: return 0;
    case TrxStatus::processing: return 1;
    case TrxStatus::success:
    case TrxStatus::failed: return 2;
  }
  return 2;
}

std::string scope(std::string_view account, bool live) {
  std::string k(account);
  k += live ? "|l|" : "|t|";
  return k;
}

std::string mode(bool live) { return live ? "live" : "test"; }

bool is_hex64(const json& v) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool is_digits(const json& v, std::size_t size = 0) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  if (s.empty() || (size != 0 && s.size() != size)) return false;
  return s.find_first_not_of("0123456789") == std::string::npos;
}

bool is_time(const json& v) { return v.is_string() && parse_iso8601(v.get_ref<const std::string&>()).has_value(); }

std::string str(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string kobo_text(Kobo k) { return std::to_string(k.value) + " kobo"; }

// The seq of a record that does not decode, when its JSON still says one.
std::optional<Seq> peek_seq(std::string_view bytes) {
  const json j = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("seq") && j["seq"].is_number_unsigned()) return Seq(j["seq"].get<std::uint64_t>());
  return std::nullopt;
}

}  // namespace

struct LogAuditor::Leg {
  Seq seq{0};
  bool debit = false;
  std::string account;
  Kobo amount;
  // The transaction record the posting carries, if any: what the cross-checks of a command need.
  bool has_trx = false;
  bool to_bank = false;   // a debit whose destination is a bank account: a payout
  bool reversal = false;  // a credit tagged "reversal": a failed payout's money coming back
  Key trx_key;
  std::string trx_id, link_ref, source, destination, reference, debit_reference;
  Kobo trx_amount, trx_fee, trx_balance;
  std::optional<Kobo> mirror_amount, mirror_balance;  // meta.credit: the other side as this one saw it
};

struct LogAuditor::Model {
  struct Wallet {
    std::string business, account;
    bool live = false;
    Kobo balance;
    bool below_zero = false;
  };
  struct Trx {
    TrxStatus status = TrxStatus::pending;
    const std::string* business = nullptr;  // interned in `names`
    Seq seq{0};
  };
  // A debit to a bank account, kept until the end for its settlement or its reversal.
  struct Payout {
    std::string id, link_ref, source, reference;
    Kobo amount, fee;
    int reversals = 0;
  };
  struct StatusMove {
    Key trx_key;
    std::string id;
    TrxStatus to = TrxStatus::pending;
    Seq seq{0};
  };

  Partition partition{0};
  Epoch epoch{0};
  std::unordered_set<std::string> businesses;
  std::unordered_set<std::string> names;
  std::unordered_map<std::string, std::string> accounts;  // acc-… -> biz-…
  std::unordered_map<std::string, Wallet> wallets;        // vba-… -> wallet
  std::unordered_set<std::string> account_numbers, wallet_names;
  std::unordered_set<std::uint64_t> wallet_ids, transaction_ids;
  std::unordered_map<std::string, Kobo> system;           // sys:… (and unknown accounts, reported)
  std::unordered_map<Key, Trx, KeyHash> transactions;      // key16(publicId)
  std::unordered_map<Key, Seq, KeyHash> references;        // key16(account|mode|, reference) -> first use
  std::unordered_set<Key, KeyHash> link_refs;              // key16(linkRef) of finished commands
  std::unordered_map<Key, Payout, KeyHash> payouts;        // key16(publicId) of the debit
  std::unordered_map<Key, Key, KeyHash> payout_by_link;    // key16(linkRef) -> key16(publicId)
  std::unordered_set<std::string> bank_accounts;
  std::unordered_set<std::uint64_t> bank_account_ids;
  Kobo total;           // the sum of every balance in the partition
  Kobo total_reported;  // the total after the last command: a lasting imbalance is reported once

  // The command being read.
  bool open = false;
  Seq first{0};
  std::uint32_t size = 0, seen = 0;
  Seq last{0};
  std::string business;
  bool live = false;
  Kobo sum;
  std::vector<Leg> legs;
  std::vector<StatusMove> moves;
};

LogAuditor::LogAuditor(std::uint32_t partitions, AuditReport& report) : partitions_(partitions), report_(report) {
  for (std::uint32_t p = 0; p < partitions; ++p) {
    models_.push_back(std::make_unique<Model>());
    models_.back()->partition = Partition(p);
  }
}

LogAuditor::~LogAuditor() = default;

void LogAuditor::violation(Check check, Partition p, Seq seq, std::string reason) {
  report_.add(Violation{check, p, seq, std::nullopt, {}, std::move(reason)});
}

void LogAuditor::violation(Check check, const Event& e, std::string reason) {
  violation(check, e.partition, e.seq, std::move(reason));
}

Disposition LogAuditor::refused(const RefusedRecord& r) {
  const std::string at = "partition " + std::to_string(r.partition.value) + " offset " + std::to_string(r.offset.value);
  switch (r.verdict) {
    case ChainVerdict::duplicate:
      ++report_.duplicates;
      return Disposition::skip;
    case ChainVerdict::zombie:
      ++report_.zombies;
      report_.note(at + " seq " + std::to_string(r.event->seq.value) + ": skipped an event of epoch " +
                   std::to_string(r.event->epoch.value) + " from a fenced writer");
      return Disposition::skip;
    case ChainVerdict::accept:
    case ChainVerdict::broken:
      break;
  }
  auto chain_violation = [&](std::optional<Seq> seq, std::string reason) {
    report_.add(Violation{Check::chain, r.partition, seq, r.offset, {}, std::move(reason)});
  };
  if (r.event == nullptr) {
    chain_violation(peek_seq(r.bytes), "the record cannot be read: " + r.problem);
    return Disposition::skip;
  }
  const Event& e = *r.event;
  const ChainFollower& head = *r.chain;
  const std::string seq = "seq " + std::to_string(e.seq.value);
  if (!r.problem.empty()) {
    chain_violation(e.seq, r.problem == "hash mismatch"
                               ? seq + ": its hash does not match its contents (the event was edited)"
                               : seq + ": " + r.problem);
    if (e.partition != r.partition) return Disposition::skip;
  }
  const std::uint64_t expected = head.last_seq().value + 1;
  if (e.seq.value == expected) {
    if (e.prev_hash != head.last_hash()) {
      chain_violation(e.seq, seq + ": prevHash is not the hash of seq " + std::to_string(expected - 1) +
                                 " (an event before it was edited, or this one was inserted or replaced)");
    } else if (r.problem.empty()) {
      report_.add(Violation{Check::epoch, r.partition, e.seq, r.offset, {},
                            e.epoch < head.epoch()
                                ? seq + ": epoch " + std::to_string(e.epoch.value) + " is older than its writer's epoch " +
                                      std::to_string(head.epoch().value)
                                : seq + ": WriterStarted does not raise the epoch"});
    }
    return Disposition::adopt;
  }
  if (e.seq.value > expected) {
    const std::uint64_t missing_last = e.seq.value - 1;
    std::string what = missing_last == expected
                           ? "seq " + std::to_string(expected) + " is missing"
                           : "seqs " + std::to_string(expected) + ".." + std::to_string(missing_last) + " are missing";
    report_.add(Violation{Check::chain, r.partition, Seq(expected), r.offset, {},
                          what + " (" + seq + " follows seq " + std::to_string(expected - 1) + ")"});
    return Disposition::adopt;
  }
  chain_violation(e.seq, seq + " comes after seq " + std::to_string(expected - 1) +
                             " (out of order, or a second, different event with that seq)");
  return Disposition::skip;
}

Status LogAuditor::accepted(const Event& e) {
  KOBO_ASSERT(e.partition.value < partitions_, "the follower checks the partition");
  Model& m = *models_[e.partition.value];
  begin_command(m, e);
  try {
    apply(m, e);
  } catch (const json::exception& ex) {
    violation(Check::record, e, "malformed " + std::string(to_string(e.type)) + " data: " + ex.what());
  }
  if (e.last_of_command()) end_command(m, m.seen == m.size);
  return {};
}

void LogAuditor::begin_command(Model& m, const Event& e) {
  if (m.open && e.command_seq != m.first) {
    violation(Check::command, m.partition, m.first,
              "the command at seq " + std::to_string(m.first.value) + " ends after " + std::to_string(m.seen) +
                  " of its " + std::to_string(m.size) + " events");
    end_command(m, false);
  }
  if (!m.open) {
    m.open = true;
    m.first = e.command_seq;
    m.size = e.command_size;
    m.seen = 0;
    m.business = e.business;
    m.live = e.live;
    m.sum = Kobo(0);
    m.legs.clear();
    m.moves.clear();
    if (e.seq != e.command_seq)
      violation(Check::command, e, "the first events of its command (from seq " + std::to_string(e.command_seq.value) +
                                       ") are missing");
  } else {
    if (e.command_size != m.size) violation(Check::command, e, "its commandSize differs from the rest of its command");
    if (e.business != m.business || e.live != m.live)
      violation(Check::command, e, "its business or mode differs from the rest of its command");
  }
  ++m.seen;
  m.last = e.seq;
}

void LogAuditor::end_command(Model& m, bool complete) {
  ++report_.commands;
  if (complete && m.sum.value != 0)
    violation(Check::double_entry, m.partition, m.first,
              "the postings of the command at seq " + std::to_string(m.first.value) + " sum to " + kobo_text(m.sum) +
                  ", not zero");
  check_legs(m);
  // Reported when the partition goes out of balance, not again while it stays out.
  if (m.total.value != 0 && m.total_reported.value == 0)
    violation(Check::double_entry, m.partition, m.last,
              "the partition's balances sum to " + kobo_text(m.total) + " after the command at seq " +
                  std::to_string(m.first.value));
  m.total_reported = m.total;
  m.open = false;
  m.legs.clear();
  m.moves.clear();
}

// The legs of one command against each other: a wallet transfer's debit and credit (joined by
// linkRef), a payout's debit and its suspense and fee legs, a payout's settlement or reversal.
void LogAuditor::check_legs(Model& m) {
  auto system_posting = [&](bool debit, std::string_view account, Kobo amount) {
    for (const Leg& l : m.legs)
      if (!l.has_trx && l.debit == debit && l.account == account && l.amount == amount) return true;
    return false;
  };

  std::unordered_map<std::string, std::vector<const Leg*>> by_link;
  for (const Leg& l : m.legs)
    if (l.has_trx) by_link[l.link_ref].push_back(&l);
  for (const auto& [link, legs] : by_link) {
    const Leg* debit = nullptr;
    const Leg* credit = nullptr;
    int debits = 0, credits = 0;
    for (const Leg* l : legs) {
      if (l->debit) {
        ++debits;
        debit = l;
      } else {
        ++credits;
        credit = l;
      }
    }
    const bool reversal = credits == 1 && debits == 0 && credit->reversal;
    if (!m.link_refs.insert(key16(link)).second && !reversal)
      violation(Check::transfer, m.partition, legs.front()->seq, "linkRef " + link + " was used by an earlier command");
    if (debits > 1 || credits > 1) {
      violation(Check::transfer, m.partition, legs.front()->seq,
                std::to_string(legs.size()) + " transactions of one command share linkRef " + link);
      continue;
    }
    if (debit != nullptr && debit->to_bank) {
      // A payout: the amount goes to payout suspense and the fee to the fee account, at once.
      if (credit != nullptr)
        violation(Check::transfer, m.partition, credit->seq, "a payout's linkRef " + link + " on a credit of its command");
      if (!system_posting(false, kPayoutSuspense, debit->trx_amount))
        violation(Check::transfer, m.partition, debit->seq,
                  "payout " + debit->trx_id + ": no credit of its amount to " + std::string(kPayoutSuspense));
      if (debit->trx_fee.value > 0 && !system_posting(false, kFeeAccount, debit->trx_fee))
        violation(Check::transfer, m.partition, debit->seq,
                  "payout " + debit->trx_id + ": no credit of its fee to " + std::string(kFeeAccount));
      m.payout_by_link.emplace(key16(link), debit->trx_key);
      m.payouts.emplace(debit->trx_key, Model::Payout{debit->trx_id, link, debit->source, debit->reference,
                                                      debit->trx_amount, debit->trx_fee, 0});
      continue;
    }
    if (debit == nullptr || credit == nullptr) continue;  // one-sided: its other leg is a system account
    auto disagree = [&](const std::string& what) {
      violation(Check::transfer, m.partition, credit->seq,
                "the debit " + debit->trx_id + " (seq " + std::to_string(debit->seq.value) + ") and the credit " +
                    credit->trx_id + " of linkRef " + link + " disagree on " + what);
    };
    if (debit->trx_amount != credit->trx_amount) disagree("the amount");
    if (debit->trx_fee.value != 0 || credit->trx_fee.value != 0) disagree("the fee (a wallet transfer is free)");
    if (debit->source != credit->source) disagree("the source");
    if (debit->destination != credit->destination) disagree("the destination");
    if (credit->debit_reference != debit->reference) disagree("the reference (the credit's debitReference)");
    if (debit->mirror_amount != credit->trx_amount || debit->mirror_balance != credit->trx_balance)
      disagree("the credit side (the debit's meta.credit)");
    if (credit->mirror_amount != debit->trx_amount || credit->mirror_balance != debit->trx_balance)
      disagree("the debit side (the credit's meta.credit)");
  }

  // Reversals: each one gives a failed payout of this command its money back, once.
  std::unordered_map<Key, int, KeyHash> reversed;  // payout key -> reversals in this command
  for (const Leg& l : m.legs) {
    if (!l.has_trx || !l.reversal) continue;
    const auto link = m.payout_by_link.find(key16(l.link_ref));
    const auto payout = link == m.payout_by_link.end() ? m.payouts.end() : m.payouts.find(link->second);
    if (payout == m.payouts.end()) {
      violation(Check::transfer, m.partition, l.seq, "reversal " + l.trx_id + " of linkRef " + l.link_ref +
                                                          ", which is no payout's");
      continue;
    }
    Model::Payout& p = payout->second;
    const auto t = m.transactions.find(payout->first);
    if (t == m.transactions.end() || t->second.status != TrxStatus::failed)
      violation(Check::transfer, m.partition, l.seq, "reversal " + l.trx_id + " of payout " + p.id + ", which has not failed");
    if (l.trx_amount != p.amount + p.fee || l.destination != p.source || l.debit_reference != p.reference)
      violation(Check::transfer, m.partition, l.seq,
                "reversal " + l.trx_id + " does not give payout " + p.id + "'s amount and fee back to its source");
    if (++p.reversals > 1) violation(Check::transfer, m.partition, l.seq, "payout " + p.id + " is reversed again");
    ++reversed[payout->first];
  }

  // A payout that settles moves its amount out of suspense; one that fails is reversed, at once.
  for (const Model::StatusMove& move : m.moves) {
    const auto payout = m.payouts.find(move.trx_key);
    if (payout == m.payouts.end()) continue;
    const Model::Payout& p = payout->second;
    if ((move.to == TrxStatus::success || move.to == TrxStatus::failed) &&
        !system_posting(true, kPayoutSuspense, p.amount))
      violation(Check::transfer, m.partition, move.seq,
                "payout " + p.id + " settles without taking its amount out of " + std::string(kPayoutSuspense));
    if (move.to == TrxStatus::failed) {
      if (p.fee.value > 0 && !system_posting(true, kFeeAccount, p.fee))
        violation(Check::transfer, m.partition, move.seq, "failed payout " + p.id + ": its fee is not refunded");
      if (reversed[move.trx_key] != 1)
        violation(Check::transfer, m.partition, move.seq,
                  "failed payout " + p.id + " is reversed " + std::to_string(reversed[move.trx_key]) +
                      " times in its command, not once");
    }
  }
}

void LogAuditor::apply(Model& m, const Event& e) {
  const json& d = e.data;

  if (e.type == EventType::writer_started) {
    if (!e.business.empty()) violation(Check::record, e, "WriterStarted names a business");
    if (e.command_size != 1) violation(Check::command, e, "WriterStarted is not a command of its own");
    if (d.at("epoch").get<std::uint64_t>() != e.epoch.value)
      violation(Check::epoch, e, "WriterStarted's data.epoch differs from its envelope's epoch");
    if (e.epoch.value != m.epoch.value + 1)
      violation(Check::epoch, e, "WriterStarted moves the epoch from " + std::to_string(m.epoch.value) + " to " +
                                     std::to_string(e.epoch.value) + ", not to the next one");
    m.epoch = e.epoch;
    return;
  }
  if (m.epoch.value == 0) violation(Check::epoch, e, "an event before any WriterStarted");
  else if (e.epoch != m.epoch)
    violation(Check::epoch, e, "epoch " + std::to_string(e.epoch.value) + ", but the partition's writer has epoch " +
                                   std::to_string(m.epoch.value));
  if (e.type != EventType::business_created && !m.businesses.contains(e.business))
    violation(Check::record, e, "business '" + e.business + "' does not exist in this partition");
  auto owned = [&](const std::string& account) {
    const auto a = m.accounts.find(account);
    return a != m.accounts.end() && a->second == e.business;
  };

  switch (e.type) {
    case EventType::writer_started:
      break;
    case EventType::business_created: {
      const std::string id = d.at("business").at("publicId").get<std::string>();
      if (id != e.business) violation(Check::record, e, "creates business " + id + " in an event of " + e.business);
      if (!id.starts_with("biz-")) violation(Check::record, e, "business id " + id + " is not biz-…");
      if (partition_for(id, partitions_) != m.partition)
        violation(Check::record, e, "business " + id + " belongs in partition " +
                                        std::to_string(partition_for(id, partitions_).value));
      if (!m.businesses.insert(id).second) violation(Check::record, e, "business " + id + " is created again");
      break;
    }
    case EventType::account_created: {
      const json& a = d.at("account");
      const std::string id = a.at("publicId").get<std::string>();
      if (!id.starts_with("acc-")) violation(Check::record, e, "account id " + id + " is not acc-…");
      if (a.at("business") != e.business) violation(Check::record, e, "account " + id + " of another business");
      if (!is_digits(a.at("id"))) violation(Check::record, e, "account " + id + ": id is not a decimal string");
      if (!a.at("__v").is_number_integer()) violation(Check::record, e, "account " + id + ": __v is not an integer");
      if (!is_hex64(d.at("secretKeyHashes").at("test")) || !is_hex64(d.at("secretKeyHashes").at("live")))
        violation(Check::record, e, "account " + id + ": secretKeyHashes are not SHA-256 hex");
      if (!m.accounts.emplace(id, e.business).second) violation(Check::record, e, "account " + id + " is created again");
      break;
    }
    case EventType::account_updated: {
      const std::string id = d.at("accountId").get<std::string>();
      if (!owned(id)) violation(Check::record, e, "updates account " + id + ", which its business does not have");
      if (!d.at("changes").is_object()) violation(Check::record, e, "account update without an object of changes");
      if (!is_time(d.at("updatedAt"))) violation(Check::record, e, "account update with a bad updatedAt");
      break;
    }
    case EventType::wallet_created: {
      const json& w = d.at("wallet");
      const std::string id = w.at("publicId").get<std::string>();
      Model::Wallet wallet;
      wallet.business = w.at("auth").get<std::string>();
      wallet.account = w.at("account").get<std::string>();
      wallet.live = w.at("live").get<bool>();
      const std::string name = w.at("accountName").get<std::string>();
      auto bad = [&](const std::string& why) { violation(Check::record, e, "wallet " + id + ": " + why); };
      if (!id.starts_with("vba-")) bad("id is not vba-…");
      if (wallet.business != e.business || wallet.live != e.live) bad("of another business or mode than its event");
      if (!owned(wallet.account)) bad("account " + wallet.account + " is not an account of its business");
      if (w.at("balance") != 0) bad("created with a balance");
      // Transit collection wallets have no category and no unique name (spec 2.2).
      const bool transit = w.contains("settlementAccount");
      if (!transit && w.at("category") != "primary" && w.at("category") != "secondary")
        bad("category " + str(w.at("category")));
      if (!is_digits(w.at("accountNumber"), 10)) bad("account number " + str(w.at("accountNumber")));
      else if (!m.account_numbers.insert(w.at("accountNumber").get<std::string>()).second)
        bad("account number " + str(w.at("accountNumber")) + " is already taken");
      if (!w.at("id").is_number_unsigned()) bad("id is not a positive integer");
      else if (!m.wallet_ids.insert(w.at("id").get<std::uint64_t>()).second) bad("id " + str(w.at("id")) + " is already taken");
      if (!transit && !m.wallet_names.insert(scope(wallet.account, wallet.live) + name).second)
        bad("name '" + name + "' is already taken in its account and mode");
      for (const char* t : {"createdAt", "updatedAt"})
        if (!is_time(w.at(t))) bad(std::string("bad ") + t);
      if (!m.wallets.emplace(id, std::move(wallet)).second) bad("created again");
      break;
    }
    case EventType::bank_account_added: {
      const json& b = d.at("bankAccount");
      const std::string id = b.at("publicId").get<std::string>();
      auto bad = [&](const std::string& why) { violation(Check::record, e, "bank account " + id + ": " + why); };
      if (!id.starts_with("bka-")) bad("id is not bka-…");
      if (b.at("auth") != e.business || b.at("live") != e.live) bad("of another business or mode than its event");
      if (!owned(b.at("account").get<std::string>())) bad("its account is not an account of its business");
      if (!b.at("id").is_number_unsigned()) bad("id is not a positive integer");
      else if (!m.bank_account_ids.insert(b.at("id").get<std::uint64_t>()).second) bad("id " + str(b.at("id")) + " is already taken");
      if (!m.bank_accounts.insert(id).second) bad("added again");
      break;
    }
    case EventType::collection_created: {
      // A collection wallet holds no money (payments credit its destination); its account
      // number must still be unique.
      const json& c = d.at("collection");
      const std::string id = c.at("publicId").get<std::string>();
      if (!is_digits(c.at("accountNumber"), 10) ||
          !m.account_numbers.insert(c.at("accountNumber").get<std::string>()).second)
        violation(Check::record, e, "collection wallet " + id + ": account number " + str(c.at("accountNumber")));
      if (c.at("auth") != e.business || c.at("live") != e.live)
        violation(Check::record, e, "collection wallet " + id + ": of another business or mode than its event");
      break;
    }
    case EventType::collection_status_changed:
      break;
    case EventType::debited:
      post(m, e, /*debit=*/true);
      break;
    case EventType::credited:
      post(m, e, /*debit=*/false);
      break;
    case EventType::transaction_status_changed:
      change_status(m, e);
      break;
  }
}

void LogAuditor::post(Model& m, const Event& e, bool debit) {
  const json& d = e.data;
  const std::string account = d.at("ledgerAccount").get<std::string>();
  const Kobo amount(d.at("amount").get<std::int64_t>());
  const Kobo stated(d.at("balance").get<std::int64_t>());
  if (!d.at("amount").is_number_integer() || amount.value <= 0)
    violation(Check::double_entry, e, "posting of " + d.at("amount").dump() + " kobo: amounts are positive integers");

  Kobo* balance = nullptr;
  Model::Wallet* wallet = nullptr;
  if (account.starts_with("vba-")) {
    if (auto w = m.wallets.find(account); w != m.wallets.end()) {
      wallet = &w->second;
      balance = &wallet->balance;
      if (wallet->business != e.business || wallet->live != e.live)
        violation(Check::record, e, "posts to wallet " + account + " of another business or mode");
    } else {
      violation(Check::balance, e, "posts to wallet " + account + ", which this partition does not have");
    }
  } else if (!account.starts_with("sys:")) {
    violation(Check::balance, e, "posts to " + account + ", which is neither a wallet nor a system account");
  }
  if (balance == nullptr) balance = &m.system[account];

  const Kobo delta = debit ? -amount : amount;
  *balance += delta;
  m.total += delta;
  m.sum += delta;
  if (*balance != stated) {
    violation(Check::balance, e, account + " is at " + kobo_text(*balance) + " after this posting, the event says " +
                                     kobo_text(stated));
    // Take the log's word from here on, so one wrong posting is reported once.
    m.total += stated - *balance;
    *balance = stated;
  }
  if (wallet != nullptr) {
    if (balance->value < 0 && !wallet->below_zero)
      violation(Check::negative, e, "wallet " + account + " falls to " + kobo_text(*balance));
    wallet->below_zero = balance->value < 0;
  }

  Leg leg;
  leg.seq = e.seq;
  leg.debit = debit;
  leg.account = account;
  leg.amount = amount;
  if (d.contains("transaction")) check_transaction(m, e, leg, d.at("transaction"));
  m.legs.push_back(std::move(leg));
}

void LogAuditor::check_transaction(Model& m, const Event& e, Leg& leg, const json& t) {
  const std::string id = t.at("publicId").get<std::string>();
  auto bad = [&](Check c, const std::string& why) { violation(c, e, "transaction " + id + ": " + why); };
  if (!id.starts_with("trx-")) bad(Check::record, "id is not trx-…");
  if (t.at("auth") != e.business || t.at("live") != e.live) bad(Check::record, "of another business or mode than its event");
  const std::string account = t.at("account").get<std::string>();
  if (const auto a = m.accounts.find(account); a == m.accounts.end() || a->second != e.business)
    bad(Check::record, "account " + account + " is not an account of its business");
  if (t.at("entry") != (leg.debit ? "debit" : "credit"))
    bad(Check::transfer, "entry " + str(t.at("entry")) + " on a " + (leg.debit ? "debit" : "credit") + " posting");
  const auto status = parse_status(t.at("status"));
  if (!status) bad(Check::status, "unknown status " + str(t.at("status")));
  for (const char* f : {"createdAt", "updatedAt"})
    if (!is_time(t.at(f))) bad(Check::record, std::string("bad ") + f);
  if (!t.at("id").is_number_unsigned()) bad(Check::record, "id is not a positive integer");
  else if (!m.transaction_ids.insert(t.at("id").get<std::uint64_t>()).second)
    bad(Check::record, "id " + t.at("id").dump() + " is already taken");

  leg.has_trx = true;
  leg.trx_id = id;
  leg.trx_key = key16(id);
  leg.trx_amount = Kobo(t.at("amount").get<std::int64_t>());
  leg.trx_fee = Kobo(t.at("fee").get<std::int64_t>());
  leg.trx_balance = Kobo(t.at("balance").get<std::int64_t>());
  const Kobo actual(t.at("actualAmount").get<std::int64_t>());
  leg.link_ref = t.at("linkRef").get<std::string>();
  leg.source = str(t.at("source"));
  leg.destination = str(t.at("destination"));
  leg.reference = t.at("reference").get<std::string>();
  leg.debit_reference = str(t.at("debitReference"));
  leg.to_bank = leg.debit && t.at("destinationType") == "BankAccount";
  if (const auto tags = t.find("tags"); tags != t.end() && tags->is_array())
    for (const json& tag : *tags)
      if (tag == "reversal") leg.reversal = !leg.debit;
  if (const auto meta = t.find("meta"); meta != t.end() && meta->contains("credit")) {
    const json& c = meta->at("credit");
    if (c.contains("amount") && c.at("amount").is_number_integer()) leg.mirror_amount = Kobo(c.at("amount").get<std::int64_t>());
    if (c.contains("balance") && c.at("balance").is_number_integer())
      leg.mirror_balance = Kobo(c.at("balance").get<std::int64_t>());
  }

  if (leg.trx_amount.value <= 0 || leg.trx_fee.value < 0) bad(Check::transfer, "amount or fee out of range");
  if (actual != leg.trx_amount + leg.trx_fee) bad(Check::transfer, "actualAmount is not amount + fee");
  if (leg.trx_balance != Kobo(e.data.at("balance").get<std::int64_t>()))
    bad(Check::transfer, "balance differs from its posting's");
  // A debit takes amount + fee from the source; a credit gives the amount to the destination.
  if (leg.debit && leg.amount != actual) bad(Check::transfer, "debits " + kobo_text(leg.amount) + ", not its actualAmount");
  if (!leg.debit && leg.amount != leg.trx_amount)
    bad(Check::transfer, "credits " + kobo_text(leg.amount) + ", not its amount");
  if (leg.debit && leg.source != leg.account) bad(Check::transfer, "its source is not the debited account " + leg.account);
  if (!leg.debit && leg.destination != leg.account)
    bad(Check::transfer, "its destination is not the credited account " + leg.account);
  if (leg.reference.empty()) bad(Check::reference, "empty reference");

  const auto [ref, fresh] = m.references.emplace(key16(scope(account, e.live), leg.reference), e.seq);
  if (!fresh)
    bad(Check::reference, "reference '" + leg.reference + "' of account " + account + " (" + mode(e.live) +
                              ") was already used at seq " + std::to_string(ref->second.value));
  Model::Trx trx;
  trx.status = status.value_or(TrxStatus::pending);
  trx.business = &*m.names.insert(e.business).first;
  trx.seq = e.seq;
  if (const auto [it, inserted] = m.transactions.emplace(leg.trx_key, trx); !inserted)
    bad(Check::record, "id already used at seq " + std::to_string(it->second.seq.value));
  else
    ++report_.transactions;
}

void LogAuditor::change_status(Model& m, const Event& e) {
  const json& d = e.data;
  const std::string id = d.at("publicId").get<std::string>();
  const auto from = parse_status(d.at("from"));
  const auto to = parse_status(d.at("status"));
  if (!is_time(d.at("updatedAt"))) violation(Check::record, e, "status change of " + id + " with a bad updatedAt");
  const Key key = key16(id);
  const auto it = m.transactions.find(key);
  if (it == m.transactions.end()) {
    violation(Check::status, e, "status change of " + id + ", which this partition does not have");
    return;
  }
  Model::Trx& trx = it->second;
  if (*trx.business != e.business) violation(Check::record, e, "status change of " + id + " of another business");
  if (!from || !to) {
    violation(Check::status, e, "status change of " + id + " between unknown statuses");
    return;
  }
  if (*from != trx.status)
    violation(Check::status, e, "status change of " + id + " from " + str(d.at("from")) + ", but it is not in that status");
  if (rank(*to) <= rank(trx.status))
    violation(Check::status, e, "status of " + id + " moves back or out of a final status, to " + str(d.at("status")));
  trx.status = *to;
  m.moves.push_back(Model::StatusMove{key, id, *to, e.seq});
}

void LogAuditor::finish() {
  for (auto& mp : models_) {
    Model& m = *mp;
    if (m.open) {
      violation(Check::command, m.partition, m.first,
                "the log ends inside the command at seq " + std::to_string(m.first.value) + " (" +
                    std::to_string(m.seen) + " of its " + std::to_string(m.size) + " events)");
      end_command(m, false);
    }
    report_.businesses += m.businesses.size();
    report_.accounts += m.accounts.size();
    report_.wallets += m.wallets.size();
    for (const auto& [id, w] : m.wallets) (w.live ? report_.wallets_live : report_.wallets_test) += w.balance;
    for (const auto& [account, balance] : m.system)
      if (account.starts_with("sys:")) report_.system[account] += balance;
  }
}

}  // namespace kobo::audit
