/**
 * `perception_weather` (docs/protocol.md §4.2): the weather at an H3 cell's centroid from an Open-Meteo-compatible API.
 *
 * Now (no timestamp, or one within 30 minutes of the call) asks the forecast API for the `current` block.
 * Any other instant is looked up as the `hourly` value of its UTC hour, from one of two sources chosen by date:
 * - older than ARCHIVE_AFTER_MS (5 days): the archive API (ERA5 reanalysis, `/v1/archive`, one day asked by
 *   `start_date` = `end_date`), which covers 1940-01-01 up to about 5 days ago;
 * - newer (up to 16 days ahead): the forecast API (`start_hour` = `end_hour`), which serves 92 days back.
 * The archive lags by a varying few days; an archive hour it has not filled yet (all values null) is asked of
 * the forecast API instead when that one reaches it. Instants before 1940 or more than 16 days ahead are
 * refused as `timestamp_out_of_range` rather than sent to a host that would refuse them. The result's
 * `source` says which API answered. Units are requested explicitly (°C, m/s, mm) and checked in the answer,
 * so a proxy that ignores `wind_speed_unit` cannot pass km/h off as m/s.
 *
 * `write_to_spatial_memory` is accepted and echoed; spatial memory is not built, and the result says so.
 */
import { z } from 'zod';
import { cellCentroid, DEFAULT_PERCEPTION_CELL } from '../../../core/h3-cell.js';
import { cellArgument } from '../../shared/structured.js';
import { cellToolCoaz, ToolError, type PerceptionTool } from '../tool-def.js';
import { fetchUpstreamJson, upstreamReason } from './upstream-fetch.js';

/** The fixed city of `GET /test/weather`: the default perception cell over Rome. */
export const WEATHER_TEST_CELL = DEFAULT_PERCEPTION_CELL;

const VARIABLES = ['temperature_2m', 'wind_speed_10m', 'wind_direction_10m', 'precipitation', 'weather_code'] as const;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** A timestamp this close to the call is "now": the current conditions answer it. */
export const CURRENT_TOLERANCE_MS = 30 * 60_000;
/** The forecast API's hourly range around now (`past_days` ≤ 92, `forecast_days` ≤ 16). */
export const PAST_LIMIT_MS = 92 * DAY_MS;
export const FUTURE_LIMIT_MS = 16 * DAY_MS;
/** Instants older than this go to the archive API, which is filled up to about 5 days before now. */
export const ARCHIVE_AFTER_MS = 5 * DAY_MS;
/** The archive's first hour (ERA5 starts in 1940). */
export const ARCHIVE_START_MS = Date.UTC(1940, 0, 1);

export const weatherInputSchema = {
  h3_cell: cellArgument('where to read the weather (the cell centroid)'),
  timestamp: z.iso
    .datetime({ offset: true })
    .optional()
    .describe('ISO 8601 instant from 1940-01-01 to 16 days ahead (default: now); its UTC hour is looked up')
    .meta({ examples: ['2026-03-01T12:00:00Z'] }),
  write_to_spatial_memory: z
    .boolean()
    .optional()
    .default(false)
    .describe('accepted and echoed; spatial memory is not available yet')
    .meta({ examples: [false] }),
};
type WeatherArgs = z.infer<z.ZodObject<typeof weatherInputSchema>>;

export interface WeatherDeps {
  /** Forecast API root without a trailing path, e.g. https://api.open-meteo.com */
  weatherUrl: string;
  /**
   * Archive API root, e.g. https://archive-api.open-meteo.com. Without it, instants the forecast API does not
   * reach (more than 92 days back) are refused as `timestamp_out_of_range`.
   */
  archiveUrl?: string;
  timeoutMs: number;
  userAgent: string;
  /** Measures the upstream's answer time (`upstream_ms`); the call's instant is the context's `now`. */
  clock: () => number;
}

export interface WeatherResult {
  h3_cell: string;
  /** The instant asked about (ISO 8601 UTC). */
  timestamp: string;
  /** The upstream's time of the values (ISO 8601 UTC): the current block's time or the hour's start. */
  observed_at: string;
  mode: 'current' | 'hourly';
  /** Which API answered: the ERA5 archive or the forecast API. */
  source: 'archive' | 'forecast';
  temperature_c: number | null;
  wind_speed_ms: number | null;
  /** Where the wind comes from, degrees clockwise from north. */
  wind_direction_deg: number | null;
  /** Current: precipitation over the preceding interval; hourly: over the preceding hour. */
  precipitation_mm: number | null;
  weather_code: number | null;
  /** "ok" for an answered call (clients of the tool this one replaces read it). */
  status: 'ok';
  /** The weather code as a short word ("rain", "cloudy"). */
  conditions: string;
  /** The host that answered. */
  data_source: string;
  /** The cell centroid (`lat`/`lon` are the same values under the names the replaced tool used). */
  latitude: number;
  longitude: number;
  lat: number;
  lon: number;
  upstream_ms: number;
  write_to_spatial_memory: boolean;
  spatial_memory: 'not available';
}

