/**
 * A local Horizon on an ephemeral port speaking the endpoints settlement and anchoring use:
 * `GET /accounts/:id`, `POST /transactions` (form-encoded `tx`), `GET /transactions/:hash`,
 * `GET /accounts/:id/transactions?order&limit&cursor`, `GET /transactions/:hash/operations`.
 *
 * It VALIDATES every submitted envelope the way Stellar would before applying it: parses it with the
 * network passphrase, requires the source account to exist and a valid signature by its key over the
 * transaction hash (a wrong passphrase therefore fails as tx_bad_auth), the sequence to be the account's
 * next one (else 400 tx_bad_seq, like real Horizon), the fee, and each operation (payment: a `G…`
 * destination, a positive amount, an allowed asset; manage_data: name and value sizes). A transaction with
 * payments must carry a hash memo (our settlement convention; it catches a missing job hash). Accepted
 * transactions get incrementing ledger numbers and are exposed to tests.
 *
 * Faults: fail the next N submits with a status (503/504; optionally applying the transaction first, as a
 * real 504 may), or apply the next submit and destroy the socket before answering ("lost response": the
 * client cannot know the payment landed).
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  FeeBumpTransaction,
  Keypair,
  Networks,
  StrKey,
  TransactionBuilder,
  type Asset,
  type Operation,
  type Transaction,
} from '@stellar/stellar-sdk';

export interface FakeOperation {
  type: 'payment' | 'manage_data';
  source_account: string;
  // payment
  from?: string;
  to?: string;
  amount?: string;
  /** `native` or `CODE:ISSUER`. */
  asset?: string;
  // manage_data
  name?: string;
  /** Hex of the value bytes; null deletes the entry. */
  value_hex?: string | null;
}

export interface FakeTransaction {
  hash: string;
  ledger: number;
  paging_token: string;
  source_account: string;
  sequence: string;
  fee: string;
  memo_type: string;
  /** Hex of a hash/return memo, the text of a text memo, the id of an id memo; null for none. */
  memo: string | null;
  operations: FakeOperation[];
  envelope_xdr: string;
  created_at: string;
}

export interface FakePayment {
  tx_hash: string;
  ledger: number;
  from: string;
  to: string;
  amount: string;
  asset: string;
  memo_hex: string | null;
}

export interface FakeSubmission {
  /** Null when the body was not a parseable envelope. */
  hash: string | null;
  status: number;
  code: string | null;
  applied: boolean;
}

export interface FakeHorizonOptions {
  networkPassphrase?: string;
  /** Assets payments may use (`native`, `CODE:ISSUER`); default native only. */
  assets?: string[];
  /** First ledger number handed out (incremented per accepted transaction). */
  startLedger?: number;
}

export interface FakeHorizon {
  url: string;
  networkPassphrase: string;
  /** Creates an account (a `G…` id) with a sequence number (default 2^32 × 1000). */
  addAccount(accountId: string, sequence?: bigint): void;
  sequenceOf(accountId: string): bigint;
  /** Uses up the account's next sequence outside our code (another wallet spending from the same key). */
  consumeSequence(accountId: string): void;
  transactions(): FakeTransaction[];
  payments(): FakePayment[];
  /** Every POST /transactions received, in order, with what it answered. */
  submissions(): FakeSubmission[];
  /** Every request line received (method and path), in order. */
  requests(): string[];
  /** The next `count` valid submits answer `status`; with `apply` the transaction is applied first. */
  failNextSubmits(count: number, status?: number, options?: { apply?: boolean }): void;
  /** The next `count` valid submits are applied, then their socket is destroyed without an answer. */
  loseNextResponses(count?: number): void;
  close(): Promise<void>;
}

const assetSpec = (asset: Asset): string => (asset.isNative() ? 'native' : `${asset.getCode()}:${asset.getIssuer()}`);

class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly operations: string[] = [],
  ) {
    super(code);
  }
}

