import { Context } from '@temporalio/activity';

export interface EngineProbeEcho {
  message: string;
  /** Which attempt answered: retries show up here. */
  attempt: number;
  echoedAt: string;
}

/** The smallest real activity: proves a worker runs activities and their results reach the workflow. */
export function createEngineProbeActivities(deps: { now: () => Date }) {
  return {
    async echo(message: string): Promise<EngineProbeEcho> {
      return { message, attempt: Context.current().info.attempt, echoedAt: deps.now().toISOString() };
    },
  };
}

export type EngineProbeActivities = ReturnType<typeof createEngineProbeActivities>;
