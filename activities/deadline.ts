/**
 * A deadline for one upstream call, and the caller's own cancellation beside it, as one AbortSignal.
 *
 * Not `AbortSignal.any([AbortSignal.timeout(ms), callerSignal])`: Node's timeout signal is held by its timer only
 * weakly, and one whose only observer is an `any` composite can be garbage-collected before it fires (Node 20 to
 * 24, https://github.com/nodejs/node/pull/57867). The deadline then never comes, and a stalled upstream holds the
 * request for good: a suite's band-asset stall test, given 1.5 s, hung past 30 s once the process had collected
 * enough garbage. Here the timer holds the controller, so the deadline fires unless `clear` stopped it.
 */
export class Deadline {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private timedOut = false;

  constructor(
    ms: number,
    private readonly caller?: AbortSignal,
  ) {
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.stop(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    }, ms);
    // As AbortSignal.timeout's: a pending deadline alone does not keep the process running.
    this.timer.unref();
    if (caller?.aborted) this.stop(caller.reason);
    else caller?.addEventListener('abort', this, { once: true });
  }

  /** Aborts at the deadline (a `TimeoutError` DOMException, as AbortSignal.timeout's) or with the caller's reason. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The deadline passed (not the caller's cancellation). */
  get expired(): boolean {
    return this.timedOut;
  }

  /** Stops the timer and lets go of the caller's signal: the call is over. */
  clear(): void {
    clearTimeout(this.timer);
    this.caller?.removeEventListener('abort', this);
  }

  /** The caller's signal aborted (an EventListener object, so no closure is made per call). */
  handleEvent(): void {
    this.stop(this.caller?.reason);
  }

  private stop(reason: unknown): void {
    this.clear();
    this.controller.abort(reason);
  }
}
