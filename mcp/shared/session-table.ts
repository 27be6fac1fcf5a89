/**
 * The open Streamable HTTP sessions of one MCP server, least recently used first (docs/protocol.md §4.2,
 * "MCP sessions"). A client may leave without a DELETE (the TypeScript SDK's `Client.close()` sends none), so
 * a full table must not lock new clients out: a new session first makes room by closing the least recently
 * used idle session (no request in flight) — of its own client address when that address is at its bound, of
 * its own principal when that principal is at its bound, else of anyone when the table is full. Only when
 * every candidate is busy is the new session refused.
 */

export interface SessionLimits {
  /** Open sessions in all. */
  max: number;
  /** Open sessions of one client address. */
  perClient: number;
  /** Open sessions of one principal (the bearer token's agent). */
  perPrincipal: number;
  /** A session without a request for this long is closed. */
  idleMs: number;
  /** A JSON-RPC request not answered within this is cancelled and answered -32001 (mcp-transports.ts). */
  deadlineMs?: number;
  /** POSTs of one client address being answered at once; past it 429 `rate_limit`. */
  inFlightPerClient?: number;
}

/**
 * MCP_MAX_SESSIONS, MCP_SESSIONS_PER_CLIENT, MCP_SESSIONS_PER_PRINCIPAL, MCP_SESSION_IDLE_SECONDS,
 * MCP_REQUEST_DEADLINE_SECONDS and MCP_REQUESTS_IN_FLIGHT_PER_CLIENT defaults.
 */
export const DEFAULT_SESSION_LIMITS: Required<SessionLimits> = {
  max: 1000,
  perClient: 100,
  perPrincipal: 100,
  idleMs: 10 * 60_000,
  deadlineMs: 60_000,
  inFlightPerClient: 64,
};

export interface TableEntry {
  /** The client address (after trusted proxies). */
  client: string;
  /** The principal the session is bound to; null without one. */
  principal: string | null;
  lastSeen: number;
  /** Requests of the session being answered now: a busy session is never evicted. */
  inflight: number;
  close(): Promise<void>;
}

export class SessionTable<E extends TableEntry> {
  /** Insertion order is use order: `touch` moves an entry to the end. */
  private readonly entries = new Map<string, E>();

  constructor(
    readonly limits: SessionLimits,
    private readonly clock: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  values(): IterableIterator<E> {
    return this.entries.values();
  }

  /** The session, marked as used now; undefined when unknown or closed. */
  touch(id: string): E | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    this.entries.delete(id);
    this.entries.set(id, entry);
    entry.lastSeen = this.clock();
    return entry;
  }

  set(id: string, entry: E): void {
    this.entries.delete(id);
    this.entries.set(id, entry);
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  delete(id: string): boolean {
    return this.entries.delete(id);
  }

  clear(): void {
    this.entries.clear();
  }

  /**
   * Makes room for one more session of `client` and `principal` by closing least recently used idle sessions
   * (module comment). False when a bound is reached and every session under it is busy.
   */
  admit(client: string, principal: string | null): boolean {
    const count = (match: (entry: E) => boolean): number => {
      let n = 0;
      for (const entry of this.entries.values()) if (match(entry)) n += 1;
      return n;
    };
    const bounds: Array<{ match: (entry: E) => boolean; limit: number }> = [
      { match: (entry) => entry.client === client, limit: this.limits.perClient },
      ...(principal === null
        ? []
        : [{ match: (entry: E) => entry.principal === principal, limit: this.limits.perPrincipal }]),
      { match: () => true, limit: this.limits.max },
    ];
    for (const bound of bounds) {
      let excess = count(bound.match) - bound.limit + 1;
      while (excess > 0) {
        if (!this.evictOne(bound.match)) return false;
        excess -= 1;
      }
    }
    return true;
  }

  /** Closes every session idle since before `idleMs`; answers how many. */
  sweep(): number {
    const idleSince = this.clock() - this.limits.idleMs;
    let closed = 0;
    for (const [id, entry] of this.entries) {
      // Use order: the first recently seen entry ends the idle ones.
      if (entry.lastSeen >= idleSince) break;
      if (entry.inflight > 0) continue;
      this.entries.delete(id);
      void entry.close();
      closed += 1;
    }
    return closed;
  }

  private evictOne(match: (entry: E) => boolean): boolean {
    for (const [id, entry] of this.entries) {
      if (entry.inflight > 0 || !match(entry)) continue;
      this.entries.delete(id);
      void entry.close();
      return true;
    }
    return false;
  }
}
