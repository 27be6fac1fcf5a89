/**
 * A local Open-Meteo forecast API on an ephemeral port, speaking the real protocol for the weather tool's
 * tests: `GET /v1/forecast` with `latitude`, `longitude`, `current=` or `hourly=` variable lists,
 * `start_hour`/`end_hour`, `wind_speed_unit` (kmh default, ms, mph, kn), `timezone`; the answer has the real
 * shape (`latitude`/`longitude` snapped to the model grid, `current_units` + `current`, `hourly_units` +
 * `hourly` arrays, times as "YYYY-MM-DDTHH:MM") and errors as HTTP 400 `{ "error": true, "reason": … }`.
 * Wind speeds are held in m/s and converted to the unit asked for, as the real API does.
 *
 * `startOpenMeteoServer({ kind: 'archive' })` is the ERA5 archive API instead: `GET /v1/archive` with
 * `start_date`/`end_date` (yyyy-mm-dd, from 1940-01-01; no `current`, no `start_hour`), answering every hour
 * of the days asked; hours after `filledUntil` answer nulls, as the real archive does for days ERA5 has not
 * reached yet.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface WeatherValues {
  temperature_2m: number | null;
  /** m/s; answered in the requested `wind_speed_unit`. */
  wind_speed_10m: number | null;
  wind_direction_10m: number | null;
  precipitation: number | null;
  weather_code: number | null;
}

export interface OpenMeteoRequest {
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
}

export interface OpenMeteoServer {
  url: string;
  /** Every request received, in order. */
  requests: OpenMeteoRequest[];
  /** The `current` block: values and its time ("YYYY-MM-DDTHH:MM", UTC). */
  setCurrent(values: Partial<WeatherValues> & { time?: string }): void;
  /** Values of one hour ("YYYY-MM-DDTHH:00"); hours not set answer the current values. */
  setHourly(time: string, values: Partial<WeatherValues>): void;
  /** Answer every request with this status (and Open-Meteo's error body), or never answer; undefined → heal. */
  failWith(fault: number | 'hang' | undefined): void;
  close(): Promise<void>;
}

export const DEFAULT_WEATHER: WeatherValues & { time: string } = {
  time: '2026-03-01T12:00',
  temperature_2m: 14.3,
  wind_speed_10m: 3.2,
  wind_direction_10m: 250,
  precipitation: 0,
  weather_code: 3,
};

const VARIABLES = new Set(['temperature_2m', 'wind_speed_10m', 'wind_direction_10m', 'precipitation', 'weather_code']);
const UNITS: Record<string, string> = {
  temperature_2m: '°C',
  wind_speed_10m: 'm/s',
  wind_direction_10m: '°',
  precipitation: 'mm',
  weather_code: 'wmo code',
};
const WIND: Record<string, { unit: string; factor: number }> = {
  kmh: { unit: 'km/h', factor: 3.6 },
  ms: { unit: 'm/s', factor: 1 },
  mph: { unit: 'mp/h', factor: 2.236936 },
  kn: { unit: 'kn', factor: 1.943844 },
};
const HOUR = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

class BadRequest extends Error {}

export interface OpenMeteoOptions {
  kind?: 'forecast' | 'archive';
  /** Archive only: the last hour ERA5 has filled ("YYYY-MM-DDTHH:00"); later hours answer nulls. */
  filledUntil?: string;
}

