#include "query-api/positions.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <charconv>
#include <vector>

#include "common/assert.h"
#include "common/metrics.h"
#include "query-api/envelope.h"

namespace kobo::api {
namespace {

constexpr std::string_view kPrefix = "k1";
constexpr std::size_t kMaxToken = std::size_t{64} * 1024;

metrics::Histogram& position_wait_seconds() {
  static metrics::Histogram& h = metrics::registry().histogram(
      "kobo_position_wait_seconds", "How long reads with a Kobo-Position token waited for the views");
  return h;
}

// The answer to a read that sent a token says how long it waited for the views, in the standard
// Server-Timing header (`kobo-position;dur=<ms>`), and the wait is counted in
// kobo_position_wait_seconds: what a client's latency is made of, told apart from the network.
http::Responder timed(http::Responder respond, std::chrono::steady_clock::time_point since) {
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  KOBO_ASSERT(waited >= 0, "a steady clock does not go back");
  position_wait_seconds().observe(waited);
  char ms[32];
  const auto [end, ec] = std::to_chars(ms, ms + sizeof ms, waited * 1000, std::chars_format::fixed, 3);
  KOBO_ASSERT(ec == std::errc(), "a wait of a few seconds fits 32 characters");
  return [respond = std::move(respond),
          header = "kobo-position;dur=" + std::string(ms, end)](http::Response r) mutable {
    r.headers.emplace_back("Server-Timing", std::move(header));
    respond(std::move(r));
  };
}

http::Response with_retry(http::Response r) {
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

std::optional<std::uint64_t> number(std::string_view text) {
  if (text.empty() || text.size() > 20 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

std::string format_positions(const Positions& positions) {
  std::string out(kPrefix);
  for (const auto& [p, seq] : positions) {
    if (seq == 0) continue;
    out += '.';
    out += std::to_string(p);
    out += '-';
    out += std::to_string(seq);
  }
  return out;
}

std::optional<Positions> parse_positions(std::string_view token, std::uint32_t partitions) {
  if (token.size() > kMaxToken || !token.starts_with(kPrefix)) return std::nullopt;
  token.remove_prefix(kPrefix.size());
  Positions out;
  std::int64_t last = -1;
  while (!token.empty()) {
    if (token[0] != '.') return std::nullopt;
    token.remove_prefix(1);
    const auto end = token.find('.');
    const std::string_view entry = token.substr(0, end);
    token = end == std::string_view::npos ? std::string_view() : token.substr(end);
    const auto dash = entry.find('-');
    if (dash == std::string_view::npos) return std::nullopt;
    const auto p = number(entry.substr(0, dash));
    const auto seq = number(entry.substr(dash + 1));
    if (!p || !seq || *p >= partitions || static_cast<std::int64_t>(*p) <= last) return std::nullopt;
    last = static_cast<std::int64_t>(*p);
    out[static_cast<std::uint32_t>(*p)] = *seq;
  }
  return out;
}

void merge_positions(Positions& into, const Positions& other) {
  for (const auto& [p, seq] : other) into[p] = std::max(into[p], seq);
}

PositionHooks::PositionHooks(Projector& projector, std::uint32_t partitions,
                             std::chrono::milliseconds read_wait)
    : projector_(projector), partitions_(partitions), read_wait_(read_wait) {}

PositionHooks::~PositionHooks() { pool_.join(); }

std::optional<http::Response> PositionHooks::admit(const RouteTraits&, const http::Request& request) {
  const std::string_view token = request.header(kPositionHeader);
  if (token.empty() || parse_positions(token, partitions_)) return std::nullopt;
  return http::error(400,
                     "Invalid Kobo-Position header: send back a token this service gave, as it was given");
}

void PositionHooks::command_answered(const Exchange& x, LogPosition at, http::Response& answer) {
  Positions positions = parse_positions(x.request.header(kPositionHeader), partitions_).value_or(Positions{});
  merge_positions(positions, Positions{{at.partition.value, at.seq.value}});
  answer.headers.emplace_back(std::string(kPositionHeader), format_positions(positions));
}

namespace {

// A wait for the views: the partitions still needed, one after another.
struct ViewsWait {
  Projector& projector;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> needed;
  std::size_t next = 0;
  std::chrono::steady_clock::time_point deadline;
  std::function<void(bool)> then;
};

void wait_next(const std::shared_ptr<ViewsWait>& w) {
  if (w->next == w->needed.size()) return w->then(true);
  const auto [p, seq] = w->needed[w->next];
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(w->deadline - std::chrono::steady_clock::now());
  w->projector.when_applied(Partition(p), Seq(seq), std::max(left, std::chrono::milliseconds(0)),
                            [w](bool applied) {
                              if (!applied) return w->then(false);
                              ++w->next;
                              wait_next(w);
                            });
}

}  // namespace

bool views_have(const Projector& projector, const Positions& positions) {
  return std::all_of(positions.begin(), positions.end(), [&](const auto& position) {
    return projector.applied_seq(Partition(position.first)).value >= position.second;
  });
}

void wait_for_views(Projector& projector, const Positions& positions, std::chrono::milliseconds wait,
                    std::function<void(bool)> then) {
  std::vector<std::pair<std::uint32_t, std::uint64_t>> needed;
  for (const auto& [p, seq] : positions)
    if (projector.applied_seq(Partition(p)).value < seq) needed.emplace_back(p, seq);
  if (needed.empty()) return then(true);  // applied since the caller looked
  wait_next(std::make_shared<ViewsWait>(
      ViewsWait{projector, std::move(needed), 0, std::chrono::steady_clock::now() + wait, std::move(then)}));
}

void PositionHooks::before_read(const Exchange& x, http::Responder respond,
                                std::function<void(http::Responder)> then) {
  const auto positions = parse_positions(x.request.header(kPositionHeader), partitions_);
  if (!positions || positions->empty()) return then(std::move(respond));
  const auto since = std::chrono::steady_clock::now();
  if (views_have(projector_, *positions)) return then(timed(std::move(respond), since));
  struct Read {
    http::Responder respond;
    std::function<void(http::Responder)> then;
    std::chrono::steady_clock::time_point since;
  };
  auto r = std::make_shared<Read>(Read{std::move(respond), std::move(then), since});
  wait_for_views(projector_, *positions, read_wait_, [this, r](bool applied) {
    auto timed_respond = timed(std::move(r->respond), r->since);
    if (!applied) return timed_respond(with_retry(http::error(503, "Service unavailable")));
    // Called back on the projector's thread: the read goes on on the pool.
    boost::asio::post(pool_, [r, rs = std::move(timed_respond)]() mutable { r->then(std::move(rs)); });
  });
}

void PositionHooks::read_answered(const Exchange&, http::Response& answer) {
  answer.headers.emplace_back(std::string(kPositionHeader), views_token());
}

std::string PositionHooks::views_token() const {
  Positions positions;
  for (std::uint32_t p = 0; p < partitions_; ++p) positions[p] = projector_.applied_seq(Partition(p)).value;
  return format_positions(positions);
}

}  // namespace kobo::api
