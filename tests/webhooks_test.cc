// webhooks/: the pure rules (signatures, address policy, retry schedule, delivery states), the
// signing key store, the webhook secrets, and a delivery database that does not read back.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/crypto.h"
#include "events/ledger.h"
#include "events/memory_log.h"
#include "tests/support/node.h"
#include "tests/support/scratch_dir.h"
#include "webhooks/webhooks.h"

namespace kobo {
namespace {

using namespace std::chrono_literals;

TEST(WebhookSignature, IsHexHmacSha512OfTheExactBody) {
  // RFC 4231, test case 2.
  EXPECT_EQ(webhook_signature("Jefe", "what do ya want for nothing?"),
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"
            "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737");
  // One byte of white space is another signature: receivers must verify the bytes they got.
  EXPECT_NE(webhook_signature("sk_test_x", R"({"event":"account.credit"})"),
            webhook_signature("sk_test_x", R"({"event": "account.credit"})"));
  EXPECT_NE(webhook_signature("sk_test_x", "body"), webhook_signature("sk_live_x", "body"));
}

TEST(StandardWebhookSignature, MatchesTheSpecificationsExample) {
  // The example of the Standard Webhooks specification and its libraries' tests.
  EXPECT_EQ(standard_webhook_signature("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                                       "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})"),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST(DeliveryStates, AnAttemptsEndMovesTheDeliveryByTheSchedule) {
  RetrySchedule s;
  s.delays = {10s, 1min};
  s.window = 10min;
  s.attempts_max = 5;
  const UnixMs created = 1'000'000;
  // A 2xx succeeds, whatever came before.
  EXPECT_EQ(next_delivery_state(s, created, 1, true, false, created + 5),
            (DeliveryState{DeliveryStatus::succeeded, std::nullopt}));
  EXPECT_EQ(next_delivery_state(s, created, 4, true, true, created + 5),
            (DeliveryState{DeliveryStatus::succeeded, std::nullopt}));
  // A failure waits the delay of its place in the schedule; the last delay repeats.
  EXPECT_EQ(next_delivery_state(s, created, 1, false, false, created + 5),
            (DeliveryState{DeliveryStatus::pending, created + 5 + 10'000}));
  EXPECT_EQ(next_delivery_state(s, created, 2, false, false, created + 20'000),
            (DeliveryState{DeliveryStatus::pending, created + 20'000 + 60'000}));
  EXPECT_EQ(next_delivery_state(s, created, 3, false, false, created + 90'000),
            (DeliveryState{DeliveryStatus::pending, created + 90'000 + 60'000}));
  // The next attempt may fall at the window's end, not past it.
  EXPECT_EQ(next_delivery_state(s, created, 3, false, false, created + 540'000),
            (DeliveryState{DeliveryStatus::pending, created + 600'000}));
  EXPECT_EQ(next_delivery_state(s, created, 3, false, false, created + 540'001),
            (DeliveryState{DeliveryStatus::failed, std::nullopt}));
  // The attempts are used up.
  EXPECT_EQ(next_delivery_state(s, created, 5, false, false, created + 100'000),
            (DeliveryState{DeliveryStatus::failed, std::nullopt}));
  EXPECT_EQ(next_delivery_state(s, created, 4, false, false, created + 100'000).status,
            DeliveryStatus::pending);
  // A manual retry that fails is one attempt: it does not start a new schedule.
  EXPECT_EQ(next_delivery_state(s, created, 1, false, true, created + 5),
            (DeliveryState{DeliveryStatus::failed, std::nullopt}));
}

TEST(DeliveryStates, AManualRetryMakesTheDeliveryDueNow) {
  const UnixMs now = 5'000;
  // A finished delivery is pending again, for one (manual) attempt.
  EXPECT_EQ(retried_delivery_state(DeliveryStatus::failed, false, now),
            (RetriedState{{DeliveryStatus::pending, now}, true}));
  EXPECT_EQ(retried_delivery_state(DeliveryStatus::succeeded, false, now),
            (RetriedState{{DeliveryStatus::pending, now}, true}));
  // A pending one is due now and keeps its schedule, or stays the manual attempt it was.
  EXPECT_EQ(retried_delivery_state(DeliveryStatus::pending, false, now),
            (RetriedState{{DeliveryStatus::pending, now}, false}));
  EXPECT_EQ(retried_delivery_state(DeliveryStatus::pending, true, now),
            (RetriedState{{DeliveryStatus::pending, now}, true}));
  for (const auto status : {DeliveryStatus::pending, DeliveryStatus::succeeded, DeliveryStatus::failed})
    EXPECT_EQ(delivery_status_from_string(to_string(status)), status);
  EXPECT_EQ(delivery_status_from_string("done"), std::nullopt);
}

TEST(WebhookSecrets, DeriveOneSecretPerAccountModeAndRotationFromTheMasterKey) {
  const auto master = LocalMasterKey::make(std::string(40, 'm'));
  ASSERT_TRUE(master.ok());
  const WebhookSecrets made(*master.value());
  const std::string a = made.secret("acc-1", false, "h1").value();
  // whsec_ + base64 of 32 bytes.
  ASSERT_TRUE(a.starts_with("whsec_"));
  const auto key = base64_decode(a.substr(6));
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(key->size(), 32u);
  // Each input makes another; the same master key derives alike on every node.
  EXPECT_NE(made.secret("acc-1", true, "h1").value(), a);
  EXPECT_NE(made.secret("acc-2", false, "h1").value(), a);
  EXPECT_NE(made.secret("acc-1", false, "h2").value(), a);
  const auto again = LocalMasterKey::make(std::string(40, 'm'));
  EXPECT_EQ(WebhookSecrets(*again.value()).secret("acc-1", false, "h1").value(), a);
  const auto other = LocalMasterKey::make(std::string(40, 'n'));
  EXPECT_NE(WebhookSecrets(*other.value()).secret("acc-1", false, "h1").value(), a);
  // What a webhook master secret of an older kobo derived, the master key it becomes derives:
  // HMAC-SHA256(master, "kobo webhook secret|account|mode|rotation"), as before.
  const Sha256 before = hmac_sha256(std::string(40, 'm'), "kobo webhook secret|acc-1|test|h1");
  EXPECT_EQ(a, "whsec_" + base64_encode(std::string_view(reinterpret_cast<const char*>(before.data()), 32)));
}

TEST(WebhookSecrets, SignWithTheCurrentSecretAndThePreviousForADayAfterARotation) {
  const auto master = LocalMasterKey::make(std::string(32, 'k'));
  ASSERT_TRUE(master.ok());
  const WebhookSecrets w(*master.value());
  const std::string body = R"({"data":{},"event":"account.credit","sequence":1})";
  const UnixMs rotated = 1'700'000'000'000;
  const auto sign = [&](std::string_view rotation, UnixMs now) {
    return standard_webhook_signature(w.secret("acc-1", true, rotation).value(), "evt-1", now / 1000, body);
  };
  // Never issued: no signature.
  EXPECT_EQ(w.signatures(rows::WebhookRow{}, "acc-1", true, "evt-1", rotated, body).value(), "");
  // Issued once: the one secret's.
  EXPECT_EQ(w.signatures(rows::WebhookRow{3, 3, "h1", rotated, ""}, "acc-1", true, "evt-1", rotated + 5, body)
                .value(),
            sign("h1", rotated + 5));
  // Rotated: both for 24 hours, the current first, then the current alone.
  const rows::WebhookRow row{3, 3, "h2", rotated, "h1"};
  const UnixMs day = 24LL * 3600 * 1000;
  EXPECT_EQ(w.signatures(row, "acc-1", true, "evt-1", rotated + day - 1, body).value(),
            sign("h2", rotated + day - 1) + " " + sign("h1", rotated + day - 1));
  EXPECT_EQ(w.signatures(row, "acc-1", true, "evt-1", rotated + day, body).value(),
            sign("h2", rotated + day));
}

TEST(WebhookAddressPolicy, RefusesEveryNonPublicRange) {
  struct Row {
    const char* address;
    const char* reason;  // nullptr: public
  };
  const Row rows[] = {
      {"127.0.0.1", "loopback"},
      {"127.255.0.9", "loopback"},
      {"10.1.2.3", "private"},
      {"172.16.0.1", "private"},
      {"172.31.255.255", "private"},
      {"192.168.1.1", "private"},
      {"169.254.169.254", "link-local"},
      {"100.64.0.1", "shared address space (CGNAT)"},
      {"100.127.255.255", "shared address space (CGNAT)"},
      {"0.0.0.0", "unspecified"},
      {"224.0.0.1", "multicast"},
      {"255.255.255.255", "reserved"},
      {"198.18.0.1", "reserved"},
      {"::1", "loopback"},
      {"::", "unspecified"},
      {"fc00::1", "unique-local"},
      {"fd12:3456::1", "unique-local"},
      {"fe80::1", "link-local"},
      {"ff02::1", "multicast"},
      {"::ffff:127.0.0.1", "loopback"},
      {"::ffff:10.0.0.1", "private"},
      {"64:ff9b::a9fe:a9fe", "link-local"},
      {"not-an-ip", "not an IP address"},
      // Public, including the neighbours of the ranges above.
      {"8.8.8.8", nullptr},
      {"172.15.255.255", nullptr},
      {"172.32.0.1", nullptr},
      {"100.128.0.1", nullptr},
      {"11.0.0.1", nullptr},
      {"2001:4860:4860::8888", nullptr},
      {"::ffff:8.8.8.8", nullptr},
  };
  for (const Row& r : rows) {
    const auto reason = forbidden_address_reason(r.address);
    if (r.reason == nullptr) {
      EXPECT_FALSE(reason.has_value()) << r.address << " is public, refused as " << reason.value_or("");
    } else {
      EXPECT_EQ(reason.value_or("(public)"), r.reason) << r.address;
    }
  }
}

TEST(WebhookRetrySchedule, DefaultsFollowTheIssue) {
  const RetrySchedule s;
  EXPECT_EQ(s.delay_after(1), 10s);
  EXPECT_EQ(s.delay_after(2), 1min);
  EXPECT_EQ(s.delay_after(3), 5min);
  EXPECT_EQ(s.delay_after(4), 30min);
  EXPECT_EQ(s.delay_after(5), 1h);
  EXPECT_EQ(s.delay_after(20), 1h) << "then hourly";
  EXPECT_EQ(s.window, 24h);
  // Within the window the schedule makes fewer attempts than the cap, so the window decides.
  std::chrono::milliseconds elapsed{0};
  std::uint32_t attempts = 1;
  while (elapsed + s.delay_after(attempts) <= s.window) elapsed += s.delay_after(attempts++);
  EXPECT_LT(attempts, s.attempts_max);
  EXPECT_GE(attempts, 25u);
}

TEST(WebhookRetrySchedule, ParsesDurationsAndRejectsNonsense) {
  const auto s = RetrySchedule::parse("200ms,1s,2m,3h", "90s");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s.value().delays, (std::vector<std::chrono::milliseconds>{200ms, 1s, 2min, 3h}));
  EXPECT_EQ(s.value().window, 90s);
  for (const char* bad : {"", "10", "10x", "-1s", "0s", "1s,,2s", "s", "1.5s"})
    EXPECT_FALSE(RetrySchedule::parse(bad, "24h").ok()) << "'" << bad << "'";
  EXPECT_FALSE(RetrySchedule::parse("1s", "forever").ok());
}

// What the delivery database holds is read as it is on disk: a record that does not read back
// is an error the caller handles (a 503, an attempt paused and /readyz saying why, a retry
// refused as unavailable), never an abort. So is a consumer position that does not decode.
class WebhookStore : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kobo-webhook-store-" + random_hex(6));
    auto views = Views::open((dir_ / "views").string(), 1);
    ASSERT_TRUE(views.ok()) << views.status().message();
    views_ = std::move(views).value();
    projector_ = std::make_unique<Projector>(log_, *views_);
    auto master = LocalMasterKey::make(std::string(40, 'm'));
    ASSERT_TRUE(master.ok());
    master_ = std::move(master).value();
    secrets_ = std::make_unique<WebhookSecrets>(*master_);
    ASSERT_TRUE(open().ok()) << "a new delivery database";
  }
  void TearDown() override {
    webhooks_.reset();
    projector_.reset();
    views_.reset();
    std::filesystem::remove_all(dir_);
  }

  Status open() {
    webhooks_.reset();
    auto w = Webhooks::open((dir_ / "webhooks").string(), log_, *views_, *projector_, *master_, *secrets_);
    if (!w) return w.status();
    webhooks_ = std::move(w).value();
    return {};
  }

  // Writes `entries` into the delivery database while no Webhooks has it open.
  void write_raw(const std::vector<std::pair<std::string, std::string>>& entries) {
    webhooks_.reset();
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), (dir_ / "webhooks").string(), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    for (const auto& [k, v] : entries) ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), k, v).ok());
  }

  static std::string be8(std::uint64_t v) {
    std::string out;
    for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return out;
  }

  std::filesystem::path dir_;
  MemoryLog log_{1};
  std::unique_ptr<Views> views_;
  std::unique_ptr<Projector> projector_;
  std::unique_ptr<LocalMasterKey> master_;
  std::unique_ptr<WebhookSecrets> secrets_;
  std::unique_ptr<Webhooks> webhooks_;
};

TEST_F(WebhookStore, ADeliveryThatDoesNotReadBackIsAnErrorNeverAnAbort) {
  const std::string id = "whd-corrupt";
  // A listing entry and a due entry (of partition 0: the log has one) naming a record that is not
  // a delivery (the key layout of webhooks/webhooks.cc).
  write_raw({{"D" + id, "not a delivery"},
             {"l" + scope_key("biz-1", false) + be8(1) + id, ""},
             {"Q" + std::string(4, '\0') + be8(1) + id, ""}});
  ASSERT_TRUE(open().ok());
  const Scope scope{"biz-1", false};
  const auto page = webhooks_->deliveries(scope, {}, PageRequest{1, 10});
  ASSERT_FALSE(page.ok()) << "the list answers an error (503), not a page without it";
  EXPECT_NE(page.status().message().find(id), std::string::npos) << page.status().message();
  EXPECT_EQ(webhooks_->retry(scope, id, nullptr), Webhooks::RetryOutcome::unavailable);
  EXPECT_EQ(webhooks_->fault(), "");
  ASSERT_TRUE(webhooks_->start().ok());
  // The sender's next tick meets the due entry: the attempts pause, and fault() says why.
  for (int i = 0; i < 100 && webhooks_->fault().empty(); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_NE(webhooks_->fault().find("webhooks paused"), std::string::npos) << webhooks_->fault();
  webhooks_->stop();
}

TEST_F(WebhookStore, APositionThatDoesNotDecodeFailsTheOpen) {
  write_raw({{std::string("P") + std::string(4, '\0'), "{\"offset\":\"zero\"}"}});
  const Status opened = open();
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.message().find("malformed"), std::string::npos) << opened.message();
}

// The settings that decide a transaction's deliveries are those in effect at its place in the log
// (docs/webhooks.md, "Which settings apply"), however far the consumer is behind the projector:
// here it starts once the views have applied every change of the account's URLs.
TEST(WebhookSettings, ApplyFromTheNextTransactionInLogOrderWhateverTheConsumersLag) {
  testing::ScratchDir dir;
  testing::Node node(dir.path(), {.partitions = 1});
  ASSERT_TRUE(node.start().ok());
  const Caller caller{"biz-order", "acc-order", false};
  const std::string hash(64, 'a');
  ASSERT_TRUE(node.ledger()
                  .execute(CreateBusiness{caller.business, "O", caller.account, "Default", hash, hash,
                                          "pk_test", "pk_live"})
                  .ok());
  const Outcome wallet = node.ledger().execute(CreateWallet{caller, "Ada", "secondary", {}, {}});
  ASSERT_TRUE(wallet.ok());
  const std::string number = std::get<WalletOpened>(wallet.events.at(0).data).account_number;
  const auto master = LocalMasterKey::make(std::string(40, 'm'));
  ASSERT_TRUE(master.ok());
  const WebhookSecrets secrets(*master.value());
  WebhookOptions options;
  options.sends = [](Partition) { return false; };  // recorded, never sent
  const std::string path = (dir.path() / "webhooks").string();
  const auto open = [&] {
    return Webhooks::open(path, node.log(), node.views(), node.projector(), *master.value(), secrets,
                          options);
  };
  {
    // A new delivery database starts at the log's end, and records where that is.
    auto webhooks = open();
    ASSERT_TRUE(webhooks.ok()) << webhooks.status().message();
    ASSERT_TRUE(webhooks.value()->start().ok());
    webhooks.value()->stop();
  }
  const auto credit = [&](std::int64_t amount) {
    const Outcome o = node.ledger().execute(
        IncomingCredit{caller, number, Kobo(amount), "f", "S", "0000014579", "058", "GTB", "000013"});
    EXPECT_TRUE(o.ok());
    return o.id;
  };
  const auto set_urls = [&](std::vector<std::string> urls) {
    EXPECT_TRUE(node.ledger().execute(UpdateAccount{caller, caller.account, std::move(urls), {}, {}}).ok());
  };
  std::map<std::string, std::string> expected;  // transaction -> the URL it is delivered to
  credit(100);                                  // no URLs yet
  set_urls({"https://a.example/hook"});
  expected[credit(200)] = "https://a.example/hook";
  set_urls({"https://b.example/hook"});
  expected[credit(300)] = "https://b.example/hook";
  set_urls({});
  credit(400);
  set_urls({"https://c.example/hook"});
  const std::string last = credit(500);
  expected[last] = "https://c.example/hook";
  ASSERT_TRUE(node.caught_up(5s));

  auto webhooks = open();
  ASSERT_TRUE(webhooks.ok()) << webhooks.status().message();
  ASSERT_TRUE(webhooks.value()->start().ok());
  // The consumer reads in log order and writes each step's deliveries at once: once the last
  // credit's is listed, every earlier one is.
  const Scope scope{caller.business, caller.live};
  std::map<std::string, std::string> delivered;  // transaction -> URL
  for (int i = 0; i < 250 && !delivered.contains(last); ++i) {
    std::this_thread::sleep_for(20ms);
    const auto page = webhooks.value()->deliveries(scope, {}, PageRequest{1, 50});
    ASSERT_TRUE(page.ok()) << page.status().message();
    delivered.clear();
    for (const std::string& item : page.value().items) {
      const auto d = nlohmann::json::parse(item);
      EXPECT_TRUE(delivered.emplace(d.at("transaction"), d.at("url")).second) << "delivered twice: " << item;
    }
  }
  webhooks.value()->stop();
  EXPECT_EQ(delivered, expected);
}

}  // namespace
}  // namespace kobo
