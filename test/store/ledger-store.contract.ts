import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ServiceError } from '../../core/errors.js';
import { generateKeyPair } from '../../core/identity.js';
import type { EpochAnchor, LedgerEntry, LedgerSettlement } from '../../core/ledger-types.js';
import type { LedgerStore } from '../../store/ledger-store.js';

/** Opens a fresh, empty store; `cleanup` runs after each test (close the database, drop it …). */
export type LedgerStoreFactory = () => Promise<{ store: LedgerStore; cleanup?: () => Promise<void> }>;

export const T0 = Date.UTC(2026, 2, 1, 12);
export const iso = (ms: number): string => new Date(ms).toISOString();
export const newAccount = (): string => generateKeyPair().publicKey;
const HOUR = 3_600_000;
const hex = (c: string) => c.repeat(64);

/** An entry of `kind`: charges negative, everything else positive. */
export function entry(overrides: Partial<LedgerEntry> & Pick<LedgerEntry, 'account_pk'>): LedgerEntry {
  const kind = overrides.kind ?? 'step_earning';
  return {
    version: 1,
    id: `test:${randomUUID()}`,
    kind,
    amount_units: kind === 'job_charge' || kind === 'proof_charge' ? -1000 : 1000,
    job_id: 'job-1',
    record_id: 'compute:job-1',
    step_ids: kind === 'step_earning' || kind === 'relay_fee' ? ['ask'] : [],
    hardware_tier: null,
    created_at: iso(T0),
    ...overrides,
  };
}

/** A finished job's balanced batch, as core/ledger-entries.ts builds it. */
export function jobBatch(
  accounts: { requester: string; worker: string; relay: string; platform: string },
  jobId: string = randomUUID(),
  at = T0,
): LedgerEntry[] {
  const base = { version: 1 as const, job_id: jobId, record_id: `compute:${jobId}`, created_at: iso(at) };
  return [
    {
      ...base,
      id: `job:${jobId}:charge`,
      account_pk: accounts.requester,
      kind: 'job_charge',
      amount_units: -160_000,
      step_ids: [],
      hardware_tier: null,
    },
    {
      ...base,
      id: `job:${jobId}:earning:${accounts.worker}`,
      account_pk: accounts.worker,
      kind: 'step_earning',
      amount_units: 120_000,
      step_ids: ['ask'],
      hardware_tier: 2,
    },
    {
      ...base,
      id: `job:${jobId}:relay:${accounts.relay}`,
      account_pk: accounts.relay,
      kind: 'relay_fee',
      amount_units: 30_000,
      step_ids: ['ask'],
      hardware_tier: 1,
    },
    {
      ...base,
      id: `job:${jobId}:proof`,
      account_pk: accounts.platform,
      kind: 'proof_fee',
      amount_units: 10_000,
      step_ids: [],
      hardware_tier: null,
    },
  ];
}

export function settlementRecord(overrides: Partial<LedgerSettlement> = {}): LedgerSettlement {
  return {
    version: 1,
    id: `job:${randomUUID()}`,
    entry_ids: [],
    payees: {},
    status: 'pending',
    tx_hash: hex('1'),
    envelope_xdr: 'AAAAAgAAAAA=',
    ledger: null,
    memo_hash: hex('2'),
    attempts: 1,
    error: null,
    at: iso(T0),
    ...overrides,
  };
}

export function anchorRecord(overrides: Partial<EpochAnchor> = {}): EpochAnchor {
  return {
    version: 1,
    sealer_pk: hex('5'),
    epoch: 7,
    root: hex('6'),
    status: 'pending',
    tx_hash: hex('7'),
    envelope_xdr: 'AAAAAgAAAAA=',
    ledger: null,
    attempts: 1,
    error: null,
    at: iso(T0),
    ...overrides,
  };
}

const submitted = { status: 'submitted' as const, ledger: 4242 };

const rejectsWith = (promise: Promise<unknown>, code: string) =>
  assert.rejects(promise, (error: unknown) => error instanceof ServiceError && error.code === code);

const ids = (entries: readonly { id: string }[]) => entries.map((e) => e.id);
const sorted = (values: readonly string[]) => [...values].sort();

