// `npx tsx bench/strict-json.ts`: parseStrictJson (core/strict-json.ts) against JSON.parse on ~1 MB bodies
// the gateway may receive: a compute request with many steps, and a 10,000-vertex polygon. Prints, asserts nothing.
import { parseStrictJson } from '../core/strict-json.js';

/** Median CPU time (user + system) of `run`: steadier than wall time on a shared machine. */
function median(run: () => void, times: number): number {
  const samples: number[] = [];
  for (let k = 0; k < times; k++) {
    const before = process.cpuUsage();
    run();
    const used = process.cpuUsage(before);
    samples.push((used.user + used.system) / 1000);
  }
  return samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)] as number;
}

const steps = Array.from({ length: 4000 }, (_, i) => ({
  type: 'tile',
  center_cell: '861e8050fffffff',
  context: { h3_cell: '861e8050fffffff', note: `step ${i} \u00e9\\n "quoted"`, zoom: 12, flag: i % 2 === 0 },
  tools: ['perception_fetch_tile'],
}));
const polygon = {
  type: 'Polygon',
  coordinates: [
    Array.from({ length: 30_000 }, (_, i) => [
      12.5 + Math.cos(i / 4775) * 0.123456789,
      41.9 + Math.sin(i / 4775) * 0.0987654321,
    ]),
  ],
};
export function benchStrictJson(): { name: string; bytes: number; nativeMs: number; strictMs: number }[] {
  return [
    ['compute request, 4,000 steps', { steps }],
    ['polygon, 30,000 positions (full double precision)', polygon],
    [
      'polygon, 30,000 positions (7 decimals, as GeoJSON usually has)',
      JSON.parse(JSON.stringify(polygon), (_k, v: unknown) => (typeof v === 'number' ? Number(v.toFixed(7)) : v)),
    ],
  ].map(([name, value]) => {
    const text = JSON.stringify(value);
    for (let k = 0; k < 20; k++) {
      // warm up
      JSON.parse(text);
      parseStrictJson(text);
    }
    return {
      name: name as string,
      bytes: text.length,
      nativeMs: median(() => JSON.parse(text), 51),
      strictMs: median(() => parseStrictJson(text), 51),
    };
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const r of benchStrictJson()) {
    console.log(
      `${r.name} (${(r.bytes / 1024).toFixed(0)} KiB), median CPU time: JSON.parse ${r.nativeMs.toFixed(2)} ms, ` +
        `parseStrictJson ${r.strictMs.toFixed(2)} ms (×${(r.strictMs / r.nativeMs).toFixed(2)})`,
    );
  }
}
