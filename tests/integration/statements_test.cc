// Statements and the balance at a time (extensions section 4), over HTTP against the real server:
// the statement's invariants (closing = opening + credits - debits; each balanceAfter chains from
// the line before; a window's opening is the balance at its start), pages and the streamed CSV
// agree with the whole statement, and all of it holds after kill -9 mid-load and after the views
// are rebuilt from the log (`kobo replay`).

#include <gtest/gtest.h>

#include <atomic>
#include <sstream>
#include <thread>

#include "common/time.h"
#include "tests/audit/run_kobo.h"
#include "tests/integration/harness.h"

namespace kobo::it {
namespace {

using kobo::testing::run_kobo;

constexpr std::string_view kSince = "from=2000-01-01";

json statement_page(HttpClient& http, const std::string& key, const std::string& wallet,
                    const std::string& query) {
  const HttpResult res = http.get("/v1/virtual-accounts/" + wallet + "/statement?" + query, key);
  // The list envelope, with the statement (not an array) as data.
  EXPECT_EQ(res.json["meta"]["success"], true) << res.body;
  EXPECT_TRUE(res.json["meta"]["pagination"].is_object()) << res.body;
  EXPECT_FALSE(res.json["meta"].contains("message")) << res.body;
  return data_or_throw(res, 200, "statement");
}

// The whole statement of a window, through its pages of `per_page`: the first page's data with
// every page's lines.
json whole_statement(HttpClient& http, const std::string& key, const std::string& wallet,
                     const std::string& window, int per_page = 100) {
  json first;
  json lines = json::array();
  for (int page = 1;; ++page) {
    const HttpResult res = http.get("/v1/virtual-accounts/" + wallet + "/statement?" + window + "&perPage=" +
                                        std::to_string(per_page) + "&page=" + std::to_string(page),
                                    key);
    const json data = data_or_throw(res, 200, "statement page");
    if (page == 1) first = data;
    EXPECT_EQ(data["openingBalance"], first["openingBalance"]) << "page " << page;
    EXPECT_EQ(res.json["meta"]["pagination"]["current"], page);
    for (const json& l : data["lines"]) lines.push_back(l);
    if (data["lines"].size() < static_cast<std::size_t>(per_page)) {
      EXPECT_EQ(res.json["meta"]["pagination"]["totalCount"], lines.size());
      break;
    }
  }
  first["lines"] = lines;
  return first;
}

std::int64_t movement(const json& line) {
  const std::int64_t m = line["amount"].get<std::int64_t>() + line["fee"].get<std::int64_t>();
  return line["entry"] == "credit" ? m : -m;
}

// The statement's own invariants.
void expect_statement_adds_up(const json& s) {
  std::int64_t balance = s["openingBalance"], credits = 0, debits = 0;
  std::string last_time;
  for (const json& l : s["lines"]) {
    balance += movement(l);
    EXPECT_EQ(l["balanceAfter"], balance) << "balanceAfter does not chain at " << l.dump();
    (l["entry"] == "credit" ? credits : debits) += std::abs(movement(l));
    EXPECT_GE(l["createdAt"].get<std::string>(), last_time) << "lines out of order at " << l.dump();
    last_time = l["createdAt"];
    EXPECT_TRUE(l["transaction"].get<std::string>().starts_with("trx-")) << l.dump();
    for (const char* member : {"publicId", "accountName", "accountNumber", "bankName"})
      EXPECT_TRUE(l["counterparty"][member].is_string()) << l.dump();
  }
  EXPECT_EQ(s["totalCredits"], credits);
  EXPECT_EQ(s["totalDebits"], debits);
  EXPECT_EQ(s["closingBalance"].get<std::int64_t>(),
            s["openingBalance"].get<std::int64_t>() + credits - debits);
  EXPECT_EQ(s["closingBalance"], balance);
}

// RFC 4180 rows (quoted fields may hold commas, quotes and line breaks).
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      row.push_back(std::move(field));
      field.clear();
      rows.push_back(std::move(row));
      row.clear();
      ++i;
    } else {
      field += c;
    }
  }
  EXPECT_TRUE(field.empty() && row.empty()) << "the CSV does not end with a line break";
  return rows;
}

std::string csv_text(const json& v) {
  const std::string s = v.get<std::string>();
  if (!s.empty() && std::string_view("=+-@\t\r").find(s[0]) != std::string_view::npos) return "'" + s;
  return s;
}

