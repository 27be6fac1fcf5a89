// The gateway alone in its own process with the default abuse bounds of bin/config.ts, for bench/health-under-attack.ts.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startGateway } from '../test/helpers/gateway.js';

const gateway = await startGateway({
  config: {
    httpLimits: {
      ipPerMinute: 6000,
      principalPerMinute: 1200,
      burstSeconds: 10,
      ipBodyBytesPerMinute: Number(process.env.BENCH_BODY_BYTES_PER_MINUTE ?? 32 * 1024 * 1024),
      trustProxy: false,
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
    },
  },
});
process.stdout.write(`${new URL(gateway.url).port}\n`);
process.on('SIGTERM', () => {
  void gateway.close().then(() => process.exit(0));
});

// The event loop's delay in this process, per phase: what the gateway itself adds, apart from the machine's load.
const delay = monitorEventLoopDelay({ resolution: 5 });
delay.enable();
process.on('message', (message) => {
  if (message === 'reset') delay.reset();
  else if (message === 'report') {
    process.send?.({ p50: delay.percentile(50) / 1e6, p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 });
  }
});