/** WMO weather interpretation codes (as Open-Meteo documents them) → a short human word. */
export function weatherStatus(code: number | null): string {
  if (code === null) return 'unknown';
  if (code === 0) return 'clear';
  if (code === 1) return 'mainly clear';
  if (code === 2) return 'partly cloudy';
  if (code === 3) return 'cloudy';
  if (code === 45 || code === 48) return 'fog';
  if (code >= 51 && code <= 55) return 'drizzle';
  if (code === 56 || code === 57) return 'freezing drizzle';
  if (code >= 61 && code <= 65) return 'rain';
  if (code === 66 || code === 67) return 'freezing rain';
  if (code >= 71 && code <= 77) return 'snow';
  if (code >= 80 && code <= 82) return 'showers';
  if (code === 85 || code === 86) return 'snow showers';
  if (code === 95) return 'thunderstorm';
  if (code === 96 || code === 99) return 'thunderstorm with hail';
  return 'unknown';
}

const value = z.number().finite().nullable();
const code = z.number().int().nullable();
const units = z
  .looseObject({ temperature_2m: z.string().optional(), wind_speed_10m: z.string().optional() })
  .optional();

const currentAnswer = z.looseObject({
  current_units: units,
  current: z.looseObject({
    time: z.string(),
    temperature_2m: value,
    wind_speed_10m: value,
    wind_direction_10m: value.optional(),
    precipitation: value,
    weather_code: code,
  }),
});

const hourlyAnswer = z.looseObject({
  hourly_units: units,
  hourly: z.looseObject({
    time: z.array(z.string()),
    temperature_2m: z.array(value),
    wind_speed_10m: z.array(value),
    wind_direction_10m: z.array(value).optional(),
    precipitation: z.array(value),
    weather_code: z.array(code),
  }),
});

/** Open-Meteo's local-time form with timezone=UTC ("2026-03-01T12:00") → ISO 8601 UTC. */
function utcIso(time: string): string | null {
  const ms = Date.parse(/Z|[+-]\d\d:?\d\d$/.test(time) ? time : `${time}Z`);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}

function checkUnits(found: z.infer<typeof units>, name: string): void {
  const wind = found?.wind_speed_10m;
  const temperature = found?.temperature_2m;
  if (wind !== undefined && wind !== 'm/s') {
    throw new ToolError('upstream_unavailable', `${name} answered wind speed in ${wind}, not the m/s asked for`);
  }
  if (temperature !== undefined && temperature !== '°C') {
    throw new ToolError('upstream_unavailable', `${name} answered temperature in ${temperature}, not °C`);
  }
}

function malformed(error: z.ZodError, name: string): ToolError {
  const issue = error.issues[0];
  return new ToolError(
    'upstream_unavailable',
    `malformed answer from ${name}: ${issue?.path.map(String).join('.') || 'body'}: ${issue?.message}`,
  );
}

interface Api {
  source: 'archive' | 'forecast';
  root: string;
  host: string;
  name: string;
}

function api(source: Api['source'], url: string): Api {
  const root = url.replace(/\/+$/, '');
  const host = new URL(root).host;
  return { source, root, host, name: `the ${source === 'archive' ? 'weather archive' : 'weather'} API at ${host}` };
}

interface Reading {
  time: string;
  temperature_2m: number | null;
  wind_speed_10m: number | null;
  wind_direction_10m: number | null;
  precipitation: number | null;
  weather_code: number | null;
}

const unfilled = (r: Reading) =>
  r.temperature_2m === null && r.wind_speed_10m === null && r.precipitation === null && r.weather_code === null;

