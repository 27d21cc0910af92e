#pragma once
// The service in process for the fuzz targets that go past the HTTP parser: the writer, the
// projector and the API's routes on a fresh data dir under $TMPDIR (embedded log, fsync off),
// with one business whose keys are fixed so that seed inputs can authenticate.
//
// One Service per process, created on first use and never destroyed (libFuzzer exits without
// unwinding; fuzz/run.sh removes the data dirs). call() is blocking and is used from the fuzzer's
// one thread.

#include <string_view>

#include "query-api/http_server.h"

namespace kobo::fuzz {

inline constexpr std::string_view kTestKey = "sk_test_1111111111111111111111111111111111111111";
inline constexpr std::string_view kLiveKey = "sk_live_2222222222222222222222222222222222222222";
inline constexpr std::string_view kAdminKey = "fuzz-admin-key";
inline constexpr std::string_view kAccountId = "acc-00000000-0000-4000-8000-000000000002";

// Dispatches `request` through the router of `kobo serve` and waits for its answer. A handler
// that answers 500, never answers, or answers twice is a bug: it aborts, so libFuzzer reports it.
http::Response call(http::Request&& request);

}  // namespace kobo::fuzz
