-- The example warehouse: incidents of three tenants. Portable SQL: the same
-- script builds the SQLite file (go run ./examples/warehouse) and the
-- PostgreSQL tables of grants/sqlkind/sqllive's tests.
CREATE TABLE incidents (
	id        INTEGER PRIMARY KEY,
	title     TEXT    NOT NULL,
	severity  INTEGER NOT NULL CHECK (severity BETWEEN 1 AND 5),
	status    TEXT    NOT NULL CHECK (status IN ('open', 'acknowledged', 'resolved')),
	tenant    TEXT    NOT NULL,
	opened_at TEXT    NOT NULL -- ISO 8601, UTC
);
CREATE INDEX incidents_by_tenant ON incidents (tenant, status);

INSERT INTO incidents (id, title, severity, status, tenant, opened_at) VALUES
	(1,  'Checkout API returns 502 for EU customers',        5, 'open',         'acme',    '2026-05-04T08:12:00Z'),
	(2,  'Disk full on db-replica-2',                         4, 'open',         'acme',    '2026-05-04T09:40:00Z'),
	(3,  'Nightly invoice export late',                       2, 'acknowledged', 'acme',    '2026-05-03T23:05:00Z'),
	(4,  'Elevated p99 latency on search',                    3, 'open',         'acme',    '2026-05-04T10:02:00Z'),
	(5,  'Expired TLS certificate on status page',            4, 'resolved',     'acme',    '2026-05-01T06:30:00Z'),
	(6,  'Login failures after SSO rotation',                 5, 'open',         'globex',  '2026-05-04T07:55:00Z'),
	(7,  'Message queue consumer lag above 10 minutes',       3, 'open',         'globex',  '2026-05-04T11:20:00Z'),
	(8,  'Image thumbnails missing on product pages',         2, 'open',         'globex',  '2026-05-02T14:10:00Z'),
	(9,  'Backup job failed on storage cluster',              4, 'acknowledged', 'globex',  '2026-05-03T02:45:00Z'),
	(10, 'Rate limiter blocks internal health checks',        1, 'resolved',     'globex',  '2026-04-29T16:00:00Z'),
	(11, 'Payment webhook retries exhausted',                 5, 'resolved',     'globex',  '2026-04-30T12:34:00Z'),
	(12, 'Kubernetes node NotReady in eu-west-1b',            4, 'open',         'initech', '2026-05-04T05:15:00Z'),
	(13, 'Stale cache serves old prices',                     3, 'open',         'initech', '2026-05-04T12:00:00Z'),
	(14, 'Email delivery delayed by provider throttling',     2, 'acknowledged', 'initech', '2026-05-03T18:22:00Z'),
	(15, 'Memory leak in report generator',                   3, 'open',         'initech', '2026-05-02T09:09:00Z'),
	(16, 'DNS resolution errors from build runners',          4, 'resolved',     'initech', '2026-04-28T21:47:00Z'),
	(17, 'Audit log ingestion paused',                        1, 'open',         'initech', '2026-05-04T13:30:00Z'),
	(18, 'Feature flag service timeouts',                     3, 'resolved',     'acme',    '2026-04-27T10:10:00Z'),
	(19, 'Search index rebuild stuck at 80%',                 2, 'open',         'acme',    '2026-05-04T14:45:00Z'),
	(20, 'Mobile push notifications duplicated',              1, 'acknowledged', 'globex',  '2026-05-04T15:05:00Z');
