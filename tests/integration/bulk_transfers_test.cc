// Bulk transfers over HTTP (extensions section 5): an atomic bulk applies every item or none (an
// overdraft at item 700 of 1,000 changes nothing, and its references stay usable), a non-atomic
// one answers each item, every record an item creates names the bulk in batchId, the bulk's
// reference is idempotent as a whole, and kill -9 in a stream of atomic bulks leaves each one
// all or nothing. Runs on the embedded log and again on Kafka (the `kafka.` prefix).

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

constexpr const char* kPath = "/v1/transactions/bulk-transfer";
constexpr const char* kAccessBank = "044";
constexpr const char* kAccessNumber = "0123456784";  // a valid Access Bank NUBAN

json wallet_item(const std::string& source, const std::string& destination, std::int64_t amount,
                 const std::string& reference = "") {
  json item = transfer_body(source, destination, amount, reference, "bulk test");
  item["type"] = "wallet";
  return item;
}

json bank_item(const std::string& source, std::int64_t amount, const std::string& bank_code = kAccessBank,
               const std::string& number = kAccessNumber) {
  return {{"type", "bank"},   {"source", source},  {"accountNumber", number},   {"bankCode", bank_code},
          {"amount", amount}, {"currency", "NGN"}, {"narration", "bulk payout"}};
}

json bulk_body(const std::string& reference, bool atomic, json items) {
  return {{"reference", reference}, {"atomic", atomic}, {"items", std::move(items)}};
}

class BulkTransfers : public ServerSuite {};

