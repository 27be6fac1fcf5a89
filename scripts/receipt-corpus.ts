/**
 * Prints the receipt verifiers' agreement corpus (test/helpers/receipt-agreement.ts) as JSON, each case with the
 * server core's verdict, for an implementation outside this repository's JavaScript to check itself against: the
 * Python client's tests run it (clients/python/tests/test_agreement.py). Also H3 cell and timestamp samples with
 * core's reading of each, and reading sets with core's fused numbers. Built from the conformance receipts on disk each time, so it never goes stale.
 *
 *   npx tsx scripts/receipt-corpus.ts [--seed N] [--count N]
 */
import {
  AGREEMENT_MUTATIONS,
  AGREEMENT_SEED,
  agreementCorpus,
  cellSamples,
  coreVerdict,
  fusionSamples,
  timestampSamples,
} from '../test/helpers/receipt-agreement.js';

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i < 0 ? fallback : Number(process.argv[i + 1]);
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`--${name} takes a whole number`);
  return value;
}

const seed = option('seed', AGREEMENT_SEED);
const count = option('count', AGREEMENT_MUTATIONS);
const cases = agreementCorpus(seed, count).map((c) => ({ ...c, expected: coreVerdict(c) }));
process.stdout.write(
  JSON.stringify({
    seed,
    cases,
    cells: cellSamples(seed),
    timestamps: timestampSamples(seed),
    fusions: fusionSamples(seed),
  }) + '\n',
);