// The CSV of a window holds the same lines as its JSON statement, in the same order.
void expect_csv_equals(const HttpResult& res, const json& statement) {
  ASSERT_EQ(res.status, 200u) << res.body;
  EXPECT_EQ(res.header("content-type"), "text/csv; charset=utf-8");
  EXPECT_EQ(res.header("transfer-encoding"), "chunked") << "a CSV statement is streamed";
  const auto rows = parse_csv(res.body);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0], (std::vector<std::string>{"createdAt", "reference", "transaction", "entry", "amount",
                                               "fee", "narration", "counterparty", "balanceAfter"}));
  ASSERT_EQ(rows.size(), statement["lines"].size() + 1);
  for (std::size_t i = 0; i < statement["lines"].size(); ++i) {
    const json& l = statement["lines"][i];
    const json& c = l["counterparty"];
    const std::string counterparty = c["accountName"].get<std::string>() + " (" +
                                     c["bankName"].get<std::string>() + " " +
                                     c["accountNumber"].get<std::string>() + ")";
    EXPECT_EQ(rows[i + 1],
              (std::vector<std::string>{l["createdAt"], csv_text(l["reference"]), l["transaction"],
                                        l["entry"], std::to_string(l["amount"].get<std::int64_t>()),
                                        std::to_string(l["fee"].get<std::int64_t>()),
                                        csv_text(l["narration"]), csv_text(json(counterparty)),
                                        std::to_string(l["balanceAfter"].get<std::int64_t>())}))
        << "line " << i + 1;
  }
}

std::int64_t balance_at(HttpClient& http, const std::string& key, const std::string& wallet,
                        const std::string& at) {
  const json d =
      data_or_throw(http.get("/v1/virtual-accounts/" + wallet + "/balance?at=" + at, key), 200, "balance");
  EXPECT_EQ(d["wallet"], wallet);
  return d["balance"];
}

std::string plus_ms(const json& iso, UnixMs ms) {
  return format_iso8601(*parse_iso8601(iso.get<std::string>()) + ms);
}

// A window's opening is the balance at its start, and equals the closing of the window before it;
// the balance at any time is the balanceAfter of the last line before it.
void expect_windows_agree(HttpClient& http, const std::string& key, const std::string& wallet,
                          const json& whole) {
  const json& lines = whole["lines"];
  for (const std::size_t k : {std::size_t{0}, lines.size() / 3, lines.size() / 2, lines.size() - 1}) {
    if (k >= lines.size()) continue;
    const std::string at = lines[k]["createdAt"];
    std::int64_t expected = 0;
    for (const json& l : lines)
      if (l["createdAt"].get<std::string>() < at) expected = l["balanceAfter"];
    EXPECT_EQ(balance_at(http, key, wallet, at), expected) << "balance at " << at;
    const json after = whole_statement(http, key, wallet, "from=" + at, 9);
    const json before = whole_statement(http, key, wallet, std::string(kSince) + "&to=" + at, 9);
    EXPECT_EQ(after["openingBalance"], expected) << "opening of the window from " << at;
    EXPECT_EQ(before["closingBalance"], expected) << "closing of the window to " << at;
    EXPECT_EQ(before["lines"].size() + after["lines"].size(), lines.size());
    expect_statement_adds_up(after);
    expect_statement_adds_up(before);
    // The window of one millisecond at the line's time holds that line.
    const json instant =
        statement_page(http, key, wallet, "from=" + at + "&to=" + plus_ms(lines[k]["createdAt"], 1));
    bool found = false;
    for (const json& l : instant["lines"]) found = found || l["transaction"] == lines[k]["transaction"];
    EXPECT_TRUE(found) << "line " << k << " is not in the window of its own time";
  }
  const std::string last = lines.back()["createdAt"];
  EXPECT_EQ(balance_at(http, key, wallet, plus_ms(last, 1)), whole["closingBalance"]);
  EXPECT_EQ(balance_at(http, key, wallet, "2000-01-01"), 0);
}

// Every check of one wallet's statement; returns the whole statement.
json check_wallet(HttpClient& http, const std::string& key, const std::string& wallet) {
  const json whole = whole_statement(http, key, wallet, std::string(kSince), 100);
  expect_statement_adds_up(whole);
  EXPECT_EQ(whole["openingBalance"], 0);
  EXPECT_EQ(whole["closingBalance"], balance_of(http, key, wallet)) << wallet;
  EXPECT_EQ(whole_statement(http, key, wallet, std::string(kSince), 7)["lines"], whole["lines"])
      << "pages of 7";
  expect_csv_equals(
      http.get("/v1/virtual-accounts/" + wallet + "/statement?" + std::string(kSince) + "&format=csv", key),
      whole);
  expect_csv_equals(http.request(boost::beast::http::verb::get,
                                 "/v1/virtual-accounts/" + wallet + "/statement?" + std::string(kSince),
                                 std::nullopt, {{"x-service-key", key}, {"accept", "text/csv"}}),
                    whole);
  if (!whole["lines"].empty()) expect_windows_agree(http, key, wallet, whole);
  return whole;
}