/** The behaviour every LedgerStore adapter must show; settlement and the status routes rely on nothing else. */
export function describeLedgerStoreContract(name: string, factory: LedgerStoreFactory): void {
  describe(`LedgerStore contract: ${name}`, () => {
    let store: LedgerStore;
    let cleanup: (() => Promise<void>) | undefined;
    let accounts: { requester: string; worker: string; relay: string; platform: string };

    beforeEach(async () => {
      ({ store, cleanup } = await factory());
      accounts = { requester: newAccount(), worker: newAccount(), relay: newAccount(), platform: newAccount() };
    });
    afterEach(async () => {
      await store.close();
      await cleanup?.();
    });

    it('answers empty before anything is posted', async () => {
      const pk = newAccount();
      assert.equal(await store.balance(pk), 0);
      assert.deepEqual(await store.entries(pk), []);
      assert.deepEqual(await store.jobEntries('job-1'), []);
      assert.deepEqual(await store.earningsByDay({ fromIso: iso(0), toIso: iso(T0 * 2) }), []);
      assert.deepEqual(await store.unsettled(pk), []);
      assert.equal(await store.settlement('job:x'), null);
      assert.deepEqual(await store.openSettlements(), []);
      assert.equal(await store.anchor(hex('5'), 7), null);
      assert.deepEqual(await store.openAnchors(), []);
      assert.deepEqual(await store.post([]), []);
    });

    it("posts a job's entries, gives them back in posting order and derives balances from them", async () => {
      const batch = jobBatch(accounts, 'job-a');
      assert.deepEqual(await store.post(batch), ids(batch));
      assert.deepEqual(await store.jobEntries('job-a'), batch);
      assert.equal(await store.balance(accounts.requester), -160_000);
      assert.equal(await store.balance(accounts.worker), 120_000);
      assert.equal(await store.balance(accounts.relay), 30_000);
      assert.equal(await store.balance(accounts.platform), 10_000);
      assert.deepEqual(await store.entries(accounts.worker), [batch[1]]);
      assert.deepEqual(await store.jobEntries('job-b'), []);
    });

    it('is idempotent by id: a re-post stores nothing twice, and completes a partial one', async () => {
      const batch = jobBatch(accounts, 'job-a');
      await store.post(batch.slice(0, 2));
      assert.deepEqual(await store.post(batch), ids(batch.slice(2)));
      assert.deepEqual(await store.post(batch), []);
      assert.deepEqual(await store.post([...batch].reverse().map((e) => ({ ...e }))), []);
      assert.deepEqual(await store.jobEntries('job-a'), batch);
      assert.equal(await store.balance(accounts.worker), 120_000);
      // The same entry twice in one call is stored once.
      const twice = entry({ account_pk: accounts.worker, job_id: 'job-c' });
      assert.deepEqual(await store.post([twice, { ...twice }]), [twice.id]);
      assert.equal(await store.balance(accounts.worker), 121_000);
    });

    it('refuses a re-post that differs with record_conflict, storing nothing of its batch', async () => {
      const batch = jobBatch(accounts, 'job-a');
      await store.post(batch);
      const fresh = entry({ account_pk: accounts.worker, job_id: 'job-b' });
      const changed = { ...batch[1]!, amount_units: 999_999 };
      await rejectsWith(store.post([fresh, changed]), 'record_conflict');
      await rejectsWith(store.post([{ ...batch[2]!, hardware_tier: 3 }, fresh]), 'record_conflict');
      assert.deepEqual(await store.jobEntries('job-b'), []);
      assert.equal(await store.balance(accounts.worker), 120_000);
      assert.deepEqual(await store.jobEntries('job-a'), batch);
    });

    it('sums a balance since an instant, inclusive, whatever the offset the bound is written with', async () => {
      const pk = accounts.worker;
      const posted = [0, 1, 2, 3].map((h) =>
        entry({ account_pk: pk, amount_units: 10 ** h, created_at: iso(T0 + h * HOUR) }),
      );
      posted.push(
        entry({ account_pk: pk, kind: 'proof_charge', job_id: null, amount_units: -5, created_at: iso(T0 + 2 * HOUR) }),
      );
      await store.post(posted);
      await store.post([entry({ account_pk: accounts.relay, amount_units: 7 })]);
      assert.equal(await store.balance(pk), 1111 - 5);
      assert.equal(await store.balance(pk, iso(T0 + 2 * HOUR)), 1100 - 5);
      assert.equal(await store.balance(pk, '2026-03-01T15:00:00+01:00'), 1100 - 5); // T0 + 2 h
      assert.equal(await store.balance(pk, '2026-03-01T14:00:00.0001Z'), 1000);
      assert.equal(await store.balance(pk, iso(T0 + 4 * HOUR)), 0);
      assert.equal(await store.balance(accounts.relay), 7);
    });

    it("lists an account's entries oldest first, in inclusive ranges, at most `limit`", async () => {
      const pk = accounts.worker;
      const posted = [3, 0, 2, 1, 4].map((h) =>
        entry({ account_pk: pk, amount_units: h + 1, created_at: iso(T0 + h * HOUR) }),
      );
      for (const e of posted) await store.post([e]);
      await store.post([entry({ account_pk: accounts.relay })]);
      const byHour = [...posted].sort((a, b) => a.created_at.localeCompare(b.created_at));
      assert.deepEqual(await store.entries(pk), byHour);
      assert.deepEqual(
        await store.entries(pk, { fromIso: iso(T0 + HOUR), toIso: iso(T0 + 3 * HOUR) }),
        byHour.slice(1, 4),
      );
      assert.deepEqual(await store.entries(pk, { fromIso: iso(T0 + 3 * HOUR) }), byHour.slice(3));
      assert.deepEqual(await store.entries(pk, { toIso: '2026-03-01T13:00:00+01:00' }), byHour.slice(0, 1));
      assert.deepEqual(await store.entries(pk, { limit: 2 }), byHour.slice(0, 2));
      assert.deepEqual(await store.entries(pk, { fromIso: iso(T0 + HOUR), limit: 1 }), byHour.slice(1, 2));
      assert.deepEqual(await store.entries(pk, { limit: 0 }), []);
      assert.deepEqual(await store.entries(pk, { fromIso: iso(T0 + 5 * HOUR) }), []);
      // Entries of one post and one instant keep the order they were posted in.
      const together = [9, 8, 7].map((n) =>
        entry({ account_pk: accounts.platform, amount_units: n, created_at: iso(T0) }),
      );
      await store.post(together);
      assert.deepEqual(await store.entries(accounts.platform), together);
    });

    it('groups positive earnings and relay fees by UTC day and hardware tier', async () => {
      const [w1, w2] = [accounts.worker, accounts.relay];
      const day1 = Date.UTC(2026, 2, 1, 23, 59, 59, 999);
      const day2 = Date.UTC(2026, 2, 2, 0, 0, 0, 0);
      await store.post([
        entry({ account_pk: w1, amount_units: 100, hardware_tier: 2, created_at: iso(day1) }),
        entry({ account_pk: w1, amount_units: 50, hardware_tier: 2, created_at: iso(day1 - HOUR) }),
        entry({ account_pk: w2, kind: 'relay_fee', amount_units: 7, hardware_tier: 1, created_at: iso(day1) }),
        entry({ account_pk: w1, amount_units: 30, hardware_tier: 2, created_at: iso(day2) }),
        entry({ account_pk: w2, amount_units: 4, hardware_tier: null, created_at: iso(day2) }),
        // Not earnings: charges, proof fees.
        entry({ account_pk: w1, kind: 'job_charge', amount_units: -1000, created_at: iso(day1) }),
        entry({ account_pk: w1, kind: 'proof_fee', amount_units: 1000, created_at: iso(day1) }),
        // Written with an offset: 2026-03-02T01:30+02:00 is still 1 March in UTC.
        entry({ account_pk: w2, amount_units: 3, hardware_tier: 1, created_at: '2026-03-02T01:30:00.000+02:00' }),
      ]);
      const all = { fromIso: iso(Date.UTC(2026, 2, 1)), toIso: iso(Date.UTC(2026, 2, 3)) };
      assert.deepEqual(await store.earningsByDay(all), [
        { day: '2026-03-01', hardware_tier: 1, units: 10, entries: 2 },
        { day: '2026-03-01', hardware_tier: 2, units: 150, entries: 2 },
        { day: '2026-03-02', hardware_tier: null, units: 4, entries: 1 },
        { day: '2026-03-02', hardware_tier: 2, units: 30, entries: 1 },
      ]);
      assert.deepEqual(await store.earningsByDay({ ...all, accountPk: w2 }), [
        { day: '2026-03-01', hardware_tier: 1, units: 10, entries: 2 },
        { day: '2026-03-02', hardware_tier: null, units: 4, entries: 1 },
      ]);
      assert.deepEqual(await store.earningsByDay({ fromIso: iso(day1), toIso: iso(day1) }), [
        { day: '2026-03-01', hardware_tier: 1, units: 7, entries: 1 },
        { day: '2026-03-01', hardware_tier: 2, units: 100, entries: 1 },
      ]);
      assert.deepEqual(await store.earningsByDay({ ...all, accountPk: accounts.requester }), []);
    });

    it('leaves out of `unsettled` the entries a submitted settlement covers, not those of a pending or failed one', async () => {
      const worker = accounts.worker;
      const [a, b, c] = [0, 1, 2].map((h) => entry({ account_pk: worker, created_at: iso(T0 + h * HOUR) })) as [
        LedgerEntry,
        LedgerEntry,
        LedgerEntry,
      ];
      const charge = entry({ account_pk: worker, kind: 'job_charge' });
      await store.post([a, b, c, charge, entry({ account_pk: accounts.relay })]);
      assert.deepEqual(await store.unsettled(worker), [a, b, c], 'positive entries only, oldest first');

      const paysA = settlementRecord({ entry_ids: [a.id], payees: { [worker]: 1000 } });
      await store.recordSettlement(paysA);
      assert.deepEqual(await store.unsettled(worker), [a, b, c], 'pending');
      await store.recordSettlement({ ...paysA, status: 'failed', error: 'tx_failed', attempts: 2 });
      assert.deepEqual(await store.unsettled(worker), [a, b, c], 'failed');
      await store.recordSettlement({ ...paysA, ...submitted, attempts: 3, at: iso(T0 + 1) });
      assert.deepEqual(await store.unsettled(worker), [b, c], 'submitted');

      const paysBC = settlementRecord({
        id: `balance:${worker}:1`,
        entry_ids: [b.id, c.id],
        payees: { [worker]: 2000 },
      });
      await store.recordSettlement(paysBC);
      assert.deepEqual(await store.unsettled(worker), [b, c]);
      await store.recordSettlement({ ...paysBC, ...submitted });
      assert.deepEqual(await store.unsettled(worker), []);
      assert.deepEqual(ids(await store.unsettled(accounts.relay)).length, 1);
    });

    it('keeps every settlement record: the latest supersedes, and only pending or failed ones are open, oldest first', async () => {
      const first = settlementRecord({ id: 'job:1', at: iso(T0 + 2000) });
      const second = settlementRecord({ id: 'job:2', at: iso(T0 + 1000) });
      const third = settlementRecord({ id: 'job:3', at: iso(T0 + 3000) });
      for (const s of [first, second, third]) await store.recordSettlement(s);
      assert.deepEqual(await store.settlement('job:1'), first);
      assert.deepEqual(ids(await store.openSettlements()), ['job:2', 'job:1', 'job:3']);
      assert.deepEqual(ids(await store.openSettlements(2)), ['job:2', 'job:1']);

      const landed = { ...second, ...submitted, attempts: 2, at: iso(T0 + 4000) };
      await store.recordSettlement(landed);
      assert.deepEqual(await store.settlement('job:2'), landed);
      const retrying = { ...first, status: 'failed' as const, error: 'timeout', attempts: 2, at: iso(T0 + 5000) };
      await store.recordSettlement(retrying);
      await store.recordSettlement(retrying); // the same record again changes nothing
      assert.deepEqual(await store.settlement('job:1'), retrying);
      assert.deepEqual(await store.openSettlements(), [third, retrying], 'ordered by their latest record');
      assert.deepEqual(await store.openSettlements(0), []);
    });

    it('keeps every anchor record per sealer and epoch: the latest supersedes, open ones oldest first', async () => {
      const sealer = newAccount();
      const e7 = anchorRecord({ sealer_pk: sealer, epoch: 7, at: iso(T0 + 2000) });
      const e8 = anchorRecord({ sealer_pk: sealer, epoch: 8, at: iso(T0 + 1000) });
      const other = anchorRecord({ epoch: 7, at: iso(T0 + 3000) });
      for (const a of [e7, e8, other]) await store.recordAnchor(a);
      assert.deepEqual(await store.anchor(sealer, 7), e7);
      assert.deepEqual(await store.anchor(sealer, 9), null);
      assert.deepEqual(await store.openAnchors(), [e8, e7, other]);
      const landed = { ...e8, ...submitted, attempts: 2, at: iso(T0 + 4000) };
      await store.recordAnchor(landed);
      const failed = { ...e7, status: 'failed' as const, error: 'timeout', at: iso(T0 + 5000) };
      await store.recordAnchor(failed);
      assert.deepEqual(await store.anchor(sealer, 8), landed);
      assert.deepEqual(await store.anchor(sealer, 7), failed);
      assert.deepEqual(await store.openAnchors(), [other, failed]);
      assert.deepEqual(await store.openAnchors(1), [other]);
    });

    it('refuses malformed records and queries with RangeError, storing nothing', async () => {
      const pk = accounts.worker;
      const good = entry({ account_pk: pk });
      const bad: Array<[string, unknown]> = [
        ['upper-case account', { ...good, account_pk: pk.toUpperCase() }],
        ['zero amount', { ...good, amount_units: 0 }],
        ['fractional amount', { ...good, amount_units: 1.5 }],
        ['unknown kind', { ...good, kind: 'tip' }],
        ['job earning without a job', { ...good, job_id: null }],
        ['tier 4', { ...good, hardware_tier: 4 }],
        ['timestamp without a zone', { ...good, created_at: '2026-03-01T12:00:00' }],
        ['timestamp finer than a millisecond', { ...good, created_at: '2026-03-01T12:00:00.0001Z' }],
        ['version 2', { ...good, version: 2 }],
        ['an extra field', { ...good, note: 'x' }],
        ['empty id', { ...good, id: '' }],
      ];
      for (const [what, value] of bad) {
        await assert.rejects(store.post([entry({ account_pk: pk }), value as LedgerEntry]), RangeError, what);
      }
      await assert.rejects(store.post([good, { ...good, amount_units: 2 }]), RangeError, 'one id twice, differently');
      assert.deepEqual(await store.entries(pk), []);

      const s = settlementRecord();
      for (const [what, value] of [
        ['submitted without a ledger', { ...s, status: 'submitted' }],
        ['submitted without a hash', { ...s, ...submitted, tx_hash: null }],
        ['payee not a key', { ...s, payees: { bob: 1 } }],
        ['payee amount 0', { ...s, payees: { [pk]: 0 } }],
        ['envelope not base64', { ...s, envelope_xdr: 'not base64!' }],
        ['unknown status', { ...s, status: 'lost' }],
      ] as Array<[string, unknown]>) {
        await assert.rejects(store.recordSettlement(value as LedgerSettlement), RangeError, what);
      }
      assert.equal(await store.settlement(s.id), null);
      const a = anchorRecord();
      await assert.rejects(store.recordAnchor({ ...a, root: 'zz' } as EpochAnchor), RangeError);
      await assert.rejects(store.recordAnchor({ ...a, epoch: -1 } as EpochAnchor), RangeError);
      assert.equal(await store.anchor(a.sealer_pk, a.epoch), null);

      await assert.rejects(store.balance('not a key'), RangeError);
      await assert.rejects(store.balance(pk, 'yesterday'), RangeError);
      await assert.rejects(store.entries(pk, { fromIso: '2026-13-01T00:00:00Z' }), RangeError);
      await assert.rejects(store.entries(pk, { limit: -1 }), RangeError);
      await assert.rejects(store.earningsByDay({ fromIso: iso(T0), toIso: 'later' }), RangeError);
      await assert.rejects(store.unsettled('x'), RangeError);
      await assert.rejects(store.openSettlements(1.5), RangeError);
      await assert.rejects(store.anchor(hex('5'), -1), RangeError);
    });

    it('stores a batch posted concurrently several times exactly once', async () => {
      const batch = jobBatch(accounts, 'job-race');
      const results = await Promise.all(Array.from({ length: 6 }, () => store.post(batch.map((e) => ({ ...e })))));
      const stored = results.flat();
      assert.deepEqual(sorted(stored), sorted(ids(batch)), 'every id reported new exactly once');
      assert.deepEqual(await store.jobEntries('job-race'), batch);
      assert.equal(await store.balance(accounts.requester), -160_000);
    });

    it('appends concurrent records of one settlement without losing any, the latest being one of them', async () => {
      const base = settlementRecord({ id: 'job:race' });
      const rivals = Array.from({ length: 6 }, (_, i) => ({ ...base, attempts: i + 1 }));
      await Promise.all(rivals.map((s) => store.recordSettlement(s)));
      const latest = await store.settlement('job:race');
      assert.ok(rivals.some((s) => JSON.stringify(s) === JSON.stringify(latest)));
      assert.deepEqual(ids(await store.openSettlements()), ['job:race']);
    });
  });
}