export async function startOpenMeteoServer(options: OpenMeteoOptions = {}): Promise<OpenMeteoServer> {
  const kind = options.kind ?? 'forecast';
  const path = `/v1/${kind}`;
  const state = {
    current: { ...DEFAULT_WEATHER },
    hourly: new Map<string, Partial<WeatherValues>>(),
    fault: undefined as number | 'hang' | undefined,
    requests: [] as OpenMeteoRequest[],
  };

  function answer(query: URLSearchParams): Record<string, unknown> {
    const latitude = Number(query.get('latitude'));
    const longitude = Number(query.get('longitude'));
    if (
      !query.has('latitude') ||
      !query.has('longitude') ||
      !Number.isFinite(latitude) ||
      !Number.isFinite(longitude)
    ) {
      throw new BadRequest("Parameter 'latitude' and 'longitude' must have the same number of elements");
    }
    if (Math.abs(latitude) > 90) throw new BadRequest(`Latitude must be in range of -90 to 90°. Given: ${latitude}.`);
    if (Math.abs(longitude) > 180)
      throw new BadRequest(`Longitude must be in range of -180 to 180°. Given: ${longitude}.`);
    const wind = WIND[query.get('wind_speed_unit') ?? 'kmh'];
    if (!wind)
      throw new BadRequest(`Cannot initialize WindspeedUnit from invalid String value ${query.get('wind_speed_unit')}`);
    const list = (key: string) => {
      const names = (query.get(key) ?? '').split(',').filter(Boolean);
      for (const name of names) {
        if (!VARIABLES.has(name))
          throw new BadRequest(`Cannot initialize ForecastVariable from invalid String value ${name} for key ${key}`);
      }
      return names;
    };
    const units = (names: string[]) =>
      Object.fromEntries(names.map((n) => [n, n === 'wind_speed_10m' ? wind.unit : UNITS[n]]));
    const convert = (name: string, values: Partial<WeatherValues>) => {
      const v = values[name as keyof WeatherValues] ?? state.current[name as keyof WeatherValues];
      return name === 'wind_speed_10m' && v !== null ? Math.round(v * wind.factor * 100) / 100 : v;
    };

    const body: Record<string, unknown> = {
      // Open-Meteo answers the grid point it used, not the coordinates asked for.
      latitude: Math.round(latitude * 10) / 10,
      longitude: Math.round(longitude * 10) / 10,
      generationtime_ms: 0.04,
      utc_offset_seconds: 0,
      timezone: query.get('timezone') ?? 'GMT',
      timezone_abbreviation: query.get('timezone') ?? 'GMT',
      elevation: 21,
    };
    const current = list('current');
    if (current.length && kind === 'archive') throw new BadRequest("Parameter 'current' is not supported here");
    if (current.length) {
      body.current_units = { time: 'iso8601', interval: 'seconds', ...units(current) };
      body.current = {
        time: state.current.time,
        interval: 900,
        ...Object.fromEntries(current.map((n) => [n, convert(n, state.current)])),
      };
    }
    const hourly = list('hourly');
    if (hourly.length) {
      let start: string | null;
      let end: string | null;
      if (kind === 'archive') {
        const from = query.get('start_date');
        const to = query.get('end_date');
        if (!from || !to || !DATE.test(from) || !DATE.test(to)) {
          throw new BadRequest("Parameter 'start_date' and 'end_date' are required (yyyy-MM-dd)");
        }
        if (from < '1940-01-01') {
          throw new BadRequest(`Parameter 'start_date' is out of allowed range from 1940-01-01. Given: ${from}.`);
        }
        [start, end] = [`${from}T00:00`, `${to}T23:00`];
      } else {
        start = query.get('start_hour');
        end = query.get('end_hour');
        if (!start || !end || !HOUR.test(start) || !HOUR.test(end)) {
          throw new BadRequest('this fake serves hourly data for start_hour/end_hour (yyyy-MM-ddTHH:mm) only');
        }
      }
      const times: string[] = [];
      for (let t = Date.parse(`${start}Z`); t <= Date.parse(`${end}Z`); t += 3_600_000) {
        times.push(new Date(t).toISOString().slice(0, 16));
      }
      const filled = (t: string) => kind !== 'archive' || !options.filledUntil || t <= options.filledUntil;
      body.hourly_units = { time: 'iso8601', ...units(hourly) };
      body.hourly = {
        time: times,
        ...Object.fromEntries(
          hourly.map((n) => [n, times.map((t) => (filled(t) ? convert(n, state.hourly.get(t) ?? {}) : null))]),
        ),
      };
    }
    return body;
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    state.requests.push({ path: url.pathname, query: url.searchParams, headers: req.headers });
    if (state.fault === 'hang') return; // the socket stays open until close()
    res.setHeader('content-type', 'application/json; charset=utf-8');
    if (typeof state.fault === 'number') {
      return void res.writeHead(state.fault).end(JSON.stringify({ error: true, reason: 'Internal server error' }));
    }
    if (req.method !== 'GET' || url.pathname !== path) {
      return void res.writeHead(404).end(JSON.stringify({ error: true, reason: 'Not Found' }));
    }
    try {
      res.end(JSON.stringify(answer(url.searchParams)));
    } catch (error) {
      if (!(error instanceof BadRequest)) throw error;
      res.writeHead(400).end(JSON.stringify({ error: true, reason: error.message }));
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: state.requests,
    setCurrent: (values) => Object.assign(state.current, values),
    setHourly: (time, values) => void state.hourly.set(time, values),
    failWith: (fault) => {
      state.fault = fault;
    },
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
