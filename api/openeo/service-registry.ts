/**
 * The XYZ services of this gateway (docs/protocol.md §16.10), held in memory: a service is a process graph and a
 * colour map, cheap to create again, and lost on restart like the tile cache. Each has an id its owner manages it
 * by and a separate tile token, the capability in its tile URL: 144 random bits, so a tile URL cannot be guessed
 * from anything the owner's listing, the logs or another service show.
 */
import { randomBytes } from 'node:crypto';
import type { ProcessGraph } from '../../core/openeo/graph.js';
import { OpenEoError } from '../../core/openeo/errors.js';
import type { ColorMap } from '../../core/openeo/xyz.js';

export const LOG_LEVELS = ['error', 'warning', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface ServiceLogEntry {
  id: string;
  level: LogLevel;
  message: string;
  time: string;
}

export interface XyzConfiguration {
  colormap: ColorMap;
  range: [number, number];
}

export interface XyzService {
  id: string;
  token: string;
  /** The API key that created it: only it manages the service, and its budget pays the tiles. */
  owner: string;
  title: string | null;
  description: string | null;
  /** The process as sent (`process_graph` and its metadata), answered back as is. */
  process: Record<string, unknown>;
  graph: ProcessGraph;
  graphSha256: string;
  configuration: XyzConfiguration;
  enabled: boolean;
  created: string;
  plan: string | null;
  budget: number | null;
  /** Credits spent on tiles so far. */
  costs: number;
  logLevel: LogLevel;
  /** Bumped by every change of what a tile shows: cached tiles of an older revision are never served. */
  revision: number;
  logs: ServiceLogEntry[];
  nextLog: number;
}

/** Services one API key may hold at once. */
export const MAX_SERVICES_PER_KEY = 20;
/** Log entries kept per service (the oldest go first). */
export const MAX_LOG_ENTRIES = 200;

export interface ServiceRegistry {
  create(fields: Omit<XyzService, 'id' | 'token' | 'costs' | 'revision' | 'logs' | 'nextLog'>): XyzService;
  /** The owner's service, or ServiceNotFound: another key's service is answered as absent. */
  owned(id: string, owner: string): XyzService;
  list(owner: string): XyzService[];
  byToken(token: string): XyzService | undefined;
  remove(id: string, owner: string): void;
  log(service: XyzService, level: LogLevel, message: string, now: number): void;
}

export function createServiceRegistry(): ServiceRegistry {
  const byId = new Map<string, XyzService>();
  const byToken = new Map<string, XyzService>();
  const notFound = (id: string) => new OpenEoError('ServiceNotFound', `Service '${id}' does not exist.`, 404);
  return {
    create(fields) {
      if ([...byId.values()].filter((s) => s.owner === fields.owner).length >= MAX_SERVICES_PER_KEY) {
        throw new OpenEoError(
          'PermissionsInsufficient',
          `An API key holds at most ${MAX_SERVICES_PER_KEY} services: delete one (DELETE /services/{service_id}) first.`,
        );
      }
      const service: XyzService = {
        ...fields,
        id: `xyz-${randomBytes(8).toString('hex')}`,
        token: randomBytes(18).toString('base64url'),
        costs: 0,
        revision: 0,
        logs: [],
        nextLog: 0,
      };
      byId.set(service.id, service);
      byToken.set(service.token, service);
      return service;
    },
    owned(id, owner) {
      const service = byId.get(id);
      if (service === undefined || service.owner !== owner) throw notFound(id);
      return service;
    },
    list: (owner) => [...byId.values()].filter((s) => s.owner === owner),
    byToken: (token) => byToken.get(token),
    remove(id, owner) {
      const service = this.owned(id, owner);
      byId.delete(service.id);
      byToken.delete(service.token);
    },
    log(service, level, message, now) {
      if (LOG_LEVELS.indexOf(level) > LOG_LEVELS.indexOf(service.logLevel)) return;
      service.logs.push({ id: String(service.nextLog++), level, message, time: new Date(now).toISOString() });
      if (service.logs.length > MAX_LOG_ENTRIES) service.logs.shift();
    },
  };
}
