/**
 * The idn_* tools of the perception server (docs/protocol.md §4.2): the agent's compliance report, trust score, chain
 * verification and epoch roll, computed live by the report service. They exercise the `compliance` facet at
 * the server's default cell and pass the same pre-flight and leave the same breadcrumbs as every other tool.
 * `agent_pk` is optional and means the server's own agent when omitted.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { ServiceError } from '../../../core/errors.js';
import { REPORT_UI_MIME, REPORT_UI_URI, renderReportUi } from '../report-ui.js';
import type { AnyPerceptionTool } from '../audit.js';
import { DEFAULT_REPORT_FROM, type ReportService } from '../reports.js';
import { ToolError, type PerceptionTool } from '../tool-def.js';

export const COMPLIANCE_FACET = 'compliance';

const agentPkArg = {
  agent_pk: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'must be an Ed25519 public key (64 lowercase hex)')
    .optional()
    .describe("the agent's Ed25519 public key, 64 lowercase hex (default: this server's agent)")
    .meta({ examples: ['3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29'] }),
};
const noArgs = {};

/** Store-level failures (unknown agent …) reach the caller as tool errors with their code. */
async function asToolError<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ServiceError) throw new ToolError(error.code, error.detail ?? error.code);
    throw error;
  }
}

export function createComplianceTools(deps: { reports: ReportService }): AnyPerceptionTool[] {
  const { reports } = deps;
  const report: PerceptionTool<typeof agentPkArg> = {
    name: 'idn_get_compliance_report',
    title: 'Compliance report of an agent',
    description:
      'Compliance report (version 1) of an agent since 2020-01-01: operations by tool, jurisdiction cells, ' +
      'chain verification, epochs, delegation certificate, human approvals, trust tier and score, violations. ' +
      'MCP-App hosts render it as a dashboard; others read the JSON text.',
    inputSchema: agentPkArg,
    facet: COMPLIANCE_FACET,
    meta: { ui: { resourceUri: REPORT_UI_URI } },
    run: (args, context) =>
      asToolError(() =>
        reports.report(args.agent_pk ?? context.agentPk, {
          from: DEFAULT_REPORT_FROM,
          to: new Date(context.now).toISOString(),
        }),
      ),
  };
  const trust: PerceptionTool<typeof agentPkArg> = {
    name: 'idn_get_trust_score',
    title: 'Trust score of an agent',
    description:
      "An agent's trust score (0-100: operations 40, territory 30, longevity 20, chain validity 10), its parts, " +
      'its current tier and the tier thresholds (provisioned 0, observed 25, trusted 60, certified 85, sovereign 99).',
    inputSchema: agentPkArg,
    facet: COMPLIANCE_FACET,
    run: (args, context) => asToolError(() => reports.trust(args.agent_pk ?? context.agentPk)),
  };
  const verify: PerceptionTool<typeof noArgs> = {
    name: 'idn_verify_chain',
    title: "Verify this agent's audit chain",
    description:
      "Block-by-block verification of the whole breadcrumb chain of this server's agent: signature, block hash, " +
      'link to the previous block, no index gap, timestamps never decreasing. Issues name their block.',
    inputSchema: noArgs,
    facet: COMPLIANCE_FACET,
    run: (_args, context) => asToolError(() => reports.verifyChain(context.agentPk)),
  };
  const roll: PerceptionTool<typeof noArgs> = {
    name: 'idn_roll_epoch',
    title: 'Roll unrolled breadcrumbs into an epoch',
    description:
      "Seals every breadcrumb since this agent's last epoch into a new signed epoch (Merkle root over the block " +
      "hashes, epoch hash, tier at close). Needs a bearer token of an agent of this server's own principal. " +
      'Fails when there is nothing to roll.',
    inputSchema: noArgs,
    facet: COMPLIANCE_FACET,
    principalOnly: true,
    async run() {
      const rolled = await reports.rollEpoch();
      if (!rolled.ok) throw new ToolError('epoch_empty', rolled.message);
      return rolled.value;
    },
  };
  return [report, trust, verify, roll];
}

/** Serves the dashboard of idn_get_compliance_report as the `ui://` resource its `_meta.ui.resourceUri` names. */
export function registerReportUi(server: McpServer): void {
  server.registerResource(
    'compliance-report-dashboard',
    REPORT_UI_URI,
    {
      title: 'Compliance report dashboard',
      description:
        'MCP App view of idn_get_compliance_report: score, tier, chain status, operations, cells, violations',
      mimeType: REPORT_UI_MIME,
    },
    (uri) => ({ contents: [{ uri: uri.href, mimeType: REPORT_UI_MIME, text: renderReportUi() }] }),
  );
}
