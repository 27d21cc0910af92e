// No double spend under concurrency (guarantee 1, docs/architecture.md section 6) and idempotency under
// concurrent retries (guarantee 4), through the real server with many clients at once.

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

class Concurrency : public ServerSuite {
 protected:
  std::int64_t sum_of_balances(const std::vector<json>& wallets) {
    std::int64_t sum = 0;
    for (const json& w : wallets) sum += balance_of(http(), key(), w["publicId"]);
    return sum;
  }
};

struct Outcome {
  unsigned status = 0;  // 0: no answer
  std::string message;
  std::string error;  // the client's exception, when no answer
};

TEST_F(Concurrency, ParallelTransfersFromOneWalletNeverOverdrawIt) {
  const std::uint64_t seed = test_seed("Concurrency.ParallelTransfersFromOneWalletNeverOverdrawIt");
  std::mt19937_64 rng(seed);
  const std::int64_t amount = 10'000 + static_cast<std::int64_t>(rng() % 90'000);
  const int affordable = 40 + static_cast<int>(rng() % 40);  // N
  const std::int64_t partial = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(amount));
  const int requests = 200;
  const int threads = 8;
  std::cout << "amount=" << amount << " N=" << affordable << " partial=" << partial << std::endl;

  json source = create_wallet(http(), key());
  std::vector<json> destinations;
  for (int i = 0; i < 5; ++i) destinations.push_back(create_wallet(http(), key()));
  const std::int64_t funded = affordable * amount + partial;
  fund(http(), key(), source, funded);
  std::vector<json> everyone = destinations;
  everyone.push_back(source);
  ASSERT_EQ(sum_of_balances(everyone), funded);

  std::vector<Outcome> outcomes(requests);
  std::atomic<int> next{0};
  std::atomic<bool> go{false}, done{false};
  std::atomic<std::int64_t> lowest_seen{funded};
  const std::string run = unique_name("conc");

  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      auto client = server().new_client();
      while (!go.load()) std::this_thread::yield();
      for (int i = next.fetch_add(1); i < requests; i = next.fetch_add(1)) {
        const json& dst = destinations[static_cast<std::size_t>(i + t) % destinations.size()];
        json body = transfer_body(source["publicId"], dst["publicId"], amount, run + "-" + std::to_string(i));
        try {
          HttpResult res = client->post("/v1/transactions/transfer", body, key());
          outcomes[static_cast<std::size_t>(i)].status = res.status;
          if (res.json.is_object() && res.json["meta"].contains("error")) {
            outcomes[static_cast<std::size_t>(i)].message = res.json["meta"]["error"].value("message", "");
          }
        } catch (const std::exception& e) {
          outcomes[static_cast<std::size_t>(i)].error = e.what();
        }
      }
    });
  }
  // A reader watching the source's balance the whole time: it must never go below zero.
  std::thread watcher([&] {
    auto client = server().new_client();
    while (!done.load()) {
      HttpResult res = client->get("/v1/virtual-accounts/" + source["publicId"].get<std::string>(), key());
      if (res.status == 200) {
        std::int64_t b = res.json["data"]["balance"].get<std::int64_t>();
        std::int64_t seen = lowest_seen.load();
        while (b < seen && !lowest_seen.compare_exchange_weak(seen, b)) {
        }
      }
    }
  });
  go = true;
  for (auto& th : pool) th.join();
  done = true;
  watcher.join();

  int ok = 0, insufficient = 0;
  for (int i = 0; i < requests; ++i) {
    const Outcome& o = outcomes[static_cast<std::size_t>(i)];
    if (o.status == 200) {
      ++ok;
    } else if (o.status == 403 && o.message == "Insufficient fund") {
      ++insufficient;
    } else {
      ADD_FAILURE() << "request " << i << ": status " << o.status << " message '" << o.message << "' error '"
                    << o.error << "'";
    }
  }
  EXPECT_EQ(ok, affordable);
  EXPECT_EQ(insufficient, requests - affordable);
  EXPECT_GE(lowest_seen.load(), 0);
  EXPECT_EQ(balance_of(http(), key(), source["publicId"]), partial);

  // Once every debit has settled, the money is all in the destinations.
  ASSERT_TRUE(wait_until([&] { return sum_of_balances(destinations) == affordable * amount; }))
      << "destinations hold " << sum_of_balances(destinations) << ", want " << affordable * amount;
  EXPECT_EQ(sum_of_balances(everyone), funded);
  int debits = 0;
  for (const json& t : list_all(http(), key(), "/v1/transactions", "entry=debit")) {
    if (t["source"] == source["publicId"]) {
      ++debits;
      EXPECT_GE(t["balance"].get<std::int64_t>(), 0);
    }
  }
  EXPECT_EQ(debits, affordable);
}