TEST_F(BulkTransfers, AtomicOverdraftAtItem700RejectsAllAndChangesNothing) {
  const json a = create_wallet(http(), key());
  const json b = create_wallet(http(), key());
  const std::string src = a["publicId"], dst = b["publicId"];
  constexpr std::int64_t kAmount = 10'000;
  fund(http(), key(), a, 699 * kAmount + 5'000);  // item 700 (index 699) overdraws
  const std::string tag = unique_name("atomic700");
  json items = json::array();
  for (int i = 0; i < 1'000; ++i)
    items.push_back(wallet_item(src, dst, kAmount, tag + "-" + std::to_string(i)));
  const json body = bulk_body(tag, true, items);
  const std::int64_t transactions_before = total_count(http(), key(), "/v1/transactions");

  HttpResult res = http().post(kPath, body, key());
  expect_error(res, 403, "Insufficient fund");
  ASSERT_TRUE(res.json["meta"]["error"]["items"].is_array()) << res.body.substr(0, 300);
  ASSERT_EQ(res.json["meta"]["error"]["items"].size(), 1u);
  const json& failed = res.json["meta"]["error"]["items"][0];
  EXPECT_EQ(failed["index"], 699);
  EXPECT_EQ(failed["statusCode"], 403);
  EXPECT_EQ(failed["message"], "Insufficient fund");

  // Nothing changed: balances, transactions, references.
  EXPECT_EQ(balance_of(http(), key(), src), 699 * kAmount + 5'000);
  EXPECT_EQ(balance_of(http(), key(), dst), 0);
  EXPECT_EQ(total_count(http(), key(), "/v1/transactions"), transactions_before);
  for (const int i : {0, 1, 698, 699, 999})
    EXPECT_EQ(http().get("/v1/transactions/" + tag + "-" + std::to_string(i), key()).status, 404u) << i;

  // The same bulk, funded, goes through: its reference and its items' references were not taken.
  fund(http(), key(), a, 301 * kAmount);
  res = http().post(kPath, body, key());
  ASSERT_EQ(res.status, 201u) << res.body.substr(0, 300);
  expect_success(res, 201, Message::kPresent);
  const json& data = res.json["data"];
  EXPECT_TRUE(std::string(data["publicId"]).starts_with("blk-"));
  EXPECT_EQ(data["reference"], tag);
  ASSERT_EQ(data["items"].size(), 1'000u);
  for (std::size_t i = 0; i < 1'000; ++i) {
    const json& item = data["items"][i];
    ASSERT_EQ(item["index"], i);
    ASSERT_EQ(item["statusCode"], 200) << item.dump();
    ASSERT_EQ(item["reference"], tag + "-" + std::to_string(i));
    ASSERT_EQ(item["transaction"]["batchId"], data["publicId"]);
  }
  expect_transaction(data["items"][0]["transaction"]);
  EXPECT_EQ(balance_of(http(), key(), src), 5'000);
  EXPECT_EQ(balance_of(http(), key(), dst), 1'000 * kAmount);
  EXPECT_EQ(total_count(http(), key(), "/v1/transactions"), transactions_before + 1 + 2'000);
}

TEST_F(BulkTransfers, NonAtomicAnswersEachItemOnItsOwn) {
  const json a = create_wallet(http(), key());
  const json b = create_wallet(http(), key());
  const std::string src = a["publicId"], dst = b["publicId"];
  fund(http(), key(), a, 100'000);
  const std::string tag = unique_name("each");
  json items = json::array({
      wallet_item(src, dst, 30'000, tag + "-ok"),         // 0: applied
      wallet_item(src, dst, 80'000, tag + "-overdraft"),  // 1: 70,000 left: refused
      wallet_item("vba-" + random_uuid(), dst, 10'000),   // 2: no such source
      wallet_item(src, src, 10'000),                      // 3: same source and destination
      bank_item(src, 20'000, kAccessBank, "0123456785"),  // 4: a bad check digit
      bank_item(src, 20'000),                             // 5: applied, with its fee
      wallet_item(src, dst, 30'000, tag + "-ok"),         // 6: its reference was just used
      wallet_item(src, dst, 40'000),                      // 7: 48,925 left: applied
  });
  HttpResult res = http().post(kPath, bulk_body(tag, false, items), key());
  ASSERT_EQ(res.status, 201u) << res.body.substr(0, 500);
  const json& data = res.json["data"];
  EXPECT_EQ(data["atomic"], false);
  const std::vector<std::pair<int, std::string>> expected{{200, "Transfer initiated successfully"},
                                                          {403, "Insufficient fund"},
                                                          {404, "Source not found"},
                                                          {400, "Source and destination cannot be the same"},
                                                          {400, "Invalid account number"},
                                                          {200, "Transfer initiated successfully"},
                                                          {409, "Duplicate reference"},
                                                          {200, "Transfer initiated successfully"}};
  ASSERT_EQ(data["items"].size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const json& item = data["items"][i];
    SCOPED_TRACE("item " + std::to_string(i));
    EXPECT_EQ(item["index"], i);
    EXPECT_EQ(item["statusCode"], expected[i].first);
    EXPECT_EQ(item["message"], expected[i].second);
    if (expected[i].first == 200) {
      EXPECT_EQ(item["transaction"]["batchId"], data["publicId"]);
      EXPECT_EQ(item["transaction"]["status"], "pending");
      EXPECT_EQ(item["transaction"]["reference"], item["reference"]);
    } else {
      EXPECT_TRUE(item["transaction"].is_null());
    }
  }
  EXPECT_EQ(data["items"][1]["reference"], tag + "-overdraft");
  EXPECT_TRUE(data["items"][2]["reference"].is_null());
  EXPECT_EQ(data["items"][5]["transaction"]["fee"], 1'075);
  // 100,000 - 30,000 - (20,000 + 1,075) - 40,000
  EXPECT_EQ(balance_of(http(), key(), src), 8'925);
  EXPECT_EQ(balance_of(http(), key(), dst), 70'000);
}

TEST_F(BulkTransfers, EveryRecordAnItemCreatesCarriesTheBatchId) {
  const json a = create_wallet(http(), key());
  const json b = create_wallet(http(), key());
  const std::string src = a["publicId"], dst = b["publicId"];
  fund(http(), key(), a, 1'000'000);
  const std::string tag = unique_name("batch");
  json items = json::array();
  for (int i = 0; i < 5; ++i)
    items.push_back(wallet_item(src, dst, 10'000 + i, tag + "-w" + std::to_string(i)));
  items.push_back(bank_item(src, 50'000));
  HttpResult res = http().post(kPath, bulk_body(tag, true, items), key());
  ASSERT_EQ(res.status, 201u) << res.body.substr(0, 300);
  const std::string batch = res.json["data"]["publicId"];
  int named = 0;
  for (const json& t : list_all(http(), key(), "/v1/transactions")) named += t["batchId"] == batch;
  EXPECT_EQ(named, 5 * 2 + 1) << "every debit and credit of the wallet items and the payout";
  for (int i = 0; i < 5; ++i) {
    const json t =
        data_or_throw(http().get("/v1/transactions/" + tag + "-w" + std::to_string(i), key()), 200, "get");
    EXPECT_EQ(t["batchId"], batch);
  }
  // A transfer of its own names no bulk.
  const json single =
      data_or_throw(http().post("/v1/transactions/transfer", transfer_body(src, dst, 10'000), key()), 200,
                    "single transfer");
  EXPECT_TRUE(single["batchId"].is_null());
}

TEST_F(BulkTransfers, TheBulkReferenceIsIdempotentAsAWhole) {
  const json a = create_wallet(http(), key());
  const json b = create_wallet(http(), key());
  const std::string src = a["publicId"], dst = b["publicId"];
  fund(http(), key(), a, 100'000);
  const std::string tag = unique_name("idem");
  const json body = bulk_body(
      tag, false,
      json::array({wallet_item(src, dst, 20'000, tag + "-1"), wallet_item(src, dst, 500'000, tag + "-2")}));
  HttpResult first = http().post(kPath, body, key());
  ASSERT_EQ(first.status, 201u) << first.body.substr(0, 300);
  EXPECT_TRUE(first.header("idempotent-replayed").empty());

  HttpResult again = http().post(kPath, body, key());
  ASSERT_EQ(again.status, 200u) << again.body.substr(0, 300);
  EXPECT_EQ(again.header("idempotent-replayed"), "true");
  EXPECT_EQ(again.json["data"]["publicId"], first.json["data"]["publicId"]);
  ASSERT_EQ(again.json["data"]["items"].size(), 2u);
  EXPECT_EQ(again.json["data"]["items"][0]["transaction"]["publicId"],
            first.json["data"]["items"][0]["transaction"]["publicId"]);
  EXPECT_EQ(again.json["data"]["items"][1]["statusCode"], 403);
  EXPECT_EQ(balance_of(http(), key(), src), 80'000) << "a replay moves no money";

  json other = body;
  other["items"][0]["amount"] = 20'001;
  expect_error(http().post(kPath, other, key()), 409, "Duplicate reference");
  json now_atomic = body;
  now_atomic["atomic"] = true;
  expect_error(http().post(kPath, now_atomic, key()), 409, "Duplicate reference");
  // An item's reference is a transfer reference: a single transfer with another body is a conflict.
  expect_error(http().post("/v1/transactions/transfer", transfer_body(src, dst, 30'000, tag + "-1"), key()),
               409, "Duplicate reference");
  EXPECT_EQ(balance_of(http(), key(), src), 80'000);
}

TEST_F(BulkTransfers, BadBulksAreRefusedNamingTheItem) {
  const json a = create_wallet(http(), key());
  const std::string src = a["publicId"];
  json items = json::array({wallet_item(src, src, 10'000), wallet_item(src, src, 5)});
  expect_validation(
      http().post(kPath, json{{"atomic", true}, {"items", json::array({wallet_item(src, src, 10'000)})}},
                  key()),
      {"reference"});
  HttpResult res = http().post(kPath, bulk_body("x", true, items), key());
  expect_constraint(res, "items.1.amount", "min", "items.1.amount must not be less than 10000");
  res = http().post(kPath, bulk_body("x", true, json::array()), key());
  expect_constraint(res, "items", "arrayMinSize", "items must contain at least 1 elements");
  json many = json::array();
  for (int i = 0; i < 1'001; ++i) many.push_back(wallet_item(src, "vba-x", 10'000));
  res = http().post(kPath, bulk_body("x", false, many), key());
  expect_constraint(res, "items", "arrayMaxSize", "items must contain no more than 1000 elements");
  res = http().post(kPath, bulk_body("x", false, json::array({bank_item(src, 10'000, "999")})), key());
  expect_constraint(res, "items.0.bankCode", "isIn",
                    "items.0.bankCode must be a bank of GET /v1/transactions/banks");
  res = http().post(kPath, bulk_body("x", false, json::array({json{{"type", "cheque"}}})), key());
  expect_constraint(res, "items.0.type", "isIn",
                    "items.0.type must be one of the following values: wallet, bank");
  // Up to 1 MiB on this endpoint; the others keep 64 KiB.
  json big = bulk_body("x", false, json::array({wallet_item(src, "vba-x", 10'000)}));
  big["items"][0]["padding"] = std::string(200 * 1024, 'x');
  EXPECT_NE(http().post(kPath, big, key()).status, 413u);
  big["items"][0]["padding"] = std::string(1024 * 1024, 'x');
  EXPECT_EQ(http().post(kPath, big, key()).status, 413u);
  EXPECT_EQ(http().post("/v1/transactions/transfer", big, key()).status, 413u);
  json small = transfer_body(src, "vba-x", 10'000);
  small["padding"] = std::string(200 * 1024, 'x');
  EXPECT_EQ(http().post("/v1/transactions/transfer", small, key()).status, 413u);
}

// kill -9 during a stream of atomic bulks: after a restart, each bulk is there whole or not at
// all, every acknowledged one is there, and balances equal the applied bulks.
TEST_F(BulkTransfers, Kill9DuringAStreamOfAtomicBulksLeavesEachAllOrNothing) {
  const std::uint64_t seed = test_seed("BulkTransfers.Kill9DuringAStreamOfAtomicBulksLeavesEachAllOrNothing");
  std::mt19937_64 rng(seed);
  constexpr int kWallets = 4, kItems = 50;
  constexpr std::int64_t kFunding = 1'000'000'000;
  std::vector<std::string> ids;
  for (int i = 0; i < kWallets; ++i) {
    const json w = create_wallet(http(), key());
    ids.push_back(w["publicId"]);
    fund(http(), key(), w, kFunding);
  }
  struct Sent {
    std::string reference;
    json body;
    unsigned status = 0;
  };
  std::vector<Sent> sent;
  std::atomic<int> answered{0};
  std::atomic<bool> stop{false};
  std::thread client([&] {
    auto c = server().new_client(std::chrono::milliseconds(5'000));
    std::mt19937_64 crng(seed ^ 0x9e3779b97f4a7c15ULL);
    for (int n = 0; n < 10'000 && !stop.load(); ++n) {
      Sent s;
      s.reference = "k9-" + std::to_string(seed) + "-" + std::to_string(n);
      json items = json::array();
      for (int i = 0; i < kItems; ++i) {
        const std::size_t from = crng() % kWallets, to = (from + 1 + crng() % (kWallets - 1)) % kWallets;
        items.push_back(wallet_item(ids[from], ids[to], 10'000 + static_cast<std::int64_t>(crng() % 5'000),
                                    s.reference + "-" + std::to_string(i)));
      }
      s.body = bulk_body(s.reference, true, std::move(items));
      try {
        s.status = c->post(kPath, s.body, key()).status;
        ++answered;
      } catch (const std::exception&) {
      }
      sent.push_back(s);
      if (s.status == 0) break;
    }
  });
  ASSERT_TRUE(wait_until([&] { return answered.load() >= 5; }, std::chrono::milliseconds(30'000)));
  std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 200));
  server().kill9();
  stop = true;
  client.join();
  server().start();

  std::map<std::string, std::int64_t> model;
  for (const auto& id : ids) model[id] = kFunding;
  int whole = 0, none = 0;
  for (const Sent& s : sent) {
    SCOPED_TRACE(s.reference);
    EXPECT_TRUE(s.status == 0 || s.status == 201 || s.status == 503) << s.status;
    int found = 0;
    for (int i = 0; i < kItems; ++i)
      found += http().get("/v1/transactions/" + s.reference + "-" + std::to_string(i), key()).status == 200;
    EXPECT_TRUE(found == 0 || found == kItems) << found << " of " << kItems << " items applied";
    if (s.status == 201) {
      EXPECT_EQ(found, kItems) << "an acknowledged bulk was lost";
    }
    if (found == kItems) {
      ++whole;
      for (const json& item : s.body["items"]) {
        model[item["source"]] -= item["amount"].get<std::int64_t>();
        model[item["destination"]] += item["amount"].get<std::int64_t>();
      }
    } else {
      ++none;
    }
  }
  std::cout << sent.size() << " bulks sent: " << whole << " applied whole, " << none << " not at all"
            << std::endl;
  for (const auto& id : ids) EXPECT_EQ(balance_of(http(), key(), id), model[id]) << id;
  // A bulk without an answer, sent again, is answered whole: applied now, or replayed.
  for (const Sent& s : sent) {
    if (s.status == 201) continue;
    HttpResult again = http().post(kPath, s.body, key());
    EXPECT_TRUE(again.status == 201 || again.status == 200) << again.body.substr(0, 300);
  }
}

}  // namespace
}  // namespace kobo::it
