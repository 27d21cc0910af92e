// Statements and balance history (extensions section 4): GET /v1/virtual-accounts/{id}/statement
// (JSON, a page of lines; or CSV, the whole window streamed) and GET
// /v1/virtual-accounts/{id}/balance. Read from the wallets' statements in the views
// (projection/statements.h): a page costs O(log n + page), and a CSV holds one piece in memory.

#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <memory>

#include "common/json_dump.h"
#include "projection/statements.h"
#include "query-api/answer.h"
#include "query-api/envelope.h"

namespace kobo::api {
namespace {

using http::PathParams;
using http::Request;
using http::Responder;
using nlohmann::json;

// The window a statement covers when the request names no bound: the last 30 days.
constexpr UnixMs kDefaultWindowMs = 30 * kMsPerDay;
// Lines of a CSV statement read and written at once: what a streamed statement holds in memory.
constexpr std::uint64_t kCsvPieceLines = 512;

// Two decimal digits at `at` of `s`, or -1.
int two_digits(std::string_view s, std::size_t at) {
  if (at + 2 > s.size() || s[at] < '0' || s[at] > '9' || s[at + 1] < '0' || s[at + 1] > '9') return -1;
  return (s[at] - '0') * 10 + (s[at + 1] - '0');
}

// An ISO 8601 date (its first millisecond, UTC), or an RFC 3339 date-time: `T`, hours, minutes,
// seconds, an optional fraction (milliseconds count, finer digits are dropped), `Z` or an offset.
std::optional<UnixMs> parse_time(std::string_view s) {
  if (s.size() < 10) return std::nullopt;
  const auto day = parse_date(s.substr(0, 10));
  if (!day || s.size() == 10) return day;
  if ((s[10] != 'T' && s[10] != 't') || s.size() < 20 || s[13] != ':' || s[16] != ':') return std::nullopt;
  const int hh = two_digits(s, 11), mm = two_digits(s, 14), ss = two_digits(s, 17);
  if (hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 60) return std::nullopt;  // 60: a leap second
  UnixMs t = *day + hh * 3'600'000LL + mm * 60'000LL + ss * 1000LL;
  std::size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    ++i;
    const std::size_t digits = i;
    UnixMs ms = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i)
      if (i - digits < 3) ms = ms * 10 + (s[i] - '0');
    if (i == digits) return std::nullopt;
    for (std::size_t k = std::min<std::size_t>(i - digits, 3); k < 3; ++k) ms *= 10;
    t += ms;
  }
  if (i + 1 == s.size() && (s[i] == 'Z' || s[i] == 'z')) return t;
  if (i + 6 != s.size() || (s[i] != '+' && s[i] != '-') || s[i + 3] != ':') return std::nullopt;
  const int oh = two_digits(s, i + 1), om = two_digits(s, i + 4);
  if (oh < 0 || oh > 23 || om < 0 || om > 59) return std::nullopt;
  const UnixMs offset = oh * 3'600'000LL + om * 60'000LL;
  return s[i] == '+' ? t - offset : t + offset;
}

// Reads a time parameter; on a malformed one, records the validation error and returns nullopt.
std::optional<UnixMs> time_param(const http::QueryValidator& q, const char* name, json& errors) {
  const auto text = q.text(name);
  if (!text) return std::nullopt;
  const auto t = parse_time(*text);
  if (!t) errors[name]["isDateString"] = std::string(name) + " must be a valid ISO 8601 date string";
  return t;
}

// "now" for a bound the request leaves open: everything already applied, this millisecond's too.
UnixMs open_end() { return now_ms() + 1; }

json counterparty_json(const render::StatementLine::Counterparty& c) {
  return json{{"publicId", c.public_id},
              {"accountName", c.account_name},
              {"accountNumber", c.account_number},
              {"bankName", c.bank_name}};
}

// The amount a line shows: its movement less the fee a payout's debit adds.
std::int64_t line_amount(const StatementEntry& s) {
  return std::llabs(s.row.amount.value) - s.line.fee.value;
}

