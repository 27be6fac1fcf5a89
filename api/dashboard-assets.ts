/**
 * The dashboard's static files: the `dashboard/` folder of the package, plus a fixed list of
 * browser builds from node_modules (MapLibre GL's ESM build, its worker and CSS; h3-js's browser ESM build), so
 * the page loads nothing from a CDN. Only names that pass `assetPath` are ever opened: segments of a
 * conservative alphabet with no leading dot (no `..`, no dotfiles), known extensions only (no `tsconfig.json`,
 * no source maps), regular files inside the folder (a symlink out of it is refused). Files are read once and
 * kept with their ETag and gzip form; the dashboard's own files are re-read when their mtime or size changes.
 */
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve, sep } from 'node:path';
import { gzipSync } from 'node:zlib';
import { fail, pass, type Check } from '../core/check.js';

export interface Asset {
  bytes: Buffer;
  /** gzip of `bytes` when that is smaller (text files), else null. */
  gzip: Buffer | null;
  contentType: string;
  etag: string;
  /** `vendor` files change only with the installed package version, so browsers may keep them. */
  kind: 'page' | 'app' | 'vendor';
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
};

const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;
const MAX_SEGMENTS = 4;

const extensionOf = (name: string): string => {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? '' : name.slice(dot).toLowerCase();
};

/** The relative path of an asset request as segments, or `not_found` for anything outside the alphabet. */
export function assetPath(raw: unknown): Check<string[]> {
  const notFound = fail('not_found', 'no such dashboard asset');
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > 256) return notFound;
  const segments = raw.split('/');
  if (segments.length > MAX_SEGMENTS || !segments.every((s) => SEGMENT.test(s))) return notFound;
  const last = segments[segments.length - 1] as string;
  return CONTENT_TYPES[extensionOf(last)] === undefined ? notFound : pass(segments);
}

/** Where the installed browser builds are; resolved through each package's package.json. */
function vendorFiles(): Record<string, string> {
  const require = createRequire(import.meta.url);
  const root = (name: string) => dirname(require.resolve(`${name}/package.json`));
  const maplibre = join(root('maplibre-gl'), 'dist');
  return {
    // The ESM build finds its worker beside itself (`./maplibre-gl-worker.mjs`, same origin: no blob needed).
    'maplibre-gl.mjs': join(maplibre, 'maplibre-gl.mjs'),
    'maplibre-gl-worker.mjs': join(maplibre, 'maplibre-gl-worker.mjs'),
    'maplibre-gl.css': join(maplibre, 'maplibre-gl.css'),
    'h3-js.mjs': join(root('h3-js'), 'dist', 'browser', 'h3-js.es.js'),
  };
}

/** The package's `dashboard/` folder: beside `api/` in the sources, or two levels up from a `dist/` build. */
export function defaultDashboardRoot(): string | null {
  const here = import.meta.dirname;
  for (const candidate of [resolve(here, '..', 'dashboard'), resolve(here, '..', '..', 'dashboard')]) {
    if (existsSync(join(candidate, 'index.html'))) return candidate;
  }
  return null;
}

function load(file: string, kind: Asset['kind']): Asset {
  const bytes = readFileSync(file);
  const contentType = CONTENT_TYPES[extensionOf(file)] ?? 'application/octet-stream';
  const textual = contentType.startsWith('text/') || contentType === 'image/svg+xml';
  const zipped = textual && bytes.length > 1024 ? gzipSync(bytes, { level: 9 }) : null;
  return {
    bytes,
    gzip: zipped !== null && zipped.length < bytes.length ? zipped : null,
    contentType,
    etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"`,
    kind,
  };
}

export interface DashboardAssets {
  /** The dashboard's `index.html`, or null when the package was installed without the dashboard folder. */
  page(): Asset | null;
  /** `vendor/<name>` from the allowlist, else a file of the dashboard folder; null when there is none. */
  asset(segments: readonly string[]): Asset | null;
}

export function createDashboardAssets(options: { root?: string | null } = {}): DashboardAssets {
  const root = options.root === undefined ? defaultDashboardRoot() : options.root;
  const realRoot = root === null ? null : realpathSync(root);
  const vendor = vendorFiles();
  const vendorCache = new Map<string, Asset>();
  const appCache = new Map<string, { asset: Asset; mtimeMs: number; size: number }>();

  function appFile(segments: readonly string[], kind: Asset['kind']): Asset | null {
    if (realRoot === null) return null;
    const file = resolve(realRoot, ...segments);
    // assetPath already excludes `..`; this is the second lock on the same door.
    if (!file.startsWith(realRoot + sep)) return null;
    let stat;
    try {
      stat = lstatSync(file);
    } catch {
      return null;
    }
    if (!stat.isFile()) return null; // directories, symlinks, devices
    const cached = appCache.get(file);
    if (cached && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size) return cached.asset;
    const asset = load(file, kind);
    appCache.set(file, { asset, mtimeMs: stat.mtimeMs, size: stat.size });
    return asset;
  }

  return {
    page: () => appFile(['index.html'], 'page'),
    asset(segments) {
      if (segments[0] === 'vendor') {
        const name = segments.length === 2 ? (segments[1] as string) : '';
        const file = Object.hasOwn(vendor, name) ? vendor[name] : undefined;
        if (file === undefined) return null;
        let asset = vendorCache.get(name);
        if (!asset) {
          if (!existsSync(file)) return null; // an installed version without this build
          vendorCache.set(name, (asset = load(file, 'vendor')));
        }
        return asset;
      }
      return appFile(segments, extensionOf(segments[segments.length - 1] as string) === '.html' ? 'page' : 'app');
    },
  };
}
