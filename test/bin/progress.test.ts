import assert from 'node:assert/strict';
import { createProgress, type ProgressStream } from '../../bin/progress.js';

/** A stream that keeps what was written; a terminal when `tty` is set. */
function fakeStream(tty = false): ProgressStream & { text: () => string; lines: () => string[] } {
  const chunks: string[] = [];
  return {
    isTTY: tty,
    ...(tty ? { columns: 100 } : {}),
    write(chunk: string) {
      chunks.push(chunk);
      return true;
    },
    text: () => chunks.join(''),
    lines: () => chunks.join('').split('\n').filter(Boolean),
  };
}

/** A clock the test moves. */
function fakeClock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('progress (bin/progress.ts)', () => {
  describe('not on a terminal: plain lines', () => {
    it('writes a line every N items and a final line with the summary', () => {
      const stream = fakeStream();
      const clock = fakeClock();
      const progress = createProgress({
        label: 'store audit',
        unit: 'records',
        total: 50,
        everyItems: 20,
        stream,
        clock: clock.now,
      });
      for (let i = 0; i < 50; i++) progress.tick();
      clock.advance(2_500);
      progress.done('0 problems');
      assert.deepEqual(stream.lines(), [
        'store audit: 20/50 records (40%)',
        'store audit: 40/50 records (80%)',
        'store audit: 50/50 records (100%) in 2.5 s; 0 problems',
      ]);
    });

    it('writes a line when a few seconds passed, however few items', () => {
      const stream = fakeStream();
      const clock = fakeClock();
      const progress = createProgress({ label: 'store sync', unit: 'records', stream, clock: clock.now });
      progress.tick(3);
      assert.deepEqual(stream.lines(), [], 'nothing yet: 3 items within a second');
      clock.advance(5_000);
      progress.tick(2);
      assert.deepEqual(stream.lines(), ['store sync: 5 records'], 'no total: a counter, no percentage');
      clock.advance(1_000);
      progress.tick();
      assert.equal(stream.lines().length, 1, 'the interval starts again at the last line');
    });

    it('defaults to a tenth of a known total (at least 100 items) between lines', () => {
      const stream = fakeStream();
      const progress = createProgress({ label: 'proof verify', unit: 'records', total: 5000, stream });
      progress.tick(499);
      assert.equal(stream.lines().length, 0);
      progress.tick();
      assert.deepEqual(stream.lines(), ['proof verify: 500/5000 records (10%)']);
    });

    it('learns the total later, raises a total that was too low, and never passes 100 %', () => {
      const stream = fakeStream();
      const progress = createProgress({ label: 'x', unit: 'items', everyItems: 1, stream });
      progress.tick();
      progress.setTotal(2);
      progress.tick();
      progress.tick();
      assert.deepEqual(stream.lines(), ['x: 1 items', 'x: 2/2 items (100%)', 'x: 3/3 items (100%)']);
    });

    it('writes nothing after done or stop, and done only once', () => {
      const stream = fakeStream();
      const progress = createProgress({ label: 'x', total: 1, stream, clock: () => 0 });
      progress.done();
      progress.done('again');
      progress.tick();
      progress.stop();
      assert.deepEqual(stream.lines(), ['x: 0/1 items (0%) in 0.0 s']);
      const quiet = fakeStream();
      const stopped = createProgress({ label: 'y', total: 1, stream: quiet });
      stopped.stop();
      stopped.done();
      assert.equal(quiet.text(), '', 'a stopped progress (the command failed) leaves no final line');
    });
  });

  describe('on a terminal: a bar', () => {
    it('draws a bar with percentage, count and ETA, then replaces it with the final line', async () => {
      const stream = fakeStream(true);
      const progress = createProgress({ label: 'store audit', unit: 'records', total: 40, stream });
      // Drawn at once, at the start of the line (ESC [1G), then redrawn in place.
      assert.ok(stream.text().includes('\u001b[1Gstore audit ░'), JSON.stringify(stream.text()));
      assert.match(stream.text(), /store audit ░{40} 0% \| 0\/40 records \| ETA/);
      // Redraws are throttled (10 per second): a tick after a pause draws at once.
      await new Promise((resolve) => setTimeout(resolve, 250));
      progress.tick(10);
      assert.match(stream.text(), /store audit █{10}░{30} 25% \| 10\/40 records \| ETA \d+s/);
      progress.tick(30);
      progress.done('0 problems');
      const lines = stream.text().split('\n');
      assert.match(lines.at(-2) ?? '', /store audit: 40\/40 records \(100%\) in \d+\.\d s; 0 problems$/);
      assert.equal(lines.at(-1), '', 'ends with a newline');
    });

    it('shows a counter while the total is unknown, and the bar once it is set', () => {
      const stream = fakeStream(true);
      const progress = createProgress({ label: 'store sync', unit: 'records', stream });
      progress.tick(7);
      assert.match(stream.text(), /store sync 0 records \| \d+s/);
      progress.setTotal(10);
      progress.stop();
      assert.match(stream.text(), /store sync █{28}░{12} 70% \| 7\/10 records/);
      assert.doesNotMatch(stream.text(), /store sync: /, 'stop writes no final line');
    });
  });
});
