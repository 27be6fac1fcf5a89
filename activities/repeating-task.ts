/**
 * Background work on a timer (the epoch sealer, settlement and anchor sweeps): `work` runs now and then
 * `intervalMs` after each run ends, so runs never overlap. The timer is unref'd (it never keeps a process
 * alive); `stop()` cancels it and waits for a run in flight. A rejected run goes to `onError` (which must not
 * throw either: a failure there is swallowed, the task keeps its schedule).
 */
export interface RepeatingTask {
  stop(): Promise<void>;
}

export function startRepeatingTask(
  intervalMs: number,
  work: () => Promise<void>,
  onError: (error: unknown) => void,
): RepeatingTask {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const runOnce = async () => {
    try {
      await work();
    } catch (error) {
      try {
        onError(error);
      } catch {
        // A failing error handler must not stop the schedule.
      }
    }
  };
  const schedule = (delayMs: number) => {
    timer = setTimeout(() => {
      running = runOnce().finally(() => {
        running = undefined;
        if (!stopped) schedule(intervalMs);
      });
    }, delayMs);
    timer.unref();
  };
  schedule(0);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