export async function startFakeHorizon(options: FakeHorizonOptions = {}): Promise<FakeHorizon> {
  const passphrase = options.networkPassphrase ?? Networks.TESTNET;
  const allowedAssets = new Set(options.assets ?? ['native']);
  const accounts = new Map<string, bigint>();
  const txs: FakeTransaction[] = [];
  const byHash = new Map<string, FakeTransaction>();
  const submissions: FakeSubmission[] = [];
  const requests: string[] = [];
  let ledger = options.startLedger ?? 1000;
  const faults = { failCount: 0, failStatus: 503, failApply: false, loseCount: 0 };

  function validate(envelope: string): Transaction {
    let parsed: Transaction | FeeBumpTransaction;
    try {
      parsed = TransactionBuilder.fromXDR(envelope, passphrase);
    } catch {
      throw new Refusal(400, 'tx_malformed');
    }
    if (parsed instanceof FeeBumpTransaction) throw new Refusal(400, 'tx_not_supported');
    const tx = parsed;
    const source = tx.source;
    const current = accounts.get(source);
    if (current === undefined) throw new Refusal(400, 'tx_no_account');

    const signer = Keypair.fromPublicKey(source);
    const hash = tx.hash();
    const verified = tx.signatures.filter((sig) => signer.verify(hash, sig.signature()));
    if (verified.length === 0) throw new Refusal(400, 'tx_bad_auth');
    if (verified.length !== tx.signatures.length) throw new Refusal(400, 'tx_bad_auth_extra');
    if (BigInt(tx.sequence) !== current + 1n) throw new Refusal(400, 'tx_bad_seq');
    if (tx.operations.length === 0) throw new Refusal(400, 'tx_missing_operation');
    if (Number(tx.fee) < 100 * tx.operations.length) throw new Refusal(400, 'tx_insufficient_fee');

    const opCodes = tx.operations.map((op) => checkOperation(op, source));
    if (opCodes.some((c) => c !== 'op_success')) throw new Refusal(400, 'tx_failed', opCodes);
    const hasPayment = tx.operations.some((op) => op.type === 'payment');
    if (hasPayment && (tx.memo.type !== 'hash' || !Buffer.isBuffer(tx.memo.value) || tx.memo.value.length !== 32)) {
      throw new Refusal(400, 'tx_memo_required');
    }
    return tx;
  }

  function checkOperation(op: Operation, source: string): string {
    if ((op.source ?? source) !== source) return 'op_bad_auth'; // only single-signer accounts here
    if (op.type === 'payment') {
      if (!StrKey.isValidEd25519PublicKey(op.destination)) return 'op_malformed';
      if (!/^\d+\.\d{1,7}$|^\d+$/.test(op.amount) || Number(op.amount) <= 0) return 'op_malformed';
      if (!allowedAssets.has(assetSpec(op.asset))) return 'op_no_trust';
      return 'op_success';
    }
    if (op.type === 'manageData') {
      const name = Buffer.from(op.name, 'utf8');
      if (name.length === 0 || name.length > 64) return 'op_malformed';
      if (op.value !== undefined && op.value.length > 64) return 'op_malformed';
      return 'op_success';
    }
    return 'op_not_supported';
  }

  function apply(tx: Transaction, envelope: string): FakeTransaction {
    accounts.set(tx.source, BigInt(tx.sequence));
    ledger += 1;
    const memoValue = tx.memo.value;
    const record: FakeTransaction = {
      hash: tx.hash().toString('hex'),
      ledger,
      paging_token: String(ledger * 4096),
      source_account: tx.source,
      sequence: tx.sequence,
      fee: tx.fee,
      memo_type: tx.memo.type,
      memo:
        memoValue === null || memoValue === undefined
          ? null
          : Buffer.isBuffer(memoValue)
            ? tx.memo.type === 'text'
              ? memoValue.toString('utf8')
              : memoValue.toString('hex')
            : String(memoValue),
      operations: tx.operations.map((op) => {
        const source_account = op.source ?? tx.source;
        if (op.type === 'payment') {
          return {
            type: 'payment',
            source_account,
            from: source_account,
            to: op.destination,
            amount: op.amount,
            asset: assetSpec(op.asset),
          };
        }
        const data = op as Operation.ManageData;
        return {
          type: 'manage_data',
          source_account,
          name: data.name,
          value_hex: data.value === undefined ? null : data.value.toString('hex'),
        };
      }),
      envelope_xdr: envelope,
      created_at: new Date().toISOString(),
    };
    txs.push(record);
    byHash.set(record.hash, record);
    return record;
  }

  const horizonTx = (t: FakeTransaction) => ({
    id: t.hash,
    paging_token: t.paging_token,
    successful: true,
    hash: t.hash,
    ledger: t.ledger,
    created_at: t.created_at,
    source_account: t.source_account,
    source_account_sequence: t.sequence,
    fee_charged: t.fee,
    max_fee: t.fee,
    operation_count: t.operations.length,
    envelope_xdr: t.envelope_xdr,
    memo_type: t.memo_type,
    ...(t.memo === null
      ? {}
      : {
          memo:
            t.memo_type === 'hash' || t.memo_type === 'return' ? Buffer.from(t.memo, 'hex').toString('base64') : t.memo,
        }),
  });

  const horizonOp = (t: FakeTransaction, op: FakeOperation, index: number) => {
    const common = {
      id: String(Number(t.paging_token) + index + 1),
      paging_token: String(Number(t.paging_token) + index + 1),
      transaction_successful: true,
      source_account: op.source_account,
      created_at: t.created_at,
      transaction_hash: t.hash,
    };
    if (op.type === 'manage_data') {
      return {
        ...common,
        type: 'manage_data',
        type_i: 10,
        name: op.name,
        value: op.value_hex == null ? null : Buffer.from(op.value_hex, 'hex').toString('base64'),
      };
    }
    const [code, issuer] = op.asset === 'native' ? [] : op.asset!.split(':');
    return {
      ...common,
      type: 'payment',
      type_i: 1,
      from: op.from,
      to: op.to,
      amount: Number(op.amount).toFixed(7),
      asset_type: code === undefined ? 'native' : code.length <= 4 ? 'credit_alphanum4' : 'credit_alphanum12',
      ...(code === undefined ? {} : { asset_code: code, asset_issuer: issuer }),
    };
  };

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': status >= 400 ? 'application/problem+json' : 'application/hal+json' });
    res.end(JSON.stringify(body));
  };
  const notFound = (res: ServerResponse) =>
    send(res, 404, { type: 'https://stellar.org/horizon-errors/not_found', title: 'Resource Missing', status: 404 });
  const refused = (res: ServerResponse, envelope: string, r: Refusal) =>
    send(res, r.status, {
      type: 'https://stellar.org/horizon-errors/transaction_failed',
      title: 'Transaction Failed',
      status: r.status,
      extras: {
        envelope_xdr: envelope,
        result_codes: { transaction: r.code, ...(r.operations.length ? { operations: r.operations } : {}) },
      },
    });
  const page = (records: unknown[]) => ({ _links: {}, _embedded: { records } });

  async function readBody(req: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake-horizon');
    requests.push(`${req.method} ${url.pathname}${url.search}`);
    const parts = url.pathname.split('/').filter(Boolean);

    if (req.method === 'POST' && url.pathname === '/transactions') {
      const envelope = new URLSearchParams(await readBody(req)).get('tx');
      if (envelope === null) {
        submissions.push({ hash: null, status: 400, code: 'tx_missing', applied: false });
        return send(res, 400, { title: 'Transaction Missing', status: 400 });
      }
      let tx: Transaction;
      try {
        tx = validate(envelope);
      } catch (error) {
        if (!(error instanceof Refusal)) throw error;
        submissions.push({ hash: safeHash(envelope), status: error.status, code: error.code, applied: false });
        return refused(res, envelope, error);
      }
      const hash = tx.hash().toString('hex');
      if (faults.failCount > 0) {
        faults.failCount--;
        if (faults.failApply) apply(tx, envelope);
        submissions.push({ hash, status: faults.failStatus, code: 'fault', applied: faults.failApply });
        return send(res, faults.failStatus, {
          title: faults.failStatus === 504 ? 'Timeout' : 'Service Unavailable',
          status: faults.failStatus,
        });
      }
      if (faults.loseCount > 0) {
        faults.loseCount--;
        apply(tx, envelope);
        submissions.push({ hash, status: 0, code: 'lost', applied: true });
        req.socket.destroy();
        return;
      }
      const record = apply(tx, envelope);
      submissions.push({ hash, status: 200, code: null, applied: true });
      return send(res, 200, horizonTx(record));
    }

    if (req.method !== 'GET') return send(res, 405, { title: 'Method Not Allowed', status: 405 });

    if (parts[0] === 'accounts' && parts.length === 2) {
      const sequence = accounts.get(parts[1]!);
      if (sequence === undefined) return notFound(res);
      return send(res, 200, {
        id: parts[1],
        account_id: parts[1],
        sequence: sequence.toString(),
        balances: [{ asset_type: 'native', balance: '10000.0000000' }],
      });
    }
    if (parts[0] === 'accounts' && parts[2] === 'transactions' && parts.length === 3) {
      if (!accounts.has(parts[1]!)) return notFound(res);
      const order = url.searchParams.get('order') === 'asc' ? 'asc' : 'desc';
      const limit = Math.min(200, Math.max(1, Number(url.searchParams.get('limit') ?? 10)));
      const cursor = url.searchParams.get('cursor');
      let list = txs.filter((t) => t.source_account === parts[1]);
      if (order === 'desc') list = list.reverse();
      if (cursor !== null) {
        list = list.filter((t) =>
          order === 'desc' ? Number(t.paging_token) < Number(cursor) : Number(t.paging_token) > Number(cursor),
        );
      }
      return send(res, 200, page(list.slice(0, limit).map(horizonTx)));
    }
    if (parts[0] === 'transactions' && (parts.length === 2 || (parts.length === 3 && parts[2] === 'operations'))) {
      const t = byHash.get(parts[1]!);
      if (t === undefined) return notFound(res);
      if (parts.length === 2) return send(res, 200, horizonTx(t));
      return send(res, 200, page(t.operations.map((op, i) => horizonOp(t, op, i))));
    }
    return notFound(res);
  }

  const safeHash = (envelope: string): string | null => {
    try {
      return TransactionBuilder.fromXDR(envelope, passphrase).hash().toString('hex');
    } catch {
      return null;
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, { title: 'Internal Server Error', detail: String(error) });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    networkPassphrase: passphrase,
    addAccount(accountId, sequence = 1000n << 32n) {
      if (!StrKey.isValidEd25519PublicKey(accountId)) throw new TypeError(`not an account id: ${accountId}`);
      accounts.set(accountId, sequence);
    },
    sequenceOf(accountId) {
      const sequence = accounts.get(accountId);
      if (sequence === undefined) throw new Error(`no account ${accountId}`);
      return sequence;
    },
    consumeSequence(accountId) {
      const sequence = accounts.get(accountId);
      if (sequence === undefined) throw new Error(`no account ${accountId}`);
      accounts.set(accountId, sequence + 1n);
    },
    transactions: () => txs.map((t) => ({ ...t, operations: t.operations.map((op) => ({ ...op })) })),
    payments: () =>
      txs.flatMap((t) =>
        t.operations
          .filter((op) => op.type === 'payment')
          .map((op) => ({
            tx_hash: t.hash,
            ledger: t.ledger,
            from: op.from!,
            to: op.to!,
            amount: op.amount!,
            asset: op.asset!,
            memo_hex: t.memo_type === 'hash' ? t.memo : null,
          })),
      ),
    submissions: () => submissions.map((s) => ({ ...s })),
    requests: () => [...requests],
    failNextSubmits(count, status = 503, opts = {}) {
      faults.failCount = count;
      faults.failStatus = status;
      faults.failApply = opts.apply ?? false;
    },
    loseNextResponses(count = 1) {
      faults.loseCount = count;
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
