// The ports the test servers keep across restarts (tests/support/port_lease.h).
#include "tests/support/port_lease.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

namespace kobo::testing {
namespace {

struct Ephemeral {
  int low = 0;
  int high = 0;
};

Ephemeral ephemeral_range() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  Ephemeral r;
  in >> r.low >> r.high;
  return r;
}

// A listener on 127.0.0.1:port, bound as kobo serve's is (SO_REUSEADDR: a port that another test's
// server left with connections in TIME_WAIT is free to it), closed with the object.
struct Listener {
  explicit Listener(std::uint16_t port) : fd(::socket(AF_INET, SOCK_STREAM, 0)) {
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 && ::listen(fd, 1) == 0;
  }
  ~Listener() { ::close(fd); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  int fd;
  bool bound = false;
};

TEST(PortLease, LeasesAreDistinctListenableAndBelowTheEphemeralRange) {
  const PortLease::Range range = PortLease::leasable();
  ASSERT_GT(range.count, 0);
  const Ephemeral e = ephemeral_range();
  ASSERT_GT(e.low, 0);
  if (e.low > 2048) {
    EXPECT_EQ(range.first + range.count, e.low) << "the range ends where the kernel's own begins";
  } else if (e.high < 64512) {
    EXPECT_EQ(range.first, e.high + 1) << "the range begins where the kernel's own ends";
  }
  std::vector<PortLease> leases;
  std::set<std::uint16_t> ports;
  for (int i = 0; i < 32; ++i) {
    leases.push_back(PortLease::take());
    const std::uint16_t port = leases.back().port();
    EXPECT_TRUE(ports.insert(port).second) << "port " << port << " leased twice";
    EXPECT_GE(port, range.first);
    EXPECT_LT(port, range.first + range.count);
    EXPECT_TRUE(Listener(port).bound) << "a leased port is free to listen on: " << port;
  }
}

// Two unprivileged ports outside the leasable range and the kernel's, which no other test leases
// and no connection takes; nullopt on a machine whose ranges leave none.
std::optional<PortLease::Range> two_quiet_ports() {
  const PortLease::Range leasable = PortLease::leasable();
  const Ephemeral e = ephemeral_range();
  const int below = leasable.first - 100;
  const int above = leasable.first + leasable.count + 100;
  const auto quiet = [&](int port) {
    return port >= 1024 && port + 1 <= 65535 && (port + 1 < e.low || port > e.high);
  };
  if (quiet(below)) return PortLease::Range{static_cast<std::uint16_t>(below), 2};
  if (quiet(above)) return PortLease::Range{static_cast<std::uint16_t>(above), 2};
  return std::nullopt;
}

TEST(PortLease, AHeldPortIsLeasedAgainOnlyOnceGivenBack) {
  const auto quiet = two_quiet_ports();
  if (!quiet) GTEST_SKIP() << "no quiet ports beside the ephemeral and leasable ranges";
  const PortLease::Range range = *quiet;
  std::optional<PortLease> a(PortLease::take(range));
  const PortLease b = PortLease::take(range);
  EXPECT_NE(a->port(), b.port());
  EXPECT_THROW(PortLease::take(range), std::runtime_error) << "both ports are held";
  const std::uint16_t given_back = a->port();
  a.reset();
  EXPECT_EQ(PortLease::take(range).port(), given_back);
  PortLease moved = PortLease::take(range);
  const PortLease kept = std::move(moved);
  EXPECT_EQ(kept.port(), given_back);
  EXPECT_THROW(PortLease::take(range), std::runtime_error) << "a moved lease still holds its port";
}

TEST(PortLease, APortAnotherProgramListensOnIsSkipped) {
  const auto quiet = two_quiet_ports();
  if (!quiet) GTEST_SKIP() << "no quiet ports beside the ephemeral and leasable ranges";
  const PortLease::Range range = *quiet;
  const Listener other(range.first);
  ASSERT_TRUE(other.bound);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(PortLease::take(range).port(), range.first + 1);
  EXPECT_THROW(PortLease::take({range.first, 1}), std::runtime_error);
}

TEST(PortLease, APortAServerLeftInTimeWaitIsLeasedAndListenable) {
  const auto quiet = two_quiet_ports();
  if (!quiet) GTEST_SKIP() << "no quiet ports beside the ephemeral and leasable ranges";
  const std::uint16_t port = quiet->first;
  {
    // A server that closes an accepted connection first keeps the port in TIME_WAIT for a minute.
    const Listener server(port);
    ASSERT_TRUE(server.bound);
    const int client = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(client, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    const int accepted = ::accept(server.fd, nullptr, nullptr);
    ASSERT_GE(accepted, 0);
    ::close(accepted);
    ::close(client);
  }
  const PortLease lease = PortLease::take({port, 1});
  EXPECT_EQ(lease.port(), port);
  EXPECT_TRUE(Listener(port).bound) << "the next server binds it as kobo serve does";
}

}  // namespace
}  // namespace kobo::testing