export function createWeatherTool(deps: WeatherDeps): PerceptionTool {
  const forecast = api('forecast', deps.weatherUrl);
  const archive = deps.archiveUrl === undefined ? undefined : api('archive', deps.archiveUrl);

  /** One request to `from`; the reading of the current block or of the hour starting at `hour`. */
  async function ask(
    from: Api,
    mode: 'current' | 'hourly',
    hour: string,
    lat: number,
    lng: number,
    signal: AbortSignal | undefined,
  ): Promise<Reading> {
    const query = new URLSearchParams({ latitude: lat.toFixed(6), longitude: lng.toFixed(6) });
    if (mode === 'current') query.set('current', VARIABLES.join(','));
    else {
      query.set('hourly', VARIABLES.join(','));
      if (from.source === 'archive') {
        // The archive API takes whole days; the hour is picked from the day's 24 values.
        query.set('start_date', hour.slice(0, 10));
        query.set('end_date', hour.slice(0, 10));
      } else {
        // Open-Meteo's `start_hour`/`end_hour` are local times of `timezone`; with UTC they are UTC hours.
        query.set('start_hour', hour);
        query.set('end_hour', hour);
      }
    }
    query.set('wind_speed_unit', 'ms');
    query.set('temperature_unit', 'celsius');
    query.set('precipitation_unit', 'mm');
    query.set('timezone', 'UTC');

    const answer = await fetchUpstreamJson({
      name: from.name,
      url: `${from.root}/v1/${from.source}?${query.toString()}`,
      headers: { 'user-agent': deps.userAgent },
      timeoutMs: deps.timeoutMs,
      ...(signal ? { signal } : {}),
    });
    if (!answer.ok) {
      const reason = upstreamReason(answer.json);
      throw new ToolError(
        'upstream_unavailable',
        `${from.name} answered HTTP ${answer.status}${reason ? `: ${reason}` : ''}`,
      );
    }
    if (mode === 'current') {
      const parsed = currentAnswer.safeParse(answer.json);
      if (!parsed.success) throw malformed(parsed.error, from.name);
      checkUnits(parsed.data.current_units, from.name);
      const c = parsed.data.current;
      return { ...c, wind_direction_10m: c.wind_direction_10m ?? null };
    }
    const parsed = hourlyAnswer.safeParse(answer.json);
    if (!parsed.success) throw malformed(parsed.error, from.name);
    checkUnits(parsed.data.hourly_units, from.name);
    const h = parsed.data.hourly;
    const i = h.time.findIndex((t) => utcIso(t) === `${hour}:00.000Z`);
    if (i < 0) throw new ToolError('upstream_unavailable', `${from.name} sent no hourly values for ${hour}Z`);
    return {
      time: h.time[i]!,
      temperature_2m: h.temperature_2m[i] ?? null,
      wind_speed_10m: h.wind_speed_10m[i] ?? null,
      wind_direction_10m: h.wind_direction_10m?.[i] ?? null,
      precipitation: h.precipitation[i] ?? null,
      weather_code: h.weather_code[i] ?? null,
    };
  }

  const tool: PerceptionTool<typeof weatherInputSchema> = {
    name: 'perception_weather',
    title: 'Weather at an H3 cell',
    description:
      'Temperature (°C), wind speed (m/s) and direction (°), precipitation (mm), WMO weather code and a short ' +
      'conditions word at the centroid of an H3 cell, now or at an ISO 8601 timestamp from 1940-01-01 to 16 days ' +
      'ahead: the ERA5 archive answers instants older than 5 days, the forecast API the rest (`source` says which).',
    inputSchema: weatherInputSchema,
    outputSchema: {
      h3_cell: z.string(),
      observed_at: z.string().describe("the upstream's time of the values, ISO 8601 UTC"),
      temperature_c: z.number().nullable(),
      wind_speed_ms: z.number().nullable(),
      precipitation_mm: z.number().nullable(),
      conditions: z.string().describe('the weather code as a short word, e.g. rain'),
    },
    facet: 'perception',
    cellOf: (args) => args.h3_cell,
    coaz: cellToolCoaz(),
    async run(args: WeatherArgs, context): Promise<WeatherResult> {
      const now = context.now;
      const at = args.timestamp === undefined ? now : Date.parse(args.timestamp);
      const earliest = archive ? ARCHIVE_START_MS : now - PAST_LIMIT_MS;
      if (at < earliest || at > now + FUTURE_LIMIT_MS) {
        throw new ToolError(
          'timestamp_out_of_range',
          archive
            ? `timestamp must lie between 1940-01-01 and 16 days after now (${new Date(now).toISOString()})`
            : `timestamp must lie between 92 days before and 16 days after now (${new Date(now).toISOString()}); no archive API is configured`,
        );
      }
      const mode = Math.abs(at - now) <= CURRENT_TOLERANCE_MS ? 'current' : 'hourly';
      const { lat, lng } = cellCentroid(args.h3_cell);
      const hour = new Date(Math.floor(at / HOUR_MS) * HOUR_MS).toISOString().slice(0, 16);
      const forecastReaches = at >= now - PAST_LIMIT_MS;

      const started = deps.clock();
      let from = mode === 'hourly' && archive && at < now - ARCHIVE_AFTER_MS ? archive : forecast;
      let reading = await ask(from, mode, hour, lat, lng, context.signal);
      if (from === archive && unfilled(reading) && forecastReaches) {
        from = forecast;
        reading = await ask(from, mode, hour, lat, lng, context.signal);
      }
      const upstreamMs = Math.max(0, deps.clock() - started);

      const observedAt = utcIso(reading.time);
      if (observedAt === null) {
        throw new ToolError(
          'upstream_unavailable',
          `malformed answer from ${from.name}: time ${JSON.stringify(reading.time)}`,
        );
      }
      return {
        h3_cell: args.h3_cell,
        timestamp: new Date(at).toISOString(),
        observed_at: observedAt,
        mode,
        source: from.source,
        temperature_c: reading.temperature_2m,
        wind_speed_ms: reading.wind_speed_10m,
        wind_direction_deg: reading.wind_direction_10m,
        precipitation_mm: reading.precipitation,
        weather_code: reading.weather_code,
        status: 'ok',
        conditions: weatherStatus(reading.weather_code),
        data_source: from.host,
        latitude: lat,
        longitude: lng,
        lat,
        lon: lng,
        upstream_ms: upstreamMs,
        write_to_spatial_memory: args.write_to_spatial_memory,
        spatial_memory: 'not available',
      };
    },
  };
  // Widened for PerceptionTool[] lists: cellOf's argument type is what keeps the typed tool from widening itself.
  return tool as PerceptionTool;
}