void bank_transfer(HttpClient& http, const std::string& key, const json& source, std::int64_t amount,
                   const json& metadata) {
  const std::string ref = unique_name("stmt-payout");
  data_or_throw(http.post("/v1/transactions/bank-transfer",
                          json{{"source", source["publicId"]},
                               {"accountNumber", "0123456784"},
                               {"bankCode", "044"},
                               {"amount", amount},
                               {"currency", "NGN"},
                               {"narration", "=payout, \"quoted\""},
                               {"reference", ref},
                               {"metadata", metadata}},
                          key),
                200, "bank transfer");
  ASSERT_TRUE(wait_until([&] {
    const json t = data_or_throw(http.get("/v1/transactions/" + ref, key), 200, "payout");
    return t["status"] == "success" || t["status"] == "failed";
  })) << ref;
}

class Statements : public ServerSuite {
 public:
  static void SetUpTestSuite() { start_server({"--rail-delay-ms", "20"}); }
};

TEST_F(Statements, EveryKindOfMovementChainsAddsUpAndAgreesAcrossPagesCsvAndWindows) {
  const json a = create_wallet(http(), key()), b = create_wallet(http(), key());
  fund(http(), key(), a, 5'000'000);
  for (int i = 0; i < 23; ++i)
    data_or_throw(http().post("/v1/transactions/transfer",
                              transfer_body(a["publicId"], b["publicId"], 10'000 + 37 * i,
                                            unique_name("stmt"), i % 2 ? "rent, March" : "-split"),
                              key()),
                  200, "transfer");
  bank_transfer(http(), key(), a, 70'000, json::object());
  bank_transfer(http(), key(), a, 600'000, json{{"sandboxOutcome", "failed"}});  // reversed
  const json transit = data_or_throw(http().post("/v1/transit-accounts",
                                                 json{{"accountName", unique_name("Till")},
                                                      {"currency", "NGN"},
                                                      {"settlementAccount", b["publicId"]}},
                                                 key()),
                                     201, "transit wallet");
  fund(http(), key(), transit, 25'000);
  const json collection = data_or_throw(http().post("/v1/collection-accounts",
                                                    json{{"destination", a["publicId"]},
                                                         {"accountName", "Order"},
                                                         {"amount", 40'000},
                                                         {"expireIn", 900}},
                                                    key()),
                                        201, "collection wallet");
  fund(http(), key(), collection, 40'000);

  const json sa = check_wallet(http(), key(), a["publicId"]);
  const json sb = check_wallet(http(), key(), b["publicId"]);
  const json st = check_wallet(http(), key(), transit["publicId"]);
  EXPECT_EQ(sa["lines"].size(), 1u + 23 + 2 + 1 + 1)
      << "funding, transfers, two payouts, a reversal, a collection";
  EXPECT_EQ(sb["lines"].size(), 23u + 1) << "transfers and the sweep";
  ASSERT_EQ(st["lines"].size(), 2u) << "the credit and its sweep";
  EXPECT_EQ(st["closingBalance"], 0);
  int fees = 0, reversals = 0;
  for (const json& l : sa["lines"]) {
    if (l["fee"].get<std::int64_t>() > 0) ++fees;
    if (l["narration"].get<std::string>().starts_with("Reversal: ")) {
      ++reversals;
      EXPECT_EQ(l["entry"], "credit");
      EXPECT_EQ(l["amount"], 600'000 + 2'688) << "a reversal credits the amount and the fee back";
    }
  }
  EXPECT_EQ(fees, 2) << "each payout's debit is one line with its fee";
  EXPECT_EQ(reversals, 1);
}

TEST_F(Statements, AnEmptyWindowAndAFreshWallet) {
  const json w = create_wallet(http(), key());
  const json s = statement_page(http(), key(), w["publicId"], "");
  EXPECT_EQ(s["lines"], json::array());
  EXPECT_EQ(s["openingBalance"], 0);
  EXPECT_EQ(s["closingBalance"], 0);
  fund(http(), key(), w, 20'000);
  const json future = statement_page(http(), key(), w["publicId"], "from=2999-01-01");
  EXPECT_EQ(future["lines"], json::array());
  EXPECT_EQ(future["openingBalance"], 20'000);
  EXPECT_EQ(future["closingBalance"], 20'000);
  EXPECT_EQ(statement_page(http(), key(), w["publicId"], "")["closingBalance"], 20'000)
      << "the default window is now";
  EXPECT_EQ(
      statement_page(http(), key(), w["publicId"], "from=2000-01-01T00:00:00%2B01:00")["closingBalance"],
      20'000);
  const HttpResult csv = http().get(
      "/v1/virtual-accounts/" + w["publicId"].get<std::string>() + "/statement?from=2999-01-01&format=csv",
      key());
  EXPECT_EQ(csv.body,
            "createdAt,reference,transaction,entry,amount,fee,narration,counterparty,balanceAfter\r\n");
}

TEST_F(Statements, RefusesBadWindowsAndUnknownWallets) {
  const json w = create_wallet(http(), key());
  const std::string base = "/v1/virtual-accounts/" + w["publicId"].get<std::string>();
  expect_constraint(http().get(base + "/statement?from=yesterday", key()), "from", "isDateString",
                    "from must be a valid ISO 8601 date string");
  expect_validation(http().get(base + "/statement?from=2026-02-01&to=2026-01-01", key()), {"to"});
  expect_validation(http().get(base + "/statement?format=pdf", key()), {"format"});
  expect_validation(http().get(base + "/statement?perPage=1000", key()), {"perPage"});
  expect_validation(http().get(base + "/balance?at=2026-13-01", key()), {"at"});
  expect_error(http().get("/v1/virtual-accounts/vba-" + random_uuid() + "/statement", key()), 404,
               "Data not found");
  expect_error(http().get("/v1/virtual-accounts/vba-" + random_uuid() + "/balance", key()), 404,
               "Data not found");
  expect_error(http().get(base + "/statement"), 401, "Unauthorized");
}

// A statement without its `to`, which is "now" when the request leaves it open.
json without_end(json statement) {
  statement.erase("to");
  return statement;
}

// The statements of `wallets`, in full, as JSON (without its end) and CSV (without its header's
// file name, which names the end).
std::map<std::string, std::pair<json, std::string>> statements_of(HttpClient& http, const std::string& key,
                                                                  const std::vector<std::string>& wallets) {
  std::map<std::string, std::pair<json, std::string>> out;
  for (const std::string& w : wallets)
    out[w] = {without_end(check_wallet(http, key, w)),
              http.get("/v1/virtual-accounts/" + w + "/statement?" + std::string(kSince) + "&format=csv", key)
                  .body};
  return out;
}

TEST(StatementsRestart, HoldAfterKill9MidLoadAndAfterTheViewsAreRebuilt) {
  KoboProcess server(kobo_options());
  const std::string key = server.test_key();
  std::vector<std::string> wallets;
  for (int i = 0; i < 3; ++i) {
    const json w = create_wallet(server.client(), key);
    fund(server.client(), key, w, 2'000'000);
    wallets.push_back(w["publicId"]);
  }
  const auto before = statements_of(server.client(), key, wallets);
  // Transfers in flight from another thread when the server is killed.
  std::atomic<bool> stop{false};
  std::thread load([&] {
    HttpClient http("127.0.0.1", server.port(), std::chrono::milliseconds(2'000));
    for (int i = 0; !stop.load(); ++i) {
      try {
        http.post("/v1/transactions/transfer",
                  transfer_body(wallets[i % 3], wallets[(i + 1) % 3], 10'000 + i, unique_name("k9")), key);
      } catch (const std::exception&) {
        return;  // the server is gone
      }
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  server.kill9();
  stop.store(true);
  load.join();
  server.start();
  const auto after = statements_of(server.client(), key, wallets);
  for (const std::string& w : wallets) {
    const json& old_lines = before.at(w).first["lines"];
    const json& new_lines = after.at(w).first["lines"];
    ASSERT_GE(new_lines.size(), old_lines.size());
    for (std::size_t i = 0; i < old_lines.size(); ++i)
      EXPECT_EQ(new_lines[i], old_lines[i]) << w << " line " << i;
    EXPECT_GT(new_lines.size(), 1u) << "the load moved money";
  }
  ASSERT_EQ(server.terminate(), 0) << server.log_tail();

  std::vector<std::string> args{"replay", "--data-dir", server.data_dir().string()};
  if (const std::string brokers = kobo::testing::test_kafka_brokers(); !brokers.empty())
    for (std::string arg :
         {std::string("--kafka-brokers"), brokers, std::string("--kafka-topic"), server.kafka_topic()})
      args.push_back(std::move(arg));
  const auto r = run_kobo(KOBO_BINARY, args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  server.start();
  const auto rebuilt = statements_of(server.client(), key, wallets);
  for (const std::string& w : wallets) {
    EXPECT_EQ(rebuilt.at(w).first, after.at(w).first) << w;
    EXPECT_EQ(rebuilt.at(w).second, after.at(w).second) << w;
  }
}

}  // namespace
}  // namespace kobo::it
