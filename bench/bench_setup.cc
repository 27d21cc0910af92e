#include "bench/bench_setup.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>

#include "common/crypto.h"

namespace kobo::bench {

void Batch::submit(Command c) {
  {
    std::lock_guard lock(mu_);
    ++open_;
  }
  ledger_.submit(std::move(c), [this](Outcome o) {
    if (!o.ok() && !o.replayed) {
      std::fprintf(stderr, "command rejected: %s %s\n", std::string(to_string(o.rejection)).c_str(),
                   o.detail.c_str());
      std::exit(2);
    }
    std::lock_guard lock(mu_);
    if (--open_ == 0) cv_.notify_all();
  });
}

void Batch::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return open_ == 0; });
}

namespace {

void must(const Outcome& o, const char* what) {
  if (o.ok()) return;
  std::fprintf(stderr, "%s: %s\n", what, std::string(to_string(o.rejection)).c_str());
  std::exit(2);
}

}  // namespace

std::vector<Outcome> execute_all(Ledger& ledger, std::vector<Command> commands) {
  std::vector<std::promise<Outcome>> promises(commands.size());
  std::vector<Outcome> out;
  for (std::size_t i = 0; i < commands.size(); ++i)
    ledger.submit(std::move(commands[i]), [&promises, i](Outcome o) { promises[i].set_value(std::move(o)); });
  for (auto& p : promises) out.push_back(p.get_future().get());
  return out;
}

Caller create_business(Ledger& ledger, const std::string& name) {
  const std::string biz = "biz-" + uuid_v4(), acc = "acc-" + uuid_v4();
  must(ledger.execute(CreateBusiness{biz, name, acc, "Default", sha256_hex("t" + biz), sha256_hex("l" + biz),
                                     "pk_test_" + biz, "pk_live_" + biz}),
       "create a business");
  return Caller{biz, acc, false};
}

std::vector<Business> create_funded_wallets(Ledger& ledger, int businesses, int wallets) {
  std::vector<Business> all;
  for (int b = 0; b < businesses; ++b) {
    Business business{create_business(ledger, "Bench " + std::to_string(b)), {}};
    std::vector<Command> create, fund;
    for (int w = 0; w < wallets; ++w)
      create.emplace_back(CreateWallet{business.caller, "wallet " + std::to_string(w), "secondary", {}, {}});
    for (const Outcome& c : execute_all(ledger, std::move(create))) {
      must(c, "create a wallet");
      business.wallets.push_back(c.id);
      const auto& opened = std::get<WalletOpened>(c.events.at(0).data);
      fund.emplace_back(IncomingCredit{business.caller, opened.account_number, Kobo(1'000'000'000'000),
                                       "funding", "Ada Obi", "0123456784", "044", "Access Bank", "000014"});
    }
    for (const Outcome& f : execute_all(ledger, std::move(fund))) must(f, "fund a wallet");
    all.push_back(std::move(business));
  }
  return all;
}

WalletTransfer random_transfer(const std::vector<Business>& all, std::mt19937_64& rng, Kobo amount,
                               std::string reference) {
  const Business& b = all[rng() % all.size()];
  const std::size_t from = rng() % b.wallets.size();
  const std::size_t to = (from + 1 + rng() % (b.wallets.size() - 1)) % b.wallets.size();
  WalletTransfer t;
  t.caller = b.caller;
  t.source = b.wallets[from];
  t.destination = b.wallets[to];
  t.amount = amount;
  t.narration = "bench";
  t.reference = std::move(reference);
  return t;
}

std::size_t resident_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
  return 0;
}

}  // namespace kobo::bench
