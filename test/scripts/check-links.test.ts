import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { anchors, checkFile, slug } from '../../scripts/check-links.js';

describe('the Markdown link checker (scripts/check-links.ts)', () => {
  let root: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'check-links-'));
    mkdirSync(join(root, 'docs'));
    writeFileSync(
      join(root, 'docs', 'b.md'),
      '# B\n\n## Real engines (Temporal and MongoDB)\n\n## Worker (`geofabric worker`)\n\n## Notes\n\n## Notes\n',
    );
    writeFileSync(
      join(root, 'README.md'),
      [
        '# Top',
        '[ok](docs/b.md) [ok anchor](docs/b.md#real-engines-temporal-and-mongodb) [self](#top)',
        '[code heading](docs/b.md#worker-geofabric-worker) [repeat](docs/b.md#notes-1) [web](https://example.com/x)',
        '[missing](docs/nope.md) [bad anchor](docs/b.md#no-such) [outside](../shared/SPEC.md)',
        '`[in code](docs/nope.md)`',
        '```',
        '[in a fence](docs/nope.md)',
        '```',
      ].join('\n'),
    );
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("makes GitHub's heading slugs", () => {
    assert.equal(slug('Swarm, inference and chat'), 'swarm-inference-and-chat');
    assert.equal(slug('Real engines (Temporal and MongoDB)'), 'real-engines-temporal-and-mongodb');
    assert.deepEqual([...anchors('# A\n## A\n```\n# not a heading\n```\n')], ['a', 'a-1']);
  });

  it('reports missing files, missing anchors and paths outside the repository, and nothing else', () => {
    const broken = checkFile('README.md', root).map((b) => `${b.line} ${b.target}: ${b.reason}`);
    assert.deepEqual(broken, [
      '4 docs/nope.md: no such file',
      '4 docs/b.md#no-such: no heading #no-such',
      '4 ../shared/SPEC.md: points outside the repository',
    ]);
  });
});
