#pragma once
// What the in-process benchmarks share: a helper that submits commands and waits for all their
// answers, and the businesses with funded wallets they run transfers between.
//
// Not part of the service: linked into bench binaries only.

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "command/ledger.h"

namespace kobo::bench {

// Submits commands and waits for all of their answers; a rejection ends the benchmark.
class Batch {
 public:
  explicit Batch(Ledger& ledger) : ledger_(ledger) {}
  void submit(Command c);
  void wait();

 private:
  Ledger& ledger_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t open_ = 0;
};

struct Business {
  Caller caller;
  std::vector<std::string> wallets;  // publicIds, each funded with 1,000,000,000,000 kobo
};

// Submits every command at once (one group commit when they fit a batch); answers in order.
std::vector<Outcome> execute_all(Ledger& ledger, std::vector<Command> commands);

// A new business; the caller in test mode of its default account (exits on a rejection).
Caller create_business(Ledger& ledger, const std::string& name);

// Creates `businesses` businesses with `wallets` funded wallets each (exits on a rejection).
std::vector<Business> create_funded_wallets(Ledger& ledger, int businesses, int wallets);

// A transfer between two different random wallets of one random business.
WalletTransfer random_transfer(const std::vector<Business>& all, std::mt19937_64& rng, Kobo amount,
                               std::string reference);

// VmRSS of this process in bytes, from /proc/self/status.
std::size_t resident_bytes();

}  // namespace kobo::bench
