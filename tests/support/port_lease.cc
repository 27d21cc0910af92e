#include "tests/support/port_lease.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

namespace kobo::testing {

namespace {

// Leases come from kLeasable ports beside the ephemeral range: below it (Linux's default range,
// 32768-60999, leaves 24576-32767), else above it.
constexpr int kLeasable = 8192;
constexpr int kLowestPort = 1024;   // below: the privileged ports
constexpr int kFewestPorts = 1024;  // fewer beside the range: lease inside it

struct Ephemeral {
  int low = 32768;  // Linux's default
  int high = 60999;
};

Ephemeral ephemeral_range() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  Ephemeral r;
  int low = 0;
  int high = 0;
  if (in >> low >> high && low >= 1 && low <= high && high <= 65535) r = Ephemeral{low, high};
  return r;
}

// The socket that holds port's lease, or -1 when another test holds it.
int hold(std::uint16_t port) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("PortLease: socket: ") + std::strerror(errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = "kobo-test-port-" + std::to_string(port);
  std::memcpy(addr.sun_path + 1, name.data(), name.size());  // sun_path[0] == 0: the abstract namespace
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), length) == 0) return fd;
  const int error = errno;
  ::close(fd);
  if (error == EADDRINUSE) return -1;
  throw std::runtime_error("PortLease: bind " + name + ": " + std::strerror(error));
}

// Whether a listener could bind 127.0.0.1:port now, as kobo serve's does (SO_REUSEADDR).
bool bindable(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

PortLease::Range PortLease::leasable() {
  const Ephemeral e = ephemeral_range();
  const int below_first = std::max(kLowestPort, e.low - kLeasable);
  const Range below{static_cast<std::uint16_t>(below_first), std::max(0, e.low - below_first)};
  const int above_count = std::min(kLeasable, 65535 - e.high);
  const Range above{static_cast<std::uint16_t>(std::min(e.high + 1, 65535)), std::max(0, above_count)};
  const Range& wider = below.count >= above.count ? below : above;
  if (wider.count >= kFewestPorts) return wider;
  // A range that leaves no room beside it: inside it, where the lease still keeps other tests'
  // leases off the port, though not the kernel's own choices.
  return Range{static_cast<std::uint16_t>(std::max(e.low, kLowestPort)),
               std::min(kLeasable, e.high - std::max(e.low, kLowestPort) + 1)};
}

PortLease PortLease::take(Range range) {
  if (range.count <= 0 || range.first + range.count > 65536)
    throw std::invalid_argument("PortLease: a bad range");
  // A random start: tests that start together probe different ports.
  std::random_device seed;
  const int start = std::uniform_int_distribution<int>(0, range.count - 1)(seed);
  for (int i = 0; i < range.count; ++i) {
    const auto port = static_cast<std::uint16_t>(range.first + (start + i) % range.count);
    const int guard = hold(port);
    if (guard < 0) continue;
    if (bindable(port)) return PortLease(port, guard);
    ::close(guard);  // another program listens there
  }
  throw std::runtime_error("PortLease: no free port in 127.0.0.1:" + std::to_string(range.first) + "-" +
                           std::to_string(range.first + range.count - 1));
}

PortLease::PortLease(PortLease&& other) noexcept
    : port_(std::exchange(other.port_, 0)), guard_(std::exchange(other.guard_, -1)) {}

PortLease& PortLease::operator=(PortLease&& other) noexcept {
  if (this != &other) {
    if (guard_ >= 0) ::close(guard_);
    port_ = std::exchange(other.port_, 0);
    guard_ = std::exchange(other.guard_, -1);
  }
  return *this;
}

PortLease::~PortLease() {
  if (guard_ >= 0) ::close(guard_);
}

}  // namespace kobo::testing
