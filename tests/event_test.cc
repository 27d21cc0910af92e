// Event contract v2 (docs/architecture.md section 4): the codec round-trips every kind of fact in
// canonical form, refuses what is not a v2 event (another schemaVersion, an edited byte, an
// unknown or missing member, unbalanced postings), a settled wallet transfer fits the 800-byte
// budget, and the rules of events/ledger.h classify and derive ids deterministically.
#include <gtest/gtest.h>

#include <limits>

#include "events/event.h"
#include "events/fact_codec.h"
#include "events/ledger.h"

namespace kobo {
namespace {

const std::string kBusiness = "biz-f4b1d949-d41a-4b76-b1f2-d50798fba61a";
const AccountId kAccount("acc-0e1525c8-d41a-4b76-b1f2-d50798fba61a");
const std::string kSource = "vba-11111111-d41a-4b76-b1f2-d50798fba61a";
const std::string kDestination = "vba-22222222-d41a-4b76-b1f2-d50798fba61a";
const TransactionId kTransaction("trx-9edb3ded-d41a-4b76-b1f2-d50798fba61a");

Event envelope(EventData data, std::uint64_t seq = 7) {
  Event e;
  e.partition = Partition(3);
  e.seq = Seq(seq);
  e.command_seq = Seq(seq);
  e.epoch = Epoch(1);
  e.business = std::holds_alternative<WriterStarted>(data) ? "" : kBusiness;
  e.time = 1'764'000'000'123;
  e.prev_hash = kGenesisHash;
  e.data = std::move(data);
  return e;
}

WalletTransferSettled wallet_transfer() {
  WalletTransferSettled t;
  t.account = kAccount;
  t.transaction = kTransaction;
  t.ids = {19, 25};
  t.reference = "order-2026-11-24-0001";
  t.narration = "Payment for goods and services";
  t.postings = {{kSource, Kobo(-100'000), Kobo(400'000)}, {kDestination, Kobo(100'000), Kobo(100'000)}};
  return t;
}

std::vector<EventData> one_of_each() {
  WalletOpened w;
  w.account = kAccount;
  w.account_number = "0000000044";
  w.bank_code = "099999";
  w.bank_name = "Kobo Sandbox MFB";
  w.category = WalletCategory::secondary;
  w.id = 4;
  w.mobile = Mobile{"NG", "+2348012345678"};
  w.name = "Ada \"Obi\" \xc3\xa9";  // escapes and UTF-8 survive
  w.wallet = WalletId(kSource);
  BankTransferInitiated b;
  b.account = kAccount;
  b.transaction = kTransaction;
  b.ids = {3};
  b.reference = "r";
  b.narration = "n";
  b.metadata.text = R"({"a":[1,2,{"b":null}],"sandboxOutcome":"failed"})";
  b.save_beneficiary = true;
  b.beneficiary = Beneficiary{"Ada", "0123456784", BankAccountId("bka-1"), "058", "GTBank", 0, "ner-1"};
  b.postings = {{kSource, Kobo(-1'075 - 500'000), Kobo(0)},
                {"sys:payout-suspense", Kobo(500'000), Kobo(500'000)},
                {"sys:fees", Kobo(1'075), Kobo(1'075)}};
  IncomingCreditReceived in;
  in.account = kAccount;
  in.transaction = kTransaction;
  in.ids = {1, 7, 13};
  in.narration = "n";
  in.sender = Sender{"S", "0000014579", "058", "GTB", "000013"};
  in.postings = {{"sys:inbound-settlement", Kobo(-5), Kobo(-5)},
                 {kSource, Kobo(5), Kobo(5)},
                 {kSource, Kobo(-5), Kobo(0)},
                 {kDestination, Kobo(5), Kobo(5)}};
  CollectionWalletOpened c;
  c.account = kAccount;
  c.account_number = "0000000011";
  c.amount = Kobo(10'000);
  c.bank_code = "099999";
  c.bank_name = "Kobo Sandbox MFB";
  c.destination = WalletId(kDestination);
  c.expires_at = Timestamp{1'764'000'900'000};
  c.id = 5;
  c.name = "c";
  c.wallet = WalletId("vba-33333333-d41a-4b76-b1f2-d50798fba61a");
  return {WriterStarted{Epoch(2)},
          w,
          wallet_transfer(),
          b,
          in,
          c,
          PayoutFailed{{9},
                       {{"sys:payout-suspense", Kobo(-500'000), Kobo(0)},
                        {"sys:fees", Kobo(-1'075), Kobo(0)},
                        {kSource, Kobo(501'075), Kobo(501'075)}},
                       kTransaction},
          AccountUpdated{kAccount, true, std::vector<std::string>{"account.debit"},
                         std::vector<std::string>{"https://example.com/hook"}},
          WebhookSecretRotated{kAccount}};
}

TEST(EventV2, RoundTripsEveryKindOfFactInCanonicalForm) {
  for (EventData& d : one_of_each()) {
    Event e = envelope(d);
    const std::string wire = seal(e);
    SCOPED_TRACE(wire);
    auto decoded = decode_event(wire);
    ASSERT_TRUE(decoded.ok()) << decoded.status().message();
    EXPECT_EQ(decoded.value().data, e.data);
    EXPECT_EQ(decoded.value().type(), e.type());
    EXPECT_EQ(decoded.value().hash, e.hash);
    EXPECT_TRUE(in_canonical_form(decoded.value(), wire));
  }
}

// What a cluster's webhooks delivered (docs/webhooks.md, "In a cluster"): a partition-level
// event that names some deliveries, round-tripped in canonical form; anything else is refused.
TEST(EventV2, WebhookDeliveriesEndedIsPartitionLevelAndNamesSomeDeliveries) {
  Event e = envelope(WebhookDeliveriesEnded{{{"whd-1", true}, {"whd-2", false}}});
  e.business.clear();
  const std::string wire = seal(e);
  auto decoded = decode_event(wire);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded.value().data, e.data);
  EXPECT_TRUE(in_canonical_form(decoded.value(), wire));
  Event of_a_business = e;
  of_a_business.business = kBusiness;
  EXPECT_FALSE(validate(of_a_business).ok());
  Event none = e;
  none.data = WebhookDeliveriesEnded{};
  EXPECT_FALSE(validate(none).ok());
  Event too_many = e;
  too_many.data = WebhookDeliveriesEnded{std::vector<WebhookDeliveryEnded>(
      kWebhookDeliveriesPerEventMax + 1, WebhookDeliveryEnded{"whd-1", true})};
  EXPECT_FALSE(validate(too_many).ok());
  Event not_a_delivery = e;
  not_a_delivery.data = WebhookDeliveriesEnded{{{"trx-1", true}}};
  EXPECT_FALSE(validate(not_a_delivery).ok());
}

// The views' binary form of a fact (events/fact_codec.h): business, mode, time and data survive
// for every kind, in far fewer bytes than the wire form; anything cut short or with a byte out of
// range is an error, never a crash or a different fact.
TEST(FactCodec, RoundTripsEveryKindOfFactAndRefusesWhatIsNotOne) {
  for (EventData& d : one_of_each()) {
    Event e = envelope(d);
    e.live = e.type() == EventType::wallet_opened;  // both modes
    const std::string fact = encode_fact(e);
    auto decoded = decode_fact(fact);
    ASSERT_TRUE(decoded.ok()) << decoded.status().message();
    EXPECT_EQ(decoded.value().data, e.data);
    EXPECT_EQ(decoded.value().business, e.business);
    EXPECT_EQ(decoded.value().live, e.live);
    EXPECT_EQ(decoded.value().time, e.time);
    Event sealed = e;
    EXPECT_LT(fact.size(), seal(sealed).size() / 2) << to_string(e.type());
    for (std::size_t n = 0; n < fact.size(); ++n)
      EXPECT_FALSE(decode_fact(std::string_view(fact).substr(0, n)).ok()) << "cut at " << n;
    EXPECT_FALSE(decode_fact(fact + '\0').ok()) << "a byte past the end";
  }
  Event t = envelope(wallet_transfer());
  std::string bad = encode_fact(t);
  bad[0] = '\x7f';  // another form
  EXPECT_FALSE(decode_fact(bad).ok());
  bad = encode_fact(t);
  bad[1] = '\x40';  // no such type
  EXPECT_FALSE(decode_fact(bad).ok());
  bad = encode_fact(t);
  bad[2] = '\x02';  // live is neither 0 nor 1
  EXPECT_FALSE(decode_fact(bad).ok());
  EXPECT_LE(encode_fact(t).size(), 320u) << "a wallet transfer's fact";
}

// A partition-level fact of no business round-trips like any other: the fuzz target seals
// whatever decodes and reads its fact form back.
TEST(FactCodec, RoundTripsAPartitionLevelFactOfNoBusiness) {
  Event e = envelope(WebhookDeliveriesEnded{{{"whd-1", true}}});
  e.business.clear();
  auto decoded = decode_fact(encode_fact(e));
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded.value().data, e.data);
  e.business = kBusiness;
  EXPECT_FALSE(decode_fact(encode_fact(e)).ok()) << "deliveries ended are of no business";
}

// A raw JSON member is its object's text, without the white space a writer that is not ours may
// put after it: what decodes (the hash unchecked, as `kobo audit` and the fuzz target read) seals
// again, its metadata read as the encoder writes it.
TEST(EventV2, RawJsonIsReadWithoutTheWhiteSpaceAfterIt) {
  Event e = envelope(one_of_each()[3]);
  std::string wire = seal(e);
  const std::string end_of_metadata = R"("sandboxOutcome":"failed"})";
  const auto at = wire.find(end_of_metadata);
  ASSERT_NE(at, std::string::npos) << wire;
  wire.insert(at + end_of_metadata.size(), " \n\t ");
  auto decoded = decode_event_unverified(wire);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded.value().data, e.data);
  EXPECT_FALSE(decode_event(wire).ok()) << "its hash no longer holds";
  Event again = decoded.value();
  EXPECT_TRUE(decode_event(seal(again)).ok());
}

TEST(EventV2, ASettledWalletTransferIsOneEventWithinTheBudget) {
  Event e = envelope(wallet_transfer());
  const std::string wire = seal(e);
  EXPECT_LE(wire.size(), 800u) << wire;
  // Nothing derivable is stored: no snapshots, no _id, no mirror, no fingerprint.
  for (const char* absent : {"_id", "sourceData", "meta", "fingerprint", "commandSeq"})
    EXPECT_EQ(wire.find(absent), std::string::npos) << absent;
}

TEST(EventV2, RefusesAnotherSchemaVersionNamingIt) {
  Event e = envelope(wallet_transfer());
  std::string wire = seal(e);
  wire.replace(wire.find("\"schemaVersion\":2"), 17, "\"schemaVersion\":1");
  const auto decoded = decode_event(wire);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("schemaVersion 1 is not supported"), std::string::npos)
      << decoded.status().message();
  // Tools that pass records through undecoded check the version the same way.
  EXPECT_TRUE(check_schema_version(seal(e)).ok());
  EXPECT_EQ(check_schema_version(wire).message(), decoded.status().message());
  // The envelope's member, not one the data happens to hold (a payout's metadata may).
  std::string v1_with_v2_metadata = wire;
  v1_with_v2_metadata.replace(v1_with_v2_metadata.find("\"data\":{") + 8, 0, "\"schemaVersion\":2,");
  EXPECT_FALSE(check_schema_version(v1_with_v2_metadata).ok());
  EXPECT_FALSE(check_schema_version("{}").ok());
  // A version-1 envelope has members v2's lacks; it is still refused for its version.
  std::string v1_envelope = wire;
  v1_envelope.replace(v1_envelope.find("\"business\""), 0, "\"aggregateId\":\"wal-1\",");
  for (const auto& d : {decode_event(v1_envelope), decode_event_unverified(v1_envelope)}) {
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().message(), decoded.status().message());
  }
}

TEST(EventV2, RefusesWhatIsNotAValidEvent) {
  Event e = envelope(wallet_transfer());
  const std::string wire = seal(e);
  struct Row {
    const char* why;
    std::string from, to;
    const char* says;
  };
  const std::vector<Row> rows{
      {"an edited byte", "order-2026", "order-2027", "hash mismatch"},
      {"an unknown member", "\"ids\":", "\"idz\":", "unknown member idz"},
      {"a member of the wrong type", "\"ids\":[19,25]", "\"ids\":\"19\"", "ids is not an array"},
      // A chain's hashes are 64 lower-case hex digits, each refused at either edge of the ranges.
      {"an upper-case digit", "\"prevHash\":\"0", "\"prevHash\":\"A", "not 64 hex digits"},
      {"a letter past f", "\"prevHash\":\"0", "\"prevHash\":\"g", "not 64 hex digits"},
      {"a character before 0", "\"prevHash\":\"0", "\"prevHash\":\"/", "not 64 hex digits"},
      {"a character between 9 and a", "\"prevHash\":\"0", "\"prevHash\":\":", "not 64 hex digits"},
      {"a byte past ASCII", "\"prevHash\":\"00", "\"prevHash\":\"\xc3\xa9", "not 64 hex digits"},
      {"63 digits", "\"prevHash\":\"0", "\"prevHash\":\"", "not 64 hex digits"},
  };
  for (const Row& row : rows) {
    std::string edited = wire;
    edited.replace(edited.find(row.from), row.from.size(), row.to);
    const auto decoded = decode_event(edited);
    ASSERT_FALSE(decoded.ok()) << row.why;
    EXPECT_NE(decoded.status().message().find(row.says), std::string::npos)
        << row.why << ": " << decoded.status().message();
  }
  // Unbalanced postings are refused even with a hash that holds over them.
  WalletTransferSettled unbalanced = wallet_transfer();
  unbalanced.postings[1].amount = Kobo(99'999);
  Event bad = envelope(unbalanced);
  EXPECT_FALSE(validate(bad).ok());
  const auto missing = decode_event(R"({"hash":"x"})");
  EXPECT_FALSE(missing.ok());
}

// docs/events.md, "Derived, not in the log": the ids derived from a time-ordered (uuid v7)
// transaction id keep its time, so that the records of one event sort with it; those derived from
// the uuid v4 ids of older events are what they always were, so old logs rebuild the same views.
TEST(EventV2, IdsDerivedFromATimeOrderedTransactionKeepItsTime) {
  const TransactionId v7("trx-019a6b2c-3d4e-7f50-8a6b-5c4d3e2f1a0b");
  const TransactionId credit = nth_transaction_id(v7, 1);
  EXPECT_TRUE(credit.value.starts_with("trx-019a6b2c-3d4e-7")) << credit.value;
  EXPECT_NE(credit, v7);
  EXPECT_NE(nth_transaction_id(v7, 2), credit);
  EXPECT_TRUE(std::string_view("89ab").find(credit.value[4 + 19]) != std::string_view::npos) << credit.value;
  const std::string reference = derived_reference("ref-", credit);
  EXPECT_TRUE(reference.starts_with("ref-019a6b2c-3d4e-7")) << reference;
  EXPECT_EQ(reference, derived_reference("ref-", credit)) << "the same id, the same reference";
  // Invertible, so that the views find such a record from its event's first (projection/views.h).
  EXPECT_EQ(first_of_nth(credit, 1), v7);
  EXPECT_NE(first_of_nth(credit, 2), v7);
  EXPECT_EQ(first_of_nth(nth_transaction_id(v7, 2), 2), v7);
  EXPECT_EQ(record_of_derived_reference(reference), credit);
  EXPECT_EQ(record_of_derived_reference(derived_reference("swp-", credit)), credit);
  EXPECT_EQ(record_of_derived_reference(derived_reference("rev-", v7)), v7);

  const TransactionId v4("trx-0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b");
  EXPECT_EQ(nth_transaction_id(v4, 1).value, "trx-" + derived_uuid(v4.value + "#1"));
  EXPECT_EQ(derived_reference("ref-", v4), "ref-" + derived_uuid("ref-" + v4.value));
  EXPECT_EQ(nth_transaction_id(v4, 1).value[4 + 14], '4');
  EXPECT_EQ(first_of_nth(nth_transaction_id(v4, 1), 1), std::nullopt) << "a v4 derivation is a hash";
  EXPECT_EQ(record_of_derived_reference(derived_reference("ref-", v4)), std::nullopt);
  EXPECT_EQ(record_of_derived_reference("my-own-reference"), std::nullopt);
  EXPECT_EQ(record_of_derived_reference("abc-" + v7.value.substr(4)), std::nullopt)
      << "not a derivation's kind";
}

TEST(EventV2, EveryWalletPostingIsOneTransactionRecordWithDerivedIds) {
  const WalletTransferSettled t = wallet_transfer();
  const auto created = transactions_created(t);
  ASSERT_EQ(created.size(), 2u);
  EXPECT_EQ(created[0].kind, TransactionKind::wallet_transfer_debit);
  EXPECT_EQ(created[0].id, kTransaction);
  EXPECT_EQ(created[0].number, 19u);
  EXPECT_EQ(created[0].reference, t.reference);
  EXPECT_EQ(created[1].kind, TransactionKind::wallet_transfer_credit);
  EXPECT_EQ(created[1].number, 25u);
  EXPECT_EQ(created[1].debit_reference, t.reference);
  EXPECT_EQ(created[0].link_ref, created[1].link_ref);
  EXPECT_EQ(created[1].id, nth_transaction_id(kTransaction, 1)) << "derived, so a rebuild derives the same";
  EXPECT_NE(created[1].id, kTransaction);
  EXPECT_EQ(object_id_of(kTransaction.value).size(), 24u);
  const auto finals = transactions_finalized(t);
  ASSERT_EQ(finals.size(), 2u);
  EXPECT_EQ(finals[0].entry, Entry::debit);
  EXPECT_EQ(finals[1].entry, Entry::credit);
}

TEST(EventV2, ThePostingRuleIsOneFunction) {
  EXPECT_EQ(post(Kobo(100), {kSource, Kobo(-40), Kobo(60)}).fault, PostingFault::none);
  EXPECT_EQ(post(Kobo(100), {kSource, Kobo(-40), Kobo(61)}).fault, PostingFault::balance_disagrees);
  EXPECT_EQ(post(Kobo(10), {kSource, Kobo(-40), Kobo(-30)}).fault, PostingFault::negative_wallet);
  EXPECT_EQ(post(Kobo(10), {"sys:fees", Kobo(-40), Kobo(-30)}).fault, PostingFault::none)
      << "system accounts go negative";
  EXPECT_EQ(post(Kobo(0), {"sys:nowhere", Kobo(1), Kobo(1)}).fault, PostingFault::unknown_account);
  EXPECT_EQ(post(Kobo(std::numeric_limits<std::int64_t>::max()), {kSource, Kobo(1), Kobo(0)}).fault,
            PostingFault::overflow);
}

TEST(EventV2, TheRequestFingerprintIsDerivedFromTheFact) {
  const WalletTransferSettled t = wallet_transfer();
  const WalletTransferRequest same{kSource, kDestination, Kobo(100'000), t.narration, std::nullopt};
  EXPECT_EQ(request_fingerprint(request_of(t)), request_fingerprint(same));
  WalletTransferRequest other = same;
  other.amount = Kobo(100'001);
  EXPECT_NE(request_fingerprint(request_of(t)), request_fingerprint(other));
}

// Each money event's postings by name (events/legs.h): readers take `legs().source`, never
// `postings[0]`, and the names are the ones the catalog's comments give.
TEST(Legs, NameEachMoneyEventsPostings) {
  for (const EventData& d : one_of_each()) {
    if (const auto* x = std::get_if<WalletTransferSettled>(&d)) {
      const TransferLegs legs = x->legs();
      EXPECT_EQ(legs.source.account, kSource);
      EXPECT_EQ(legs.destination.account, kDestination);
      EXPECT_EQ(legs.amount(), Kobo(100'000));
    } else if (const auto* b = std::get_if<BankTransferInitiated>(&d)) {
      const PayoutLegs legs = b->legs();
      EXPECT_EQ(legs.source.account, kSource);
      EXPECT_EQ(legs.suspense.account, account_name(SystemAccount::payout_suspense));
      EXPECT_EQ(legs.fee.account, account_name(SystemAccount::fees));
      EXPECT_EQ(legs.amount(), Kobo(500'000));
      EXPECT_EQ(legs.fee.amount, Kobo(1'075));
      EXPECT_EQ(legs.debited(), Kobo(501'075));
    } else if (const auto* in = std::get_if<IncomingCreditReceived>(&d)) {
      const IncomingLegs legs = in->legs();
      EXPECT_EQ(legs.inbound.account, account_name(SystemAccount::inbound_settlement));
      EXPECT_EQ(legs.wallet.account, kSource);
      EXPECT_EQ(legs.amount(), Kobo(5));
      ASSERT_TRUE(legs.sweep.has_value()) << "a transit wallet's credit is swept on";
      EXPECT_EQ(legs.sweep->debit.account, kSource);
      EXPECT_EQ(legs.sweep->credit.account, kDestination);
    } else if (const auto* f = std::get_if<PayoutFailed>(&d)) {
      const ReversalLegs legs = f->legs();
      EXPECT_EQ(legs.suspense.amount, Kobo(-500'000));
      EXPECT_EQ(legs.fee.amount, Kobo(-1'075));
      EXPECT_EQ(legs.source.account, kSource);
      EXPECT_EQ(legs.credited(), Kobo(501'075));
    }
  }
  const PayoutSucceeded settled{
      {{"sys:payout-suspense", Kobo(-7), Kobo(0)}, {"sys:outbound-settlement", Kobo(7), Kobo(7)}},
      kTransaction};
  EXPECT_EQ(settled.legs().amount(), Kobo(7));
  EXPECT_EQ(settled.legs().outbound.account, account_name(SystemAccount::outbound_settlement));
}

// One row per way postings can fail their type's legs: the count, an account, a sign, the
// balance, and what only the names say (a transfer to itself, a sweep of another wallet). Each
// is refused by read() with the reason, and by validate(), so no such event is decoded.
TEST(Legs, ReadRefusesPostingsThatAreNotTheirTypesLegs) {
  const std::string suspense(account_name(SystemAccount::payout_suspense));
  const std::string fees(account_name(SystemAccount::fees));
  const std::string inbound(account_name(SystemAccount::inbound_settlement));
  struct Row {
    const char* why;
    EventData data;
    const char* says;
  };
  const auto transfer = [](std::vector<Posting> postings) {
    WalletTransferSettled t = wallet_transfer();
    t.postings = std::move(postings);
    return t;
  };
  const auto payout = [](std::vector<Posting> postings) {
    BankTransferInitiated b = std::get<BankTransferInitiated>(one_of_each()[3]);
    b.postings = std::move(postings);
    return b;
  };
  const auto incoming = [](std::vector<Posting> postings, std::vector<std::uint64_t> ids) {
    IncomingCreditReceived in = std::get<IncomingCreditReceived>(one_of_each()[4]);
    in.postings = std::move(postings);
    in.ids = std::move(ids);
    return in;
  };
  const std::vector<Row> rows{
      {"a transfer of one posting", transfer({{kSource, Kobo(-1), Kobo(0)}}),
       "are not [a wallet -, a wallet +]"},
      {"a transfer whose signs are swapped",
       transfer({{kSource, Kobo(1), Kobo(1)}, {kDestination, Kobo(-1), Kobo(0)}}), "are not [a wallet -"},
      {"a transfer to a system account", transfer({{kSource, Kobo(-1), Kobo(0)}, {fees, Kobo(1), Kobo(1)}}),
       "are not [a wallet -, a wallet +]"},
      {"a transfer to its own source", transfer({{kSource, Kobo(-1), Kobo(0)}, {kSource, Kobo(1), Kobo(1)}}),
       "source is its destination"},
      {"a payout whose suspense and fee are swapped",
       payout({{kSource, Kobo(-501'075), Kobo(0)},
               {fees, Kobo(1'075), Kobo(1'075)},
               {suspense, Kobo(500'000), Kobo(500'000)}}),
       "are not [a wallet -, sys:payout-suspense +, sys:fees +]"},
      {"a payout without its fee",
       payout({{kSource, Kobo(-500'000), Kobo(0)}, {suspense, Kobo(500'000), Kobo(500'000)}}),
       "a payout's postings are not"},
      {"a payout whose debit has no negation in kobo (its legs negate it)",
       payout({{kSource, Kobo(std::numeric_limits<std::int64_t>::min()), Kobo(0)},
               {suspense, Kobo(std::int64_t{1} << 62), Kobo(std::int64_t{1} << 62)},
               {fees, Kobo(std::int64_t{1} << 62), Kobo(std::int64_t{1} << 62)}}),
       "more than kobo can hold"},
      {"a sweep of another wallet than the one credited",
       incoming({{inbound, Kobo(-5), Kobo(-5)},
                 {kSource, Kobo(5), Kobo(5)},
                 {kDestination, Kobo(-5), Kobo(0)},
                 {kSource, Kobo(5), Kobo(10)}},
                {1, 7, 13}),
       "sweep does not move on"},
      {"an incoming credit of three postings",
       incoming(
           {{inbound, Kobo(-5), Kobo(-5)}, {kSource, Kobo(3), Kobo(3)}, {kDestination, Kobo(2), Kobo(2)}},
           {1, 7}),
       "an incoming credit's postings are not"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.why);
    const Status read = std::visit(
        [](const auto& x) -> Status {
          if constexpr (requires { x.legs(); }) {
            auto legs = decltype(x.legs())::read(x.postings);
            return legs.ok() ? Status() : legs.status();
          } else {
            return Status::error("not a money event");
          }
        },
        row.data);
    ASSERT_FALSE(read.ok());
    EXPECT_NE(read.message().find(row.says), std::string::npos) << read.message();
    const Status valid = validate(envelope(row.data));
    ASSERT_FALSE(valid.ok()) << "validate() refuses what the legs refuse";
    Event forged = envelope(row.data);
    EXPECT_FALSE(decode_event(seal_unvalidated(forged)).ok()) << "so no reader meets such an event";
    EXPECT_FALSE(decode_fact(encode_fact(envelope(row.data))).ok()) << "nor a views row of one";
  }
}

// The ledger's rules read the legs without asserting them: `kobo audit` asks them of events it
// has not validated, and reports, never aborts.
TEST(Legs, RulesOverUnvalidatedEventsCreateNothingOfPostingsThatAreNotLegs) {
  WalletTransferSettled swapped = wallet_transfer();
  std::swap(swapped.postings[0], swapped.postings[1]);
  EXPECT_TRUE(transactions_created(swapped).empty());
  EXPECT_EQ(transactions_created_count(swapped), 0u);
  EXPECT_FALSE(tier_debit(swapped).has_value());
  EXPECT_EQ(tier_debit(wallet_transfer())->amount, Kobo(100'000));
  EXPECT_EQ(tier_debit(wallet_transfer())->wallet, kSource);
}

// The owner of an event: the account it names, or none for the facts that change a record by its id.
TEST(EventOwner, IsTheAccountTheEventNames) {
  for (const EventData& d : one_of_each()) {
    const AccountId* owner = owner_account(d);
    if (std::holds_alternative<WriterStarted>(d) || std::holds_alternative<PayoutFailed>(d))
      EXPECT_EQ(owner, nullptr) << to_string(type_of(d));
    else
      EXPECT_TRUE(owner != nullptr && *owner == kAccount) << to_string(type_of(d));
  }
  EXPECT_EQ(owner_account(PayoutProcessing{kTransaction}), nullptr);
  EXPECT_EQ(owner_account(HoldVoided{HoldId("hld-1")}), nullptr);
}

}  // namespace
}  // namespace kobo
