#include "tests/audit/log_surgery.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <stdexcept>

#include "common/crypto.h"

namespace kobo::testing {

namespace fs = std::filesystem;

namespace {

std::string key(std::uint32_t p, std::uint64_t offset) {
  std::string k(1, 'e');
  for (int i = 3; i >= 0; --i) k.push_back(static_cast<char>((p >> (8 * i)) & 0xff));
  for (int i = 7; i >= 0; --i) k.push_back(static_cast<char>((offset >> (8 * i)) & 0xff));
  return k;
}

void check(const rocksdb::Status& s, const std::string& what) {
  if (!s.ok()) throw std::runtime_error("LogSurgery: " + what + ": " + s.ToString());
}

}  // namespace

LogSurgery::LogSurgery(const fs::path& log_dir) {
  rocksdb::Options o;
  rocksdb::DB* raw = nullptr;
  check(rocksdb::DB::Open(o, log_dir.string(), &raw), "open " + log_dir.string());
  db_.reset(raw);
  std::string n;
  check(db_->Get(rocksdb::ReadOptions(), "m:partitions", &n), "partitions");
  partitions_ = static_cast<std::uint32_t>(std::stoul(n));
}

LogSurgery::~LogSurgery() = default;

std::vector<std::string> LogSurgery::records(std::uint32_t p) const {
  std::vector<std::string> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  const std::string prefix = key(p, 0).substr(0, 5);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next())
    out.push_back(it->value().ToString());
  check(it->status(), "scan");
  return out;
}

void LogSurgery::rewrite(std::uint32_t p, const std::vector<std::string>& records) {
  rocksdb::WriteBatch wb;
  check(wb.DeleteRange(key(p, 0), key(p + 1, 0)), "delete");
  for (std::uint64_t i = 0; i < records.size(); ++i) check(wb.Put(key(p, i), records[i]), "put");
  rocksdb::WriteOptions wo;
  wo.sync = true;
  check(db_->Write(wo, &wb), "write");
}

namespace {

// A wallet transfer's bytes with its credit posting's amount changed in place, as a forger
// would: nothing else moves.
std::string edited_transfer(const std::string& record, std::int64_t amount) {
  auto e = decode_event(record);
  if (!e) throw std::runtime_error("edited_transfer: " + e.status().message());
  const auto* transfer = std::get_if<WalletTransferSettled>(&e.value().data);
  if (transfer == nullptr) throw std::runtime_error("edited_transfer: not a wallet transfer");
  const Posting& credit = transfer->postings.at(1);
  const std::string was =
      "{\"account\":\"" + credit.account + "\",\"amount\":" + std::to_string(credit.amount.value) + ",";
  const std::string now =
      "{\"account\":\"" + credit.account + "\",\"amount\":" + std::to_string(amount) + ",";
  std::string bytes = record;
  const auto at = bytes.find(was);
  if (at == std::string::npos)
    throw std::runtime_error("edited_transfer: the credit posting is not where it should be");
  bytes.replace(at, was.size(), now);
  return bytes;
}

}  // namespace

std::string with_amount_unsealed(const std::string& record, std::int64_t amount) {
  return edited_transfer(record, amount);
}

// `edited` with a hash of its own: the wire form is {"hash":"<64 hex>",<body>, and the hash is
// over prevHash, "{" and the body.
std::string resealed(const std::string& edited, const std::string& prev_hash) {
  const std::string body = edited.substr(edited.find("\",") + 2);
  return "{\"hash\":\"" + to_hex(sha256({prev_hash, "{", body})) + "\"," + body;
}

std::string with_amount_resealed(const std::string& record, std::int64_t amount) {
  return resealed(edited_transfer(record, amount), decode_event(record).value().prev_hash);
}

void copy_data_dir(const fs::path& from, const fs::path& to) {
  if (fs::exists(to)) throw std::runtime_error("copy_data_dir: " + to.string() + " exists");
  fs::copy(from, to, fs::copy_options::recursive);
}

RecordAt find_wallet_transfer(const LogSurgery& log) {
  for (std::uint32_t p = 0; p < log.partitions(); ++p) {
    const auto records = log.records(p);
    for (std::size_t o = 1; o + 1 < records.size(); ++o) {
      auto e = decode_event(records[o]);
      if (e && e->type() == EventType::wallet_transfer_settled) return RecordAt{p, o, e->seq.value};
    }
  }
  throw std::runtime_error("find_wallet_transfer: the log has no wallet transfer");
}

const char* to_string(Tamper t) {
  switch (t) {
    case Tamper::edit_amount:
      return "edit_amount";
    case Tamper::edit_amount_resealed:
      return "edit_amount_resealed";
    case Tamper::drop:
      return "drop";
    case Tamper::swap:
      return "swap";
    case Tamper::insert:
      return "insert";
  }
  return "?";
}

RecordAt tamper(LogSurgery& log, Tamper t) {
  const RecordAt at = find_wallet_transfer(log);
  auto records = log.records(at.partition);
  const auto where = records.begin() + static_cast<std::ptrdiff_t>(at.offset);
  const Event transfer = decode_event(records[at.offset]).value();
  const auto& x = std::get<WalletTransferSettled>(transfer.data);
  const std::int64_t amount = x.postings.at(1).amount.value;
  switch (t) {
    case Tamper::edit_amount:
      records[at.offset] = with_amount_unsealed(records[at.offset], amount + 1);
      break;
    case Tamper::edit_amount_resealed:
      records[at.offset] = with_amount_resealed(records[at.offset], amount + 1);
      break;
    case Tamper::drop:
      records.erase(where);
      break;
    case Tamper::swap:
      std::swap(records[at.offset], records[at.offset + 1]);
      break;
    case Tamper::insert: {
      Event forged = transfer;
      forged.prev_hash = decode_event(records[at.offset - 1]).value().hash;
      WalletTransferSettled money = x;
      money.postings = {Posting{x.postings.at(1).account, Kobo(1'000'000), Kobo(1'000'000)}};
      money.ids = {x.ids.at(0)};
      forged.data = std::move(money);
      records.insert(where, seal_unvalidated(forged));  // unbalanced: seal() would refuse it
      break;
    }
  }
  log.rewrite(at.partition, records);
  return at;
}

}  // namespace kobo::testing
