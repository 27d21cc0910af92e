// A log written by event contract v1 is refused, naming the version found (docs/architecture.md section 4):
// there are no deployments of v1 and no migration, so `kobo serve`, `audit`, `replay` and
// `events` each stop with a clear message instead of misreading it.

#include <gtest/gtest.h>

#include <filesystem>

#include "events/embedded_log.h"
#include "tests/audit/run_kobo.h"
#include "tests/support/scratch_dir.h"

namespace kobo {
namespace {

namespace fs = std::filesystem;
using kobo::testing::run_kobo;

// The first event of a v1 log, as a v1 writer stored it (its hash is v1's, over these bytes).
constexpr std::string_view kV1WriterStarted =
    R"({"hash":"c615d555b9ca5b1e8da1a408bf8d3ca89f05cec599897f9b5967a09e49e5ef59","business":"","commandSeq":1,)"
    R"("commandSize":1,"data":{"epoch":1},"epoch":1,"live":false,"partition":0,)"
    R"("prevHash":"0000000000000000000000000000000000000000000000000000000000000000","schemaVersion":1,"seq":1,)"
    R"("time":"2026-11-21T09:51:45.993Z","type":"WriterStarted"})";

class V1Log : public ::testing::Test {
 protected:
  void SetUp() override {
    EmbeddedLogOptions o;
    o.path = (dir_ / "log").string();
    o.partitions = 6;
    auto log = open_embedded_log(o);
    ASSERT_TRUE(log.ok()) << log.status().message();
    const EncodedEvent v1{Partition(0), Seq(1), EventType::writer_started,
                          "",           0,      std::string(kV1WriterStarted)};
    ASSERT_TRUE(log.value()->append(std::span(&v1, 1)).ok());
  }
  void expect_refused(std::vector<std::string> args) {
    args.push_back("--data-dir");
    args.push_back(dir_.string());
    const auto r = run_kobo(KOBO_BINARY, args);
    EXPECT_NE(r.exit_code, 0) << args[0] << ": " << r.output;
    EXPECT_NE(r.output.find("schemaVersion 1 is not supported"), std::string::npos)
        << args[0] << ": " << r.output;
  }

  // A log of another format: never among the data dirs an integration run keeps for its audit.
  kobo::testing::ScratchDir scratch_{"v1-log", kobo::testing::ScratchDir::Keep::on_failure};
  const fs::path dir_ = scratch_.path();
};

TEST_F(V1Log, ServeRefusesIt) { expect_refused({"serve", "--listen", "127.0.0.1:0"}); }
TEST_F(V1Log, EventsRefusesIt) { expect_refused({"events"}); }
TEST_F(V1Log, AuditRefusesIt) { expect_refused({"audit"}); }
TEST_F(V1Log, ReplayRefusesIt) { expect_refused({"replay"}); }

}  // namespace
}  // namespace kobo