TEST_F(Concurrency, TransfersBackAndForthConserveTheTotal) {
  const std::uint64_t seed = test_seed("Concurrency.TransfersBackAndForthConserveTheTotal");
  std::vector<json> wallets;
  for (int i = 0; i < 4; ++i) {
    wallets.push_back(create_wallet(http(), key()));
    fund(http(), key(), wallets.back(), 300'000);
  }
  const std::int64_t total = 4 * 300'000;
  const std::string run = unique_name("mesh");
  std::atomic<int> unexpected{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 6; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937_64 rng(seed + static_cast<std::uint64_t>(t));
      auto client = server().new_client();
      for (int i = 0; i < 30; ++i) {
        std::size_t a = rng() % wallets.size(), b = (a + 1 + rng() % (wallets.size() - 1)) % wallets.size();
        json body = transfer_body(wallets[a]["publicId"], wallets[b]["publicId"],
                                  10'000 + static_cast<std::int64_t>(rng() % 50'000),
                                  run + "-" + std::to_string(t) + "-" + std::to_string(i));
        HttpResult res = client->post("/v1/transactions/transfer", body, key());
        if (res.status != 200 && res.status != 403) {
          ++unexpected;
          std::cerr << "unexpected " << res.status << " " << res.body << "\n";
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(unexpected.load(), 0);
  ASSERT_TRUE(
      wait_until([&] { return total_count(http(), key(), "/v1/transactions", "status=pending") == 0; }));
  EXPECT_EQ(sum_of_balances(wallets), total);
  for (const json& w : wallets) EXPECT_GE(balance_of(http(), key(), w["publicId"]), 0);
}

TEST_F(Concurrency, ConcurrentRetriesOfOneReferenceMoveMoneyOnce) {
  json source = create_wallet(http(), key()), destination = create_wallet(http(), key());
  fund(http(), key(), source, 1'000'000);
  const std::string ref = unique_name("retry");
  const json body = transfer_body(source["publicId"], destination["publicId"], 70'000, ref);
  const int threads = 8, per_thread = 5;
  std::mutex mu;
  std::vector<HttpResult> answers;
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      auto client = server().new_client();
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < per_thread; ++i) {
        HttpResult res = client->post("/v1/transactions/transfer", body, key());
        std::lock_guard lock(mu);
        answers.push_back(std::move(res));
      }
    });
  }
  go = true;
  for (auto& th : pool) th.join();

  int fresh = 0, replayed = 0;
  std::set<std::string> public_ids;
  for (const HttpResult& res : answers) {
    ASSERT_EQ(res.status, 200u) << res.body;
    (res.header("idempotent-replayed") == "true" ? replayed : fresh)++;
    public_ids.insert(res.json["data"]["publicId"].get<std::string>());
  }
  EXPECT_EQ(fresh, 1) << "exactly one answer is the original, the rest are replays";
  EXPECT_EQ(replayed, threads * per_thread - 1);
  EXPECT_EQ(public_ids.size(), 1u) << "every answer is the same transaction";
  wait_settled(http(), key(), ref);
  EXPECT_EQ(balance_of(http(), key(), source["publicId"]), 930'000);
  EXPECT_EQ(balance_of(http(), key(), destination["publicId"]), 70'000);
}

TEST_F(Concurrency, ParallelWalletCreationsWithOneNameCreateOne) {
  const std::string name = unique_name("race");
  std::atomic<int> created{0}, duplicate{0}, other{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < 8; ++t) {
    pool.emplace_back([&] {
      auto client = server().new_client();
      while (!go.load()) std::this_thread::yield();
      HttpResult res = client->post("/v1/virtual-accounts", wallet_body(name), key());
      if (res.status == 201) {
        ++created;
      } else if (res.status == 400 &&
                 res.body.find("Virtual Account name already exist") != std::string::npos) {
        ++duplicate;
      } else {
        ++other;
      }
    });
  }
  go = true;
  for (auto& th : pool) th.join();
  EXPECT_EQ(created.load(), 1);
  EXPECT_EQ(duplicate.load(), 7);
  EXPECT_EQ(other.load(), 0);
}

}  // namespace
}  // namespace kobo::it
