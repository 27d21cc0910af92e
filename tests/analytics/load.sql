-- The log's events (`kobo events` NDJSON, or the Kafka topic's values: the same JSON) as two
-- tables: `events`, one row per event, and `postings`, one row per posting with its event's
-- position and time. $events is the NDJSON file. docs/analytics.md explains each column.
CREATE TABLE events AS
SELECT CAST(json ->> 'partition' AS INTEGER) AS "partition",
       CAST(json ->> 'seq' AS BIGINT) AS seq,
       json ->> 'type' AS type,
       json ->> 'business' AS business,
       CAST(json ->> 'live' AS BOOLEAN) AS live,
       -- 2026-11-24T08:50:32.798Z: UTC, so a plain TIMESTAMP.
       CAST(replace(json ->> 'time', 'Z', '') AS TIMESTAMP) AS time,
       json -> 'data' AS data
FROM read_json_objects($events, format = 'newline_delimited');

CREATE TABLE postings AS
SELECT "partition", seq, type, business, live, time, idx,
       posting.account AS account, posting.amount AS amount, posting.balance AS balance
FROM (
  SELECT "partition", seq, type, business, live, time,
         unnest(from_json(data -> 'postings', '[{"account":"VARCHAR","amount":"BIGINT","balance":"BIGINT"}]')) AS posting,
         generate_subscripts(from_json(data -> 'postings', '["JSON"]'), 1) AS idx
  FROM events
  WHERE (data -> 'postings') IS NOT NULL
);
