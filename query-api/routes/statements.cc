// Statements and balance history (extensions section 4): GET /v1/virtual-accounts/{id}/statement
// (JSON, a page of lines; or CSV, the whole window streamed) and GET
// /v1/virtual-accounts/{id}/balance. Read from the wallets' statements in the views
// (projection/statements.h): a page costs O(log n + page), and a CSV holds one piece in memory.
// Their shapes are render.h's.

#include <memory>

#include "projection/render.h"
#include "projection/statements.h"
#include "query-api/envelope.h"
#include "query-api/route.h"

namespace kobo::api {
namespace {

// The window a statement covers when the request names no bound: the last 30 days.
constexpr UnixMs kDefaultWindowMs = 30 * kMsPerDay;
// Lines of a CSV statement read and written at once: what a streamed statement holds in memory.
constexpr std::uint64_t kCsvPieceLines = 512;

// "now" for a bound the request leaves open: everything already applied, this millisecond's too.
UnixMs open_end() { return now_ms() + 1; }

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
      out += render::kStatementCsvHeader;
      cursor->header = false;
    }
    const std::uint64_t n = std::min(kCsvPieceLines, cursor->end - cursor->next);
    out.reserve(out.size() + n * 256);
    const auto lines = Statements(views).lines(wallet, cursor->next, n, /*bulk=*/true);
    if (!lines) return lines.status();
    for (const StatementEntry& s : lines.value()) render::statement_line_csv(out, s.line, s.row);
    cursor->next += n;
    return cursor->next < cursor->end;
  };
  return r;
}

struct StatementQuery {
  UnixMs from = 0;
  UnixMs to = 0;
  http::PageRequest page;
  bool csv = false;
};

StatementQuery statement_query(const Exchange& x, http::QueryValidator& q) {
  StatementQuery s;
  auto from = q.time("from");
  auto to = q.time("to");
  const auto format = q.one_of("format", {"json", "csv"});
  s.page = q.pagination();
  if (q.ok()) {
    if (!to) to = from ? std::max(*from, open_end()) : open_end();
    if (!from) from = *to - kDefaultWindowMs;
    if (*from > *to) q.refuse("to", "minDate", "to must not be before from");
    s.from = *from;
    s.to = *to;
  }
  s.csv = format ? *format == "csv" : x.request.header("accept").find("text/csv") != std::string_view::npos;
  return s;
}

http::Response statement(const Exchange& x, const StatementQuery& q) {
  const std::string& wallet = x.param("id");
  const Statements statements(x.views());
  const auto window = statements.window(x.caller.scope, wallet, q.from, q.to);
  if (!window) return unavailable(window.status());
  if (!window.value()) return http::error(404, "Data not found");
  const StatementWindow& w = *window.value();
  if (q.csv) return csv_statement(x.views(), wallet, w);
  const auto skip = static_cast<std::uint64_t>(q.page.offset());
  const std::uint64_t count =
      skip >= w.count ? 0
                      : std::min<std::uint64_t>(static_cast<std::uint64_t>(q.page.per_page), w.count - skip);
  const auto lines = statements.lines(wallet, w.first + skip, count);
  if (!lines) return unavailable(lines.status());
  std::string text;
  JsonWriter writer(text);
  writer.begin_array();
  for (const StatementEntry& s : lines.value()) render::statement_line_json(writer, s.line, s.row);
  writer.end_array();
  const render::StatementTotals totals{w.from, w.to, w.opening, w.closing, w.credits, w.debits};
  return http::ok_list_text(
      render::statement_page(wallet, totals, text),
      http::Pagination{static_cast<std::int64_t>(w.count), q.page.per_page, q.page.page});
}

struct BalanceQuery {
  UnixMs at = 0;
};

http::Response balance(const Exchange& x, const BalanceQuery& q) {
  const std::string& wallet = x.param("id");
  const auto balance = Statements(x.views()).balance_at(x.caller.scope, wallet, q.at);
  if (!balance) return unavailable(balance.status());
  if (!balance.value()) return http::error(404, "Data not found");
  return http::ok_text(200, render::balance(wallet, q.at, *balance.value()));
}

}  // namespace

void add_statement_routes(Routes& routes) {
  routes.read(ReadRoute<StatementQuery>{.path = "/v1/virtual-accounts/{id}/statement",
                                        .traits = {.kind = RouteKind::read, .cost = ReadCost::heavy},
                                        .query = statement_query,
                                        .read = statement});
  routes.read(ReadRoute<BalanceQuery>{
      .path = "/v1/virtual-accounts/{id}/balance",
      .query = [](const Exchange&,
                  http::QueryValidator& q) { return BalanceQuery{q.time("at").value_or(open_end())}; },
      .read = balance});
}

}  // namespace kobo::api
