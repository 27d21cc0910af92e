#include "command/state.h"

#include "common/assert.h"

using nlohmann::json;

namespace kobo {

Kobo PartitionState::balance_of(std::string_view ledger_account) const {
  if (auto w = wallets.find(std::string(ledger_account)); w != wallets.end()) return w->second.balance;
  if (auto s = system_balances.find(std::string(ledger_account)); s != system_balances.end()) return s->second;
  return Kobo(0);
}

std::string scope_key(std::string_view account, bool live) {
  std::string k(account);
  k += live ? "|l|" : "|t|";
  return k;
}

std::int64_t interleaved_id(std::uint64_t n, Partition p, std::uint32_t partitions) {
  return static_cast<std::int64_t>(n * partitions + p.value + 1);
}

namespace {

void post(PartitionState& s, const Event& e, Kobo delta) {
  const std::string account = e.data.at("ledgerAccount").get<std::string>();
  Kobo* balance = nullptr;
  if (auto w = s.wallets.find(account); w != s.wallets.end()) {
    balance = &w->second.balance;
  } else {
    KOBO_ASSERT(account.starts_with("sys:"), "posting to an unknown ledger account");
    balance = &s.system_balances[account];
  }
  *balance += delta;
  s.total += delta;
  KOBO_ASSERT(balance->value == e.data.at("balance").get<std::int64_t>(),
              "event balance disagrees with the replayed balance");
  if (account.starts_with("vba-")) KOBO_ASSERT(balance->value >= 0, "wallet balance below zero");
}

void record_transaction(PartitionState& s, const nlohmann::json& data) {
  const auto& trx = data.at("transaction");
  ++s.transactions_created;
  if (trx.value("entry", "") == "debit" && trx.at("destinationType") == "VirtualAccount" &&
      trx.at("status") == "pending")
    s.pending_settlement.emplace(trx.at("publicId").get<std::string>(), trx.at("destination").get<std::string>());
  if (trx.value("entry", "") == "debit" && trx.at("destinationType") == "BankAccount") {
    PayoutState p;
    p.source = trx.at("source").get<std::string>();
    p.amount = Kobo(trx.at("amount").get<std::int64_t>());
    p.fee = Kobo(trx.at("fee").get<std::int64_t>());
    p.updated_at = parse_iso8601(trx.at("createdAt").get<std::string>()).value_or(0);
    p.sandbox_fails = trx.value("/metadata/sandboxOutcome"_json_pointer, json()) == "failed";
    p.business = trx.at("auth").get<std::string>();
    p.live = trx.at("live").get<bool>();
    p.reference = trx.at("reference").get<std::string>();
    p.link_ref = trx.at("linkRef").get<std::string>();
    p.narration = trx.at("narration").get<std::string>();
    p.beneficiary = trx.at("destinationData");
    s.payouts.emplace(trx.at("publicId").get<std::string>(), std::move(p));
  }
  const auto& ref = trx.find("reference");
  if (trx.value("entry", "") == "debit" && ref != trx.end() && ref->is_string()) {
    const std::string key = scope_key(trx.at("account").get<std::string>(), trx.at("live").get<bool>()) +
                            ref->get<std::string>();
    s.references[key] = ReferenceState{data.value("fingerprint", std::string()),
                                       trx.at("publicId").get<std::string>()};
  }
}

}  // namespace

void apply(PartitionState& s, const Event& e) {
  const auto& d = e.data;
  switch (e.type) {
    case EventType::writer_started:
      break;
    case EventType::business_created:
      s.businesses.insert(d.at("business").at("publicId").get<std::string>());
      break;
    case EventType::account_created: {
      const auto& a = d.at("account");
      s.account_business[a.at("publicId").get<std::string>()] = a.at("business").get<std::string>();
      ++s.accounts_created;
      break;
    }
    case EventType::account_updated:
      KOBO_ASSERT(s.account_business.contains(d.at("accountId").get<std::string>()), "update of an unknown account");
      break;
    case EventType::bank_account_added:
      KOBO_ASSERT(s.bank_accounts
                      .emplace(d.at("bankAccount").at("publicId").get<std::string>(),
                               d.at("bankAccount").at("id").get<std::int64_t>())
                      .second,
                  "bank account added twice");
      ++s.bank_accounts_created;
      break;
    case EventType::collection_created: {
      const auto& c = d.at("collection");
      CollectionState cs;
      cs.public_id = c.at("publicId").get<std::string>();
      cs.destination = c.at("destination").get<std::string>();
      cs.amount = Kobo(c.at("amount").get<std::int64_t>());
      cs.expires_at = parse_iso8601(c.at("expiration").get<std::string>()).value_or(0);
      cs.business = c.at("auth").get<std::string>();
      cs.account = c.at("account").get<std::string>();
      cs.live = c.at("live").get<bool>();
      const std::string number = c.at("accountNumber").get<std::string>();
      if (c.at("reference").is_string())
        s.collection_references.insert(scope_key(cs.account, cs.live) + c.at("reference").get<std::string>());
      KOBO_ASSERT(!s.wallet_by_number.contains(number), "collection account number reused");
      s.collection_numbers.emplace(cs.public_id, number);
      KOBO_ASSERT(s.collections.emplace(number, std::move(cs)).second, "collection account number reused");
      ++s.account_numbers_issued;
      break;
    }
    case EventType::collection_status_changed: {
      const auto number = s.collection_numbers.find(d.at("publicId").get<std::string>());
      KOBO_ASSERT(number != s.collection_numbers.end(), "status change of an unknown collection wallet");
      auto& c = s.collections.at(number->second);
      KOBO_ASSERT(c.active && d.at("from") == "pending", "a collection wallet is paid or expires once");
      c.active = false;
      break;
    }
    case EventType::wallet_created: {
      const auto& w = d.at("wallet");
      WalletState ws;
      ws.business = w.at("auth").get<std::string>();
      ws.account = w.at("account").get<std::string>();
      ws.live = w.at("live").get<bool>();
      ws.primary = w.value("category", "") == "primary";
      ws.id = w.at("id").get<std::int64_t>();
      ws.account_name = w.at("accountName").get<std::string>();
      ws.account_number = w.at("accountNumber").get<std::string>();
      const std::string scope = scope_key(ws.account, ws.live);
      const std::string id = w.at("publicId").get<std::string>();
      if (w.contains("settlementAccount")) {
        ws.settlement = w.at("settlementAccount").get<std::string>();  // transit: no name or category rules
      } else {
        KOBO_ASSERT(s.wallet_names.insert(scope + ws.account_name).second, "wallet name reused");
        if (ws.primary) ++s.primary_wallets[scope];
      }
      KOBO_ASSERT(s.wallet_by_number.emplace(ws.account_number, id).second, "account number reused");
      KOBO_ASSERT(s.wallets.emplace(id, std::move(ws)).second, "wallet id reused");
      ++s.wallets_created;
      ++s.account_numbers_issued;
      break;
    }
    case EventType::debited:
      post(s, e, -Kobo(d.at("amount").get<std::int64_t>()));
      if (d.contains("transaction")) record_transaction(s, d);
      break;
    case EventType::credited:
      post(s, e, Kobo(d.at("amount").get<std::int64_t>()));
      if (d.contains("transaction")) record_transaction(s, d);
      break;
    case EventType::transaction_status_changed: {
      const std::string id = d.at("publicId").get<std::string>();
      s.pending_settlement.erase(id);
      if (auto p = s.payouts.find(id); p != s.payouts.end()) {
        KOBO_ASSERT(p->second.status == d.at("from"), "payout moved from a status it was not in");
        const std::string to = d.at("status").get<std::string>();
        if (to == "success" || to == "failed") {
          s.payouts.erase(p);
        } else {
          p->second.status = to;
          p->second.updated_at = parse_iso8601(d.at("updatedAt").get<std::string>()).value_or(0);
        }
      }
      break;
    }
  }
  if (e.last_of_command()) KOBO_ASSERT(s.total.value == 0, "partition balances do not sum to zero");
}

}  // namespace kobo
