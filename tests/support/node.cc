#include "tests/support/node.h"

#include <rocksdb/db.h>

#include <stdexcept>
#include <utility>

namespace kobo::testing {

namespace {

NodeOptions with_partitions(NodeOptions options) {
  options.ledger.config.partitions = options.partitions;
  return options;
}

template <typename T>
T& part(const std::unique_ptr<T>& p, const char* what) {
  if (!p) throw std::logic_error(std::string("the node has no ") + what + " now");
  return *p;
}

}  // namespace

Node::Node(std::filesystem::path dir, NodeOptions options)
    : dir_(std::move(dir)),
      options_(with_partitions(std::move(options))),
      own_log_(std::make_unique<MemoryLog>(options_.partitions)),
      log_(*own_log_) {}

Node::Node(EventLog& log, std::filesystem::path dir, NodeOptions options)
    : dir_(std::move(dir)), options_(with_partitions(std::move(options))), log_(log) {}

Node::~Node() {
  stop();
  close_views();
}

Status Node::open_views() {
  if (views_) return {};
  auto opened = Views::open((dir_ / "views").string(), options_.partitions, options_.views_env);
  if (!opened) return opened.status();
  views_ = std::move(opened).value();
  return {};
}

Status Node::open() {
  if (!ledger_) ledger_ = std::make_unique<Ledger>(log_, options_.ledger);
  if (auto s = open_views(); !s) return s;
  if (!projector_) projector_ = std::make_unique<Projector>(log_, *views_, options_.projector);
  return {};
}

Status Node::start() {
  if (auto s = start_writer(); !s) return s;
  return start_projector();
}

Status Node::start_writer() {
  if (!ledger_) ledger_ = std::make_unique<Ledger>(log_, options_.ledger);
  return ledger_->start();
}

Status Node::start_projector() {
  if (auto s = open_views(); !s) return s;
  if (!projector_) projector_ = std::make_unique<Projector>(log_, *views_, options_.projector);
  return projector_->start();
}

void Node::stop() {
  stop_projector();
  ledger_.reset();
}

void Node::stop_projector() { projector_.reset(); }

void Node::close_views() {
  stop_projector();
  views_.reset();
}

Status Node::restart_writer() {
  ledger_.reset();
  return start_writer();
}

Status Node::restart_projector() {
  stop_projector();
  return start_projector();
}

bool Node::caught_up(std::chrono::milliseconds within) const {
  const Ledger& writer = part(ledger_, "writer");
  const Projector& projector = part(projector_, "projector");
  for (std::uint32_t p = 0; p < options_.partitions; ++p)
    if (!projector.wait_applied(Partition(p), writer.durable_seq(Partition(p)), within)) return false;
  return true;
}

MemoryLog& Node::memory_log() { return part(own_log_, "log of its own"); }
Ledger& Node::ledger() { return part(ledger_, "writer"); }
Views& Node::views() { return part(views_, "views"); }
Projector& Node::projector() { return part(projector_, "projector"); }

std::map<std::string, std::string> view_rows(const Views& views) {
  std::map<std::string, std::string> out;
  std::unique_ptr<rocksdb::Iterator> it(views.db().NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) out[it->key().ToString()] = it->value().ToString();
  return out;
}

Result<std::unique_ptr<Views>> rebuilt_views(EventLog& log, const std::filesystem::path& dir) {
  auto views = Views::open(dir.string(), log.partitions());
  if (!views) return views.status();
  Projector fresh(log, *views.value());
  if (auto s = fresh.catch_up(); !s) return s;
  return std::move(views).value();
}

}  // namespace kobo::testing
