// webhooks/: the pure rules (signature, address policy, retry schedule) and the signing key store.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "common/crypto.h"
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

TEST(SigningKeyStore, KeepsEachAccountsKeysInA0600File) {
  const auto dir = std::filesystem::temp_directory_path() / ("kobo-keys-" + random_hex(6));
  {
    auto store = SigningKeyStore::open(dir.string());
    ASSERT_TRUE(store.ok()) << store.status().message();
    ASSERT_TRUE(store.value()->put("acc-1", "sk_test_a", "sk_live_a").ok());
    EXPECT_EQ(store.value()->get("acc-1", false), "sk_test_a");
    EXPECT_EQ(store.value()->get("acc-1", true), "sk_live_a");
    EXPECT_FALSE(store.value()->get("acc-2", false).has_value());
    EXPECT_FALSE(store.value()->get("../acc-1", false).has_value()) << "ids never become paths";
    struct stat st {};
    ASSERT_EQ(::stat((dir / "acc-1.json").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_EQ(::stat(dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
  }
  auto reopened = SigningKeyStore::open(dir.string());
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(reopened.value()->get("acc-1", true), "sk_live_a") << "keys survive a restart";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kobo
