-- The analysts' queries of docs/analytics.md, over the tables that load.sql makes from the log's
-- events. tests/analytics/run_analytics.py runs each (split on the `-- name:` lines) and checks
-- its answer against the API on the same log. Days and times are UTC.

-- name: daily_volume
-- Daily debit and credit volume per wallet: what left and what reached each wallet each day, in
-- kobo (a payout's debit counts its fee; a reversal gives both back).
SELECT account AS wallet,
       CAST(time AS DATE) AS day,
       sum(CASE WHEN amount < 0 THEN -amount ELSE 0 END) AS debits,
       sum(CASE WHEN amount > 0 THEN amount ELSE 0 END) AS credits
FROM postings
WHERE account LIKE 'vba-%'
GROUP BY ALL
ORDER BY wallet, day;

-- name: fees_per_day
-- Fees earned per day and mode: what the fee account received (payouts) less what it gave back
-- (failed payouts' reversals).
SELECT live, CAST(time AS DATE) AS day, sum(amount) AS fees
FROM postings
WHERE account = 'sys:fees'
GROUP BY ALL
ORDER BY live, day;

-- name: balances_at
-- Every wallet's balance at a time ($at): the balance after its last posting before then, in log
-- order (a wallet's postings are all in its business's partition).
SELECT account AS wallet, arg_max(balance, seq * 1000 + idx) AS balance
FROM postings
WHERE account LIKE 'vba-%' AND time < CAST($at AS TIMESTAMP)
GROUP BY account
ORDER BY wallet;