json line_json(const StatementEntry& s) {
  return json{{"transaction", s.line.transaction.value},
              {"reference", s.line.reference},
              {"createdAt", format_iso8601(s.line.created)},
              {"entry", to_string(s.line.entry)},
              {"amount", line_amount(s)},
              {"fee", s.line.fee.value},
              {"narration", s.line.narration},
              {"counterparty", counterparty_json(s.line.counterparty)},
              {"balanceAfter", s.row.balance.value}};
}

// Whether text in a CSV field makes it quoted (RFC 4180): a comma, a quote or a line break.
bool needs_quotes(std::string_view text) { return text.find_first_of(",\"\r\n") != std::string_view::npos; }

// Text a spreadsheet would run as a formula.
bool formula(std::string_view text) {
  return !text.empty() && (text[0] == '=' || text[0] == '+' || text[0] == '-' || text[0] == '@' ||
                           text[0] == '\t' || text[0] == '\r');
}

void escaped(std::string& out, std::string_view text) {
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
}

// One CSV field (RFC 4180) made of `parts`, written as they are: quoted when it holds a comma, a
// quote or a line break. Text that a spreadsheet would run as a formula (starting with = + - @ or
// a tab) is prefixed with ' (OWASP).
void csv_text(std::string& out, std::initializer_list<std::string_view> parts) {
  bool quoted = false;
  for (const std::string_view p : parts) quoted = quoted || needs_quotes(p);
  if (quoted) out += '"';
  if (formula(*parts.begin())) out += '\'';
  for (const std::string_view p : parts) {
    if (quoted)
      escaped(out, p);
    else
      out += p;
  }
  if (quoted) out += '"';
}

void csv_number(std::string& out, std::int64_t n) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof buf, n).ptr;
  out.append(buf, end);
}

// "accountName (bankName accountNumber)".
void csv_line(std::string& out, const StatementEntry& s) {
  out += format_iso8601(s.line.created);
  out += ',';
  csv_text(out, {s.line.reference});
  out += ',';
  out += s.line.transaction.value;
  out += ',';
  out += to_string(s.line.entry);
  out += ',';
  csv_number(out, line_amount(s));
  out += ',';
  csv_number(out, s.line.fee.value);
  out += ',';
  csv_text(out, {s.line.narration});
  out += ',';
  const auto& c = s.line.counterparty;
  csv_text(out, {c.account_name, " (", c.bank_name, " ", c.account_number, ")"});
  out += ',';
  csv_number(out, s.row.balance.value);
  out += "\r\n";
}

constexpr std::string_view kCsvHeader =
    "createdAt,reference,transaction,entry,amount,fee,narration,counterparty,balanceAfter\r\n";

// The window's lines as CSV, a piece at a time (http::BodyStream). Holds the views by reference:
// they outlive the server.
http::Response csv_statement(const Views& views, std::string wallet, const StatementWindow& w) {
  http::Response r;
  r.content_type = "text/csv; charset=utf-8";
  // statement-<wallet>-20261101T000000000Z-20261201T000000000Z.csv: no ':' for the file systems that refuse
  // it.
  const auto stamp = [](UnixMs t) {
    std::string s = format_iso8601(t);
    std::erase_if(s, [](char c) { return c == ':' || c == '-' || c == '.'; });
    return s;
  };
  r.headers.emplace_back("Content-Disposition", "attachment; filename=\"statement-" + wallet + "-" +
                                                    stamp(w.from) + "-" + stamp(w.to) + ".csv\"");
  struct Cursor {
    std::uint64_t next;
    std::uint64_t end;  // one past the last
    bool header = true;
  };
  auto cursor = std::make_shared<Cursor>(Cursor{w.first, w.first + w.count});
  r.stream = [&views, wallet = std::move(wallet), cursor](std::string& out) -> Result<bool> {
    if (cursor->header) {
      out += kCsvHeader;
      cursor->header = false;
    }
    const std::uint64_t n = std::min(kCsvPieceLines, cursor->end - cursor->next);
    out.reserve(out.size() + n * 256);
    const auto lines = Statements(views).lines(wallet, cursor->next, n, /*bulk=*/true);
    if (!lines) return lines.status();
    for (const StatementEntry& s : lines.value()) csv_line(out, s);
    cursor->next += n;
    return cursor->next < cursor->end;
  };
  return r;
}

