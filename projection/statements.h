#pragma once
// Statements: a wallet's movements and its balance at any time, from the views' statement rows
// (rows.h StatementRow, view_keys.h `h`), which the projector writes for every posting to a
// wallet (extensions section 4, docs/architecture.md section 5).
//
// A wallet's movements are numbered from 1 in log order, and their statement times never
// decrease, so a window of time is a range of numbers, found by two binary searches; each row
// carries the balance after it and the wallet's running credits, so a window's opening, closing
// and totals are read, not summed. A page costs O(log n + page) reads, whatever the history.
//
// Rows of a wallet's statement never change once written, and a WalletRow names only rows
// written with it or before: the reads of one request agree without a snapshot, and a statement
// read in pieces (a CSV) holds no lock between them.
// Thread safety: as Views' const reads; a Statements holds no state of its own.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/time.h"
#include "events/types.h"
#include "projection/render.h"
#include "projection/rows.h"
#include "projection/views.h"

namespace kobo {

// The movements of a wallet with statement times in [from, to): numbers [first, first + count).
struct StatementWindow {
  UnixMs from = 0;
  UnixMs to = 0;
  std::uint64_t first = 1;
  std::uint64_t count = 0;
  Kobo opening;  // the balance before the window's first movement (after every movement before `from`)
  Kobo closing;  // opening + credits - debits
  Kobo credits;
  Kobo debits;
};

// One line of a statement: the movement as the views store it and as it shows.
struct StatementEntry {
  std::uint64_t number = 0;
  rows::StatementRow row;
  render::StatementLine line;
};

class Statements {
 public:
  explicit Statements(const Views& views) : views_(views) {}

  // The window [from, to) of wallet `wallet` (vba-…); nullopt when `scope` has no such wallet.
  [[nodiscard]] Result<std::optional<StatementWindow>> window(const Scope& scope, std::string_view wallet,
                                                              UnixMs from, UnixMs to) const;
  // Movements number `first` to `first + count - 1` of the wallet, rendered; they must exist (a
  // window's). At most kLinesMax at once. `bulk`: a piece of a long read (a CSV export), whose
  // blocks do not go into the views' block cache, so it neither grows the process to the cache's
  // size nor evicts what other reads keep hot.
  [[nodiscard]] Result<std::vector<StatementEntry>> lines(std::string_view wallet, std::uint64_t first,
                                                          std::uint64_t count, bool bulk = false) const;
  static constexpr std::uint64_t kLinesMax = 1000;
  // The balance after every movement before `at`; nullopt when `scope` has no such wallet. A
  // wallet holds 0 before its first movement (and before it opened).
  [[nodiscard]] Result<std::optional<Kobo>> balance_at(const Scope& scope, std::string_view wallet,
                                                       UnixMs at) const;

 private:
  // The wallet's row when it is of `scope`.
  Result<std::optional<rows::WalletRow>> wallet_row(const Scope& scope, std::string_view wallet) const;
  Result<rows::StatementRow> row(std::string_view wallet, std::uint64_t number) const;
  // How many of the wallet's first `movements` movements have a statement time before `t`.
  Result<std::uint64_t> movements_before(std::string_view wallet, std::uint64_t movements, UnixMs t) const;

  const Views& views_;
};

}  // namespace kobo