void get_statement(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  http::QueryValidator q(req.query);
  json errors = json::object();
  auto from = time_param(q, "from", errors);
  auto to = time_param(q, "to", errors);
  const auto format = q.one_of("format", {"json", "csv"});
  const auto page = q.pagination();
  if (auto e = q.errors()) errors.update(*e);
  if (errors.empty()) {
    if (!to) to = from ? std::max(*from, open_end()) : open_end();
    if (!from) from = *to - kDefaultWindowMs;
    if (*from > *to) errors["to"]["minDate"] = "to must not be before from";
  }
  if (!errors.empty()) return respond(http::validation_error(errors));
  const bool csv =
      format ? *format == "csv" : req.header("accept").find("text/csv") != std::string_view::npos;
  p.barrier(*c, std::move(respond),
            [&p, scope = c->scope, wallet = params.at("id"), from = *from, to = *to, page, csv](Responder r) {
              const Statements statements(p.views());
              const auto window = statements.window(scope, wallet, from, to);
              if (!window) return r(unavailable(window.status()));
              if (!window.value()) return r(http::error(404, "Data not found"));
              const StatementWindow& w = *window.value();
              if (csv) return r(csv_statement(p.views(), wallet, w));
              const std::uint64_t skip = static_cast<std::uint64_t>(page.offset());
              const std::uint64_t count =
                  skip >= w.count
                      ? 0
                      : std::min<std::uint64_t>(static_cast<std::uint64_t>(page.per_page), w.count - skip);
              const auto lines = statements.lines(wallet, w.first + skip, count);
              if (!lines) return r(unavailable(lines.status()));
              json items = json::array();
              for (const StatementEntry& s : lines.value()) items.push_back(line_json(s));
              json data{{"wallet", wallet},
                        {"from", format_iso8601(w.from)},
                        {"to", format_iso8601(w.to)},
                        {"openingBalance", w.opening.value},
                        {"closingBalance", w.closing.value},
                        {"totalCredits", w.credits.value},
                        {"totalDebits", w.debits.value},
                        {"lines", std::move(items)}};
              r(http::ok_list(
                  data, http::Pagination{static_cast<std::int64_t>(w.count), page.per_page, page.page}));
            });
}

void get_balance(Protocol& p, Request&& req, const PathParams& params, Responder respond) {
  auto c = p.authenticate(req, respond);
  if (!c) return;
  http::QueryValidator q(req.query);
  json errors = json::object();
  const auto at = time_param(q, "at", errors);
  if (!errors.empty()) return respond(http::validation_error(errors));
  p.barrier(
      *c, std::move(respond),
      [&p, scope = c->scope, wallet = params.at("id"), at = at.value_or(open_end())](Responder r) {
        const auto balance = Statements(p.views()).balance_at(scope, wallet, at);
        if (!balance) return r(unavailable(balance.status()));
        if (!balance.value()) return r(http::error(404, "Data not found"));
        r(http::ok(
            200, json{{"wallet", wallet}, {"at", format_iso8601(at)}, {"balance", balance.value()->value}}));
      });
}

}  // namespace

void add_statement_routes(http::Router& router, const std::shared_ptr<Protocol>& protocol) {
  router.get("/v1/virtual-accounts/{id}/statement", route(protocol, get_statement));
  router.get("/v1/virtual-accounts/{id}/balance", route(protocol, get_balance));
}

}  // namespace kobo::api
